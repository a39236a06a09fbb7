package compaction

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
)

// The copy path returns every buffer it takes from the inputs' allocator.
func TestWriteOutputByCopyReturnsItsMemory(t *testing.T) {
	var chunks [][]int64
	for c := range 12 {
		var ts []int64
		for r := range 50 {
			ts = append(ts, int64(c*1000+r))
		}
		chunks = append(chunks, ts)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(20), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("payload", true), parquet.WithStats(true))
	tp := newTopicWith(t, chunks, props)
	p := tp.plan(t, 1<<30)
	p.RowGroupRows = 70
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	res, err := WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p, Mem: mem}, p.Outputs[0], store.ChunkKey(prefix+"M", 0), tp.layout(t), nil)
	if err != nil || !res.Copied {
		t.Fatalf("copied %v, %v", res.Copied, err)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes still allocated after the output was written", n)
	}
}

// copyTopic writes chunks chunks of rows rows each, disjoint in time and each one row group:
// timestamp_ns, src_chunk (dictionary-encoded: re-encoded by the copy path), src_row and a payload
// of payload random bytes a row (PLAIN, zstd: stored about as large as it is). It returns the
// bucket and the plan of their merge within a pool of poolBytes.
func copyTopic(t *testing.T, chunks, rows, payload int, poolBytes int64) (*blob.Bucket, *plan.Plan) {
	t.Helper()
	b := memblob.OpenBucket(nil)
	t.Cleanup(func() { b.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<20),
		parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor("src_chunk", true), parquet.WithStats(true))
	var refs []ChunkRef
	var scans []Scan
	for j := range chunks {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, skewSchema())
		value := make([]byte, payload)
		for r := range rows {
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			rb.Field(0).(*array.Int64Builder).Append(int64(j*rows + r))
			rb.Field(1).(*array.Int64Builder).Append(int64(j))
			rb.Field(2).(*array.Int64Builder).Append(int64(r))
			rb.Field(3).(*array.BinaryBuilder).Append(value)
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		data := encodeChunkWith(t, rec, props)
		rec.Release()
		key, s := storeChunk(t, b, j, data)
		scans = append(scans, s)
		refs = append(refs, ChunkRef{ID: int64(j), Key: key, SizeBytes: int64(len(data)),
			ArrowBytes: int64(rows * (payload + 4 + 3*8)), Ordinal: j})
	}
	inputs, samples := MergeInputs(refs, scans)
	p, err := plan.Compute(inputs, samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: 1 << 30, MemoryBudgetBytes: poolBytes})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = scans[0].Footer.ID
	return b, p
}

// The copy path holds no more of the pool than CopyMemory, which OutputMemory reserves for an
// output it writes: the inputs open at once (read whole), the row group being assembled (with
// large inputs an input row group, larger than the plan's row group bytes) and the read-back.
// With small inputs (a recorder's chunks) that is less than the rewrite's need (RewriteMemory),
// so that more outputs are written at once in a small pool; with large ones it is more, as the
// copy path holds several inputs whole at once where a merge of disjoint inputs opens one.
func TestCopyMemoryCoversTheCopyPath(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		chunks, rows, payload int
		pool                  int64
		lessThanRewrite       bool
	}{
		{"small inputs", 40, 400, 200, 64 << 20, true},
		{"inputs of 12 MB", 8, 6000, 2000, 256 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, p := copyTopic(t, tc.chunks, tc.rows, tc.payload, tc.pool)
			if len(p.Outputs) != 1 {
				t.Fatalf("%d outputs, want 1", len(p.Outputs))
			}
			o := p.Outputs[0]
			need, rewrite := CopyMemory(p, o), RewriteMemory(p, o)
			if got := OutputMemory(p, o); got != need {
				t.Fatalf("OutputMemory %d, want CopyMemory %d for an output the copy path writes", got, need)
			}
			if tc.lessThanRewrite && need >= rewrite {
				t.Errorf("CopyMemory %.1f MiB, not less than RewriteMemory %.1f MiB", mibs(need), mibs(rewrite))
			}
			mp := mempool.New(tc.pool)
			res, err := WriteOutput(context.Background(), Inputs{Bucket: b, Plan: p, Mem: mp.Allocator()}, o,
				store.ChunkKey(prefix+"C", 0), chunkLayout(t, b, p.Inputs[0].ObjectKey), nil)
			if err != nil || !res.Copied {
				t.Fatalf("copied %v (%s): %v", res.Copied, res.NotCopied, err)
			}
			hw := mp.Allocator().HighWater()
			if hw > need {
				t.Fatalf("the copy path held %.1f MiB of the pool, more than CopyMemory's %.1f MiB", mibs(hw), mibs(need))
			}
			_, rowGroupBytes := p.Limits()
			t.Logf("pool high water %.1f MiB, CopyMemory %.1f MiB, RewriteMemory %.1f MiB; input row groups %.1f MiB, the plan's %.1f MiB",
				mibs(hw), mibs(need), mibs(rewrite), mibs(p.Inputs[0].MaxRowGroupBytes), mibs(rowGroupBytes))
		})
	}
}

func mibs(n int64) float64 { return float64(n) / (1 << 20) }

// An output the copy path cannot write after all (an input stored with another codec than the
// first) is rewritten only once its reservation, made for the copy path (OutputMemory is
// CopyMemory), has grown to the rewrite's need: Inputs.Reserve is called with RewriteMemory, and
// its error fails the output. An output that is copied never grows its reservation.
func TestWriteOutputByCopyGrowsItsReservationToRewrite(t *testing.T) {
	ctx := context.Background()
	codecs := []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Snappy}
	for _, tc := range []struct {
		name   string
		codecs int // how many of codecs the chunks alternate
	}{{"copied", 1}, {"an input with another codec", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopicEach(t, [][]int64{{1, 2, 3}, {4, 5, 6, 7}, {8, 9}}, func(j int) *parquet.WriterProperties {
				return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3), parquet.WithDictionaryDefault(false),
					parquet.WithStats(true), parquet.WithCompression(codecs[j%tc.codecs]))
			})
			p := tp.plan(t, 1<<30)
			o := p.Outputs[0]
			if OutputMemory(p, o) != CopyMemory(p, o) {
				t.Fatalf("OutputMemory %d, want CopyMemory %d", OutputMemory(p, o), CopyMemory(p, o))
			}
			pool := mempool.New(1 << 30)
			r, err := pool.Reserve(ctx, OutputMemory(p, o))
			if err != nil {
				t.Fatal(err)
			}
			var asked []int64
			in := Inputs{Bucket: tp.bucket, Plan: p, Reserve: func(ctx context.Context, n int64) error {
				asked = append(asked, n)
				r.Release()
				r, err = pool.Reserve(ctx, n)
				return err
			}}
			res, err := WriteOutput(ctx, in, o, store.ChunkKey(prefix+"C", 0), tp.layout(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.codecs == 1 {
				if !res.Copied || len(asked) > 0 || pool.Reserved() != CopyMemory(p, o) {
					t.Fatalf("copied %v, reservation grown to %v, reserved %d; want copied within CopyMemory %d",
						res.Copied, asked, pool.Reserved(), CopyMemory(p, o))
				}
				return
			}
			if res.Copied || res.NotCopied == "" || len(asked) != 1 || asked[0] != RewriteMemory(p, o) || pool.Reserved() != RewriteMemory(p, o) {
				t.Fatalf("copied %v (%q), reservation grown to %v, reserved %d; want rewritten within RewriteMemory %d",
					res.Copied, res.NotCopied, asked, pool.Reserved(), RewriteMemory(p, o))
			}
			refused := errors.New("no room")
			in.Reserve = func(context.Context, int64) error { return refused }
			if _, err := WriteOutput(ctx, in, o, store.ChunkKey(prefix+"C", 1), tp.layout(t), nil); !errors.Is(err, refused) {
				t.Fatalf("WriteOutput with a reservation that cannot grow: %v, want %v", err, refused)
			}
		})
	}
}
