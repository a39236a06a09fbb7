package compaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob/memblob"

	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// skewSchema is a topic of small status rows and rare large blobs: timestamp, source chunk and
// row, and a binary payload.
func skewSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "src_chunk", Type: arrow.PrimitiveTypes.Int64},
		{Name: "src_row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
	}, nil)
}

// skewChunk encodes rows at ts with payloads of size[i] zero bytes, one row group, in batches
// of at most 64 MiB of payload (a single binary array must stay under 2 GiB).
func skewChunk(t *testing.T, chunk int64, ts []int64, size func(i int) int) []byte {
	t.Helper()
	return skewChunkIn(t, chunk, ts, size, 64<<20)
}

// skewChunkIn is skewChunk with batches of at most batchPayload bytes of payload (or one row):
// arrow-go's writer puts a batch's values in one data page when they exceed the page size, so a
// batch of several huge rows is one page holding them all.
func skewChunkIn(t *testing.T, chunk int64, ts []int64, size func(i int) int, batchPayload int) []byte {
	t.Helper()
	schema := skewSchema()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<20),
		parquet.WithDictionaryDefault(false)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	var zeros []byte
	for from := 0; from < len(ts); {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		var held int
		to := from
		for ; to < len(ts) && (to == from || held+size(to) <= batchPayload); to++ {
			n := size(to)
			held += n
			if len(zeros) < n {
				zeros = make([]byte, n)
			}
			b.Field(0).(*array.Int64Builder).Append(ts[to])
			b.Field(1).(*array.Int64Builder).Append(chunk)
			b.Field(2).(*array.Int64Builder).Append(int64(to))
			b.Field(3).(*array.BinaryBuilder).Append(zeros[:n])
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := w.WriteBuffered(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		from = to
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSkewedRowsWithinPool merges a topic of skewed rows (a chunk of small rows and a chunk of a
// few huge zero-filled rows, timestamps interleaved) with a memory pool: every output holds the
// rows in key order with matching digests, no batch (and so no binary array) holds more than one
// huge row, and the pool's allocator never holds more than RowMemory of the largest row.
// STOREOPT_SKEW_ROW_MIB sets the huge rows' size (default 24 MiB; the skewed topic of the e2e tests
// has 200 MiB rows). The second case holds small and huge rows in one row group, the huge ones next
// to each other, so that the footer's average row is small: it is read in batches of a 64th of the
// average's rows (parquetio skewFactor), or a row at a time once the row group is larger than 1 GiB
// (STOREOPT_SKEW_ROW_MIB=96), never as one batch of the huge rows.
func TestSkewedRowsWithinPool(t *testing.T) {
	rowMiB := 24
	if v := os.Getenv("STOREOPT_SKEW_ROW_MIB"); v != "" {
		rowMiB, _ = strconv.Atoi(v)
	}
	t.Run("chunk of huge rows", func(t *testing.T) { testSkewedRows(t, rowMiB<<20, false) })
	t.Run("huge rows among small ones in one row group", func(t *testing.T) { testSkewedRows(t, rowMiB<<20, true) })
}

func testSkewedRows(t *testing.T, rowBytes int, mixed bool) {
	rowMiB := rowBytes >> 20
	const small, huge = 20000, 12
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	smallTs := make([]int64, small)
	for i := range smallTs {
		smallTs[i] = int64(i) * 10
	}
	hugeTs := make([]int64, huge)
	for i := range hugeTs {
		hugeTs[i] = int64(i)*(small*10/huge) + 5 // between small rows
	}
	// payloadSize[chunk][row] is the payload of a stored row.
	var payloadSize [][]int
	var datas [][]byte
	if mixed {
		// One chunk: the small rows with the huge ones in a block in the middle.
		var ts []int64
		var sizes []int
		for i, v := range smallTs {
			if i == small/2 {
				for j := range huge {
					ts = append(ts, v-5+int64(j)*0)
					sizes = append(sizes, rowBytes)
				}
			}
			ts = append(ts, v)
			sizes = append(sizes, 100)
		}
		payloadSize = [][]int{sizes}
		datas = [][]byte{skewChunk(t, 0, ts, func(i int) int { return sizes[i] })}
	} else {
		payloadSize = [][]int{make([]int, small), make([]int, huge)}
		for i := range payloadSize[0] {
			payloadSize[0][i] = 100
		}
		for i := range payloadSize[1] {
			payloadSize[1][i] = rowBytes
		}
		datas = [][]byte{
			skewChunk(t, 0, smallTs, func(int) int { return 100 }),
			skewChunk(t, 1, hugeTs, func(int) int { return rowBytes }),
		}
	}
	pool := mempool.New(RowMemory(int64(rowBytes)) + 64<<20)
	var refs []ChunkRef
	var scans []Scan
	for j, data := range datas {
		key, s := storeChunk(t, b, j, data)
		var arrow int64
		for _, n := range payloadSize[j] {
			arrow += int64(n) + 28
		}
		scans = append(scans, s)
		refs = append(refs, ChunkRef{ID: int64(j), Key: key, SizeBytes: int64(len(data)), ArrowBytes: arrow, Ordinal: j})
	}
	if !mixed {
		// The footer's average may hide large rows (a row group of more than 16 batches not
		// written by storeopt), so the bound is the largest page, which skewChunk's batches of
		// 64 MiB fill with as many huge rows as fit.
		perPage := max((64<<20)/rowBytes, 1)
		if got := scans[1].Runs[0].MaxRowBytes; got < int64(rowBytes) || got > int64(perPage*rowBytes)+4096 {
			t.Fatalf("huge chunk's largest row: %d bytes, want %d to %d (its largest page)", got, rowBytes, perPage*rowBytes)
		}
	}
	inputs, samples := MergeInputs(refs, scans)
	p, err := plan.Compute(inputs, samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: 1 << 20, MemoryBudgetBytes: pool.Limit()})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = scans[0].Footer.ID
	layout := chunkLayout(t, b, inputs[0].ObjectKey)
	var rows int64
	lastTs := int64(-1)
	for _, o := range p.Outputs {
		need := OutputMemory(p, o)
		// (In one row group the footer tells only the average row: the estimate knows the
		// largest page of its byte-array column, parquetio.Chunk.HiddenRowBytes.)
		if need < RowMemory(int64(rowBytes)) {
			t.Fatalf("output %d: estimate %d bytes, less than RowMemory %d", o.Ordinal, need, RowMemory(int64(rowBytes)))
		}
		pool.Allocator().ResetHighWater()
		key := store.ChunkKey(prefix+"X", o.Ordinal)
		res, err := WriteOutput(ctx, Inputs{Bucket: b, Plan: p, Mem: pool.Allocator()}, o, key, layout, nil)
		if err != nil {
			t.Fatalf("output %d: %v", o.Ordinal, err)
		}
		if hw := pool.Allocator().HighWater(); hw > RowMemory(int64(rowBytes)) {
			t.Errorf("output %d: the pool's allocator held %d MiB, more than RowMemory of a %d MiB row (%d MiB)",
				o.Ordinal, hw>>20, rowMiB, RowMemory(int64(rowBytes))>>20)
		} else {
			t.Logf("output %d: %d rows, pool high water %d MiB (RowMemory %d MiB, estimate %d MiB)", o.Ordinal,
				res.Stats.RowCount, hw>>20, RowMemory(int64(rowBytes))>>20, need>>20)
		}
		if res.Read != res.Written {
			t.Fatalf("output %d: digests read %s written %s", o.Ordinal, res.Read, res.Written)
		}
		// Read back one row at most per huge row: rows in key order, every payload its size.
		obj, err := store.OpenObject(ctx, b, key)
		if err != nil {
			t.Fatal(err)
		}
		oc, err := parquetio.Open(obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		br, err := oc.BatchesWithin(ctx, parquetio.Limits{Rows: 4096, Bytes: 8 << 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var h verify.Hasher
		var d verify.Digest
		for rec := br.Next(); rec != nil; rec = br.Next() {
			h.AddRows(&d, rec, 0, rec.NumRows())
			ts, src := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			payload := rec.Column(3).(*array.Binary)
			for i := range int(rec.NumRows()) {
				if ts.Value(i) < lastTs {
					t.Fatalf("output %d: timestamp %d after %d", o.Ordinal, ts.Value(i), lastTs)
				}
				lastTs = ts.Value(i)
				want := payloadSize[src.Value(i)][rec.Column(2).(*array.Int64).Value(i)]
				if want == rowBytes {
					if rec.NumRows() != 1 {
						t.Fatalf("output %d: a batch of %d rows holds a %d MiB row", o.Ordinal, rec.NumRows(), rowMiB)
					}
				}
				if len(payload.Value(i)) != want {
					t.Fatalf("output %d: payload of %d bytes, want %d", o.Ordinal, len(payload.Value(i)), want)
				}
			}
			rows += rec.NumRows()
		}
		if err := br.Err(); err != nil {
			t.Fatal(err)
		}
		br.Release()
		oc.Close()
		if d != res.Written {
			t.Fatalf("output %d: file digest %s, written %s", o.Ordinal, d, res.Written)
		}
	}
	if rows != small+huge {
		t.Fatalf("outputs hold %d rows, want %d", rows, small+huge)
	}
	t.Log(fmt.Sprintf("%d outputs", len(p.Outputs)))
}

// TestHiddenHugeRowsWithinPool is the bench's skew shape (bench -shape skew) with 48 MiB rows: a
// chunk written as one row group by another writer, 4 rows of 48 MiB zeros first and 1970 small
// rows after them, so that the footer's average row is about 100 KB and hides the huge ones.
// With a 256 MiB pool the topic is either refused before anything is written (CheckRows, an
// error naming the chunk and the row's size) or written with the pool's allocator never above
// the pool. The huge rows are in one data page (as the bench's ingestion writer stores them) or
// in a page each.
func TestHiddenHugeRowsWithinPool(t *testing.T) {
	t.Run("one page of huge rows", func(t *testing.T) { testHiddenHugeRows(t, 1<<30) })
	t.Run("a page per huge row", func(t *testing.T) { testHiddenHugeRows(t, 64<<20) })
}

func testHiddenHugeRows(t *testing.T, batchPayload int) {
	const rowBytes, huge, rows = 48 << 20, 4, 1974
	const poolBytes = 256 << 20
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	ts := make([]int64, rows)
	for i := range ts {
		ts[i] = int64(i) * 10
	}
	size := func(i int) int {
		if i < huge {
			return rowBytes
		}
		return 100
	}
	data := skewChunkIn(t, 0, ts, size, batchPayload)
	key, s := storeChunk(t, b, 0, data)
	var arrowBytes int64
	for i := range rows {
		arrowBytes += int64(size(i)) + 28
	}
	refs := []ChunkRef{{ID: 0, Key: key, SizeBytes: int64(len(data)), ArrowBytes: arrowBytes}}
	inputs, samples := MergeInputs(refs, []Scan{s})
	pool := mempool.New(poolBytes)
	p, err := plan.Compute(inputs, samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: 1 << 20, MemoryBudgetBytes: pool.Limit()})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = s.Footer.ID
	t.Logf("largest row bound %d MiB (footer average %d KiB)", p.Inputs[0].MaxRowBytes>>20, (arrowBytes/rows)>>10)
	if err := CheckRows(p, pool.Limit()); err != nil {
		var ce *ChunkError
		var re *RowTooLargeError
		if !errors.As(err, &ce) || ce.Key != key || !errors.As(err, &re) || re.RowBytes < rowBytes {
			t.Fatalf("refusal %v: want a *ChunkError naming %s wrapping a *RowTooLargeError of at least a %d MiB row", err, key, rowBytes>>20)
		}
		t.Logf("refused: %v", err)
		return
	}
	layout := chunkLayout(t, b, key)
	for _, o := range p.Outputs {
		pool.Allocator().ResetHighWater()
		res, err := WriteOutput(ctx, Inputs{Bucket: b, Plan: p, Mem: pool.Allocator()}, o, store.ChunkKey(prefix+"X", o.Ordinal), layout, nil)
		if err != nil {
			t.Fatalf("output %d: %v", o.Ordinal, err)
		}
		if res.Read != res.Written {
			t.Fatalf("output %d: digests read %s written %s", o.Ordinal, res.Read, res.Written)
		}
		if hw := pool.Allocator().HighWater(); hw > poolBytes {
			t.Fatalf("output %d: neither refused nor within the pool: the allocator held %d MiB of a %d MiB pool", o.Ordinal, hw>>20, poolBytes>>20)
		} else {
			t.Logf("output %d: allocator high water %d MiB", o.Ordinal, hw>>20)
		}
	}
}
