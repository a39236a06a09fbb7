package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/store"
)

// handSchema is the schema of hand-made topics: src_chunk and src_row record where each row was
// ingested, so tests can check the tie order of equal timestamps
// (docs/design.md#deterministic-output).
func handSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"mosaico:ontology", "note"}, []string{"hand", "edge case"})
	f := func(name string, t arrow.DataType, nullable bool, unit string) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable,
			Metadata: arrow.NewMetadata([]string{"unit", "description"}, []string{unit, "the " + name})}
	}
	return arrow.NewSchema([]arrow.Field{
		f("timestamp_ns", arrow.PrimitiveTypes.Int64, true, "ns"),
		f("src_chunk", arrow.PrimitiveTypes.Int32, false, "1"),
		f("src_row", arrow.PrimitiveTypes.Int32, false, "1"),
		f("value", arrow.PrimitiveTypes.Float64, true, "m"),
		f("payload", arrow.BinaryTypes.Binary, true, "bytes"),
	}, &md)
}

// handRow is one row of a hand-made chunk; ts nil = null timestamp.
type handRow struct {
	ts      *int64
	payload int // bytes of binary payload
}

func ts(v int64) *int64 { return &v }

// rowsAt makes rows with the given timestamps (no payload).
func rowsAt(tss ...int64) []handRow {
	out := make([]handRow, len(tss))
	for i, v := range tss {
		out[i] = handRow{ts: ts(v)}
	}
	return out
}

// makeTopic writes a finalized topic of hand-made chunks the way the ingestion service does:
// one Parquet object per chunk under a fresh prefix, a catalog row each, metadata.json.
func makeTopic(t *testing.T, cat *catalog.Catalog, b *blob.Bucket, locator string, chunks [][]handRow) int64 {
	t.Helper()
	id, prefix := makeLiveTopic(t, cat, b, locator)
	addHandChunks(t, cat, b, id, prefix, 0, chunks)
	if err := cat.FinalizeTopic(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// makeLiveTopic creates a hand-made topic without chunks, not finalized; it returns its ID and
// data prefix.
func makeLiveTopic(t *testing.T, cat *catalog.Catalog, b *blob.Bucket, locator string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	seq, _, _ := strings.Cut(locator, "/")
	seqID, err := cat.CreateSequence(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	prefix := store.NewPrefix()
	id, err := cat.CreateTopic(ctx, seqID, locator, prefix, "parquet")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, store.MetadataKey(prefix), []byte(`{"topic":"`+locator+`","hand":true}`+"\n"), nil); err != nil {
		t.Fatal(err)
	}
	return id, prefix
}

// addHandChunks appends chunks to a live hand-made topic, with ordinals (and src_chunk values)
// from, from+1, …
func addHandChunks(t *testing.T, cat *catalog.Catalog, b *blob.Bucket, id int64, prefix string, from int, chunks [][]handRow) {
	t.Helper()
	ctx := context.Background()
	schema := handSchema()
	for i, rows := range chunks {
		ci := from + i
		rec := buildRecord(schema, ci, rows)
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(schema, &buf,
			parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		acc, err := chunkstats.NewAccumulator(schema)
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(rec)
		rec.Release()
		st := acc.Result()
		key := store.ChunkKey(prefix, ci)
		if err := b.WriteAll(ctx, key, buf.Bytes(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.AddChunk(ctx, catalog.Chunk{TopicID: id, Ordinal: ci, ObjectKey: key,
			SizeBytes: int64(buf.Len()), RowCount: st.RowCount, ArrowSizeBytes: st.ArrowSizeBytes,
			MinTimestampNs: st.MinTimestampNs, MaxTimestampNs: st.MaxTimestampNs,
			TimestampNullCount: st.TimestampNullCount, ColumnStats: st.Columns}); err != nil {
			t.Fatal(err)
		}
	}
}

func buildRecord(schema *arrow.Schema, chunk int, rows []handRow) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for i, r := range rows {
		if r.ts == nil {
			bld.Field(0).AppendNull()
		} else {
			bld.Field(0).(*array.Int64Builder).Append(*r.ts)
		}
		bld.Field(1).(*array.Int32Builder).Append(int32(chunk))
		bld.Field(2).(*array.Int32Builder).Append(int32(i))
		bld.Field(3).(*array.Float64Builder).Append(float64(chunk*1000+i) / 7)
		payload := make([]byte, r.payload)
		for j := range payload {
			payload[j] = byte((chunk*31 + i*17 + j*13) ^ (j >> 3))
		}
		bld.Field(4).(*array.BinaryBuilder).Append(payload)
	}
	return bld.NewRecordBatch()
}

// topicContent is what the tests compare before and after an optimization.
type topicContent struct {
	rows      []string          // canonical rendering of every row, sorted (the multiset)
	ordered   []string          // the same, in storage order across chunks
	footer    *parquetio.Footer // Parquet schema elements and key/value pairs, shared by every chunk
	ts        []*int64          // timestamps in storage order across chunks
	srcOrder  [][2]int64
	hasSrc    bool
	perChunk  []int64 // rows per chunk
	chunkSize []int64 // object bytes per chunk
}

// readTopic reads every chunk of keys in order with the plain pqarrow reader (not storeopt's).
func readTopic(t *testing.T, b *blob.Bucket, keys []string) topicContent {
	t.Helper()
	ctx := context.Background()
	var tc topicContent
	for _, key := range keys {
		data, err := b.ReadAll(ctx, key)
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		tc.chunkSize = append(tc.chunkSize, int64(len(data)))
		tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		c, err := parquetio.Open(bytes.NewReader(data), nil)
		if err != nil {
			t.Fatalf("open %s: %v", key, err)
		}
		if tc.footer == nil {
			tc.footer = c.Footer
		} else if d := parquetio.FirstFooterDifference(tc.footer, c.Footer); d != "" {
			t.Fatalf("chunk %s: footer differs: %s", key, d)
		}
		c.Close()
		tr := array.NewTableReader(tbl, 0)
		var n int64
		for tr.Next() {
			rec := tr.RecordBatch()
			tsCol := rec.Column(rec.Schema().FieldIndices("timestamp_ns")[0]).(*array.Int64)
			srcC, srcR := rec.Schema().FieldIndices("src_chunk"), rec.Schema().FieldIndices("src_row")
			tc.hasSrc = len(srcC) == 1
			for i := 0; i < int(rec.NumRows()); i++ {
				var parts []string
				for _, col := range rec.Columns() {
					parts = append(parts, col.ValueStr(i))
				}
				tc.rows = append(tc.rows, strings.Join(parts, "|"))
				tc.ordered = append(tc.ordered, tc.rows[len(tc.rows)-1])
				if tsCol.IsNull(i) {
					tc.ts = append(tc.ts, nil)
				} else {
					tc.ts = append(tc.ts, ts(tsCol.Value(i)))
				}
				if tc.hasSrc {
					tc.srcOrder = append(tc.srcOrder, [2]int64{
						int64(rec.Column(srcC[0]).(*array.Int32).Value(i)),
						int64(rec.Column(srcR[0]).(*array.Int32).Value(i))})
				}
				n++
			}
		}
		tr.Release()
		tbl.Release()
		tc.perChunk = append(tc.perChunk, n)
	}
	sort.Strings(tc.rows)
	return tc
}

// checkOrder fails unless ts is ascending with nulls last and, where src is known, equal
// timestamps keep source chunk order then row order (for rows of sorted source chunks).
func checkOrder(t *testing.T, tc topicContent) {
	t.Helper()
	seenNull := false
	for i, v := range tc.ts {
		if v == nil {
			seenNull = true
			continue
		}
		if seenNull {
			t.Fatalf("row %d: timestamp %d after a null timestamp", i, *v)
		}
		if i > 0 && tc.ts[i-1] != nil && *v < *tc.ts[i-1] {
			t.Fatalf("row %d: timestamp %d before previous %d", i, *v, *tc.ts[i-1])
		}
		if tc.hasSrc && i > 0 && tc.ts[i-1] != nil && *v == *tc.ts[i-1] {
			a, b := tc.srcOrder[i-1], tc.srcOrder[i]
			if a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]) {
				t.Fatalf("row %d: equal timestamps %d out of source order: %v then %v", i, *v, a, b)
			}
		}
	}
	if tc.hasSrc {
		// null timestamps: ties too, by source chunk then row
		for i := 1; i < len(tc.ts); i++ {
			if tc.ts[i] == nil && tc.ts[i-1] == nil {
				a, b := tc.srcOrder[i-1], tc.srcOrder[i]
				if a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]) {
					t.Fatalf("row %d: null timestamps out of source order: %v then %v", i, a, b)
				}
			}
		}
	}
}

func chunkKeys(t *testing.T, cat *catalog.Catalog, topicID int64) []string {
	t.Helper()
	chunks, err := cat.Chunks(context.Background(), topicID)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(chunks))
	for i, c := range chunks {
		keys[i] = c.ObjectKey
	}
	return keys
}

func equalRows(t *testing.T, locator string, before, after topicContent) {
	t.Helper()
	if len(before.rows) != len(after.rows) {
		t.Fatalf("topic %s: %d rows before, %d after", locator, len(before.rows), len(after.rows))
	}
	for i := range before.rows {
		if before.rows[i] != after.rows[i] {
			t.Fatalf("topic %s: row multisets differ at sorted position %d:\nbefore %s\nafter  %s",
				locator, i, before.rows[i], after.rows[i])
		}
	}
	if d := parquetio.FirstFooterDifference(before.footer, after.footer); d != "" {
		t.Fatalf("topic %s: footer changed: %s", locator, d)
	}
	in, inOK := before.footer.Value(parquetio.ArrowSchemaKey)
	out, outOK := after.footer.Value(parquetio.ArrowSchemaKey)
	if inOK != outOK || in != out {
		t.Fatalf("topic %s: stored ARROW:schema not byte-identical", locator)
	}
}

var _ = fmt.Sprint
