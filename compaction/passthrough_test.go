package compaction

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// indexedProps writes chunks as a recorder that serves window reads does: a page index, row
// groups of 4 rows.
func indexedProps(int) *parquet.WriterProperties {
	return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithPageIndexEnabled(true),
		parquet.WithStats(true))
}

// passThroughPlan plans tp with the largest chunk as the size limit: with chunks of about one
// size, an output holds one chunk (two chunks' rows exceed it, the page indexes not counted).
func passThroughPlan(t *testing.T, tp *topic) *plan.Plan {
	t.Helper()
	var largest int64
	for _, in := range tp.inputs {
		largest = max(largest, in.SizeBytes)
	}
	return tp.plan(t, largest)
}

// withoutPassThrough switches the pass-through path off for the test: for tests of what the
// other paths write of an output that would pass through.
func withoutPassThrough(t *testing.T) {
	PassThroughChunks = false
	t.Cleanup(func() { PassThroughChunks = true })
}

// openTestChunk opens a chunk's bytes.
func openTestChunk(t *testing.T, data []byte) *parquetio.Chunk {
	t.Helper()
	c, err := parquetio.Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Sorted chunks that follow each other in time, each with a page index and row groups within the
// plan's bounds, each alone in an output: every output is its chunk's bytes, copied, with its rows
// (checkOutputs: against the brute-force merge, footer, digests, a retry's bytes); the digests
// are of the objects' bytes, the positions every row of the chunk.
func TestWriteOutputPassThrough(t *testing.T) {
	tp := newTopicEach(t, [][]int64{{10, 20, 30, 40, 50, 60}, {70, 80, 90, 100, 110, 120}, {130, 140, 150, 160, 170, N}}, indexedProps)
	p := passThroughPlan(t, tp)
	if len(p.Outputs) != 3 {
		t.Fatalf("%d outputs, want one per chunk\n%s", len(p.Outputs), p.Picture())
	}
	for _, o := range p.Outputs {
		if !o.PassThrough {
			t.Fatalf("output %d does not pass through\n%s", o.Ordinal, p.Picture())
		}
	}
	checkOutputs(t, tp, p)
	ctx := context.Background()
	for _, o := range p.Outputs {
		key := store.ChunkKey(prefix+"P", o.Ordinal)
		res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, o, key, tp.layout(t), nil)
		if err != nil || !res.PassedThrough || res.Copied || res.NotPassed != "" {
			t.Fatalf("output %d: passed through %v (%s), copied %v, %v", o.Ordinal, res.PassedThrough, res.NotPassed, res.Copied, err)
		}
		in := p.Inputs[o.Inputs[0]]
		src, err := tp.bucket.ReadAll(ctx, in.ObjectKey)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := tp.bucket.ReadAll(ctx, key)
		if err != nil || !bytes.Equal(src, dst) {
			t.Fatalf("output %d is not its chunk's bytes (%d vs %d, %v)", o.Ordinal, len(dst), len(src), err)
		}
		want := verify.Taken{}
		pos := verify.NewChunkPositions(in.ChunkID)
		pos.AddRange(0, in.Rows)
		want.Add(pos)
		if !bytes.Equal(res.Taken.MarshalBinary(), want.MarshalBinary()) || res.Stats.RowCount != in.Rows ||
			res.FooterBytes != in.FooterBytes+8 || len(res.Blocks) != (int(in.Rows)+3)/4 {
			t.Fatalf("output %d: taken %v, rows %d, footer %d bytes, %d blocks", o.Ordinal, res.Taken, res.Stats.RowCount, res.FooterBytes, len(res.Blocks))
		}
	}
	// A recording without a page index whose row groups are each no larger than a page a window
	// read fetches: kept too (a window read fetches such a row group whole).
	small := newTopicEach(t, [][]int64{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}}, func(int) *parquet.WriterProperties {
		return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithStats(true))
	})
	sp := passThroughPlan(t, small)
	for _, o := range sp.Outputs {
		res, err := WriteOutput(ctx, Inputs{Bucket: small.bucket, Plan: sp}, o, store.ChunkKey(prefix+"S", o.Ordinal), small.layout(t), nil)
		if err != nil || !res.PassedThrough {
			t.Fatalf("small row groups without a page index, output %d: passed %v (%s), %v\n%s", o.Ordinal, res.PassedThrough, res.NotPassed, err, sp.Picture())
		}
	}
	// Switched off, the same outputs take the copy path.
	withoutPassThrough(t)
	res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"Q", 0), tp.layout(t), nil)
	if err != nil || res.PassedThrough || !res.Copied {
		t.Fatalf("pass-through off: passed %v, copied %v, %v", res.PassedThrough, res.Copied, err)
	}
}

// A chunk the plan marks PassThrough is written by the copy path, with the reason, when what the
// footer could not tell stands in the way: a page of more rows than a window read fetches, or a
// footer whose per-file pairs differ from the topic's (an output repeats the topic's).
func TestWriteOutputPassThroughRefused(t *testing.T) {
	ctx := context.Background()
	t.Run("a page too large", func(t *testing.T) {
		long := make([]int64, 20000)
		for i := range long {
			long[i] = int64(i)
		}
		tp := newTopicEach(t, [][]int64{long}, func(int) *parquet.WriterProperties {
			return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(len(long))), parquet.WithPageIndexEnabled(true),
				parquet.WithDataPageSize(64<<20), parquet.WithDictionaryDefault(false))
		})
		p := tp.plan(t, 1<<30)
		p.RowGroupRows, p.RowGroupBytes = 1<<20, 1<<30 // the row group within the plan's bounds
		p.Outputs[0].PassThrough = p.PassThrough(p.Outputs[0])
		if !p.Outputs[0].PassThrough {
			t.Fatalf("not marked\n%s", p.Picture())
		}
		// The copy path refuses such pages too: rewritten.
		res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"P", 0), tp.layout(t), nil)
		if err != nil || res.PassedThrough || res.NotPassed == "" {
			t.Fatalf("passed %v, why %q, %v", res.PassedThrough, res.NotPassed, err)
		}
	})
	t.Run("a row group too large without a page index", func(t *testing.T) {
		long := make([]int64, 20000)
		for i := range long {
			long[i] = int64(i)
		}
		tp := newTopicEach(t, [][]int64{long}, func(int) *parquet.WriterProperties {
			return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(len(long))), parquet.WithDictionaryDefault(false))
		})
		p := tp.plan(t, 1<<30)
		p.RowGroupRows, p.RowGroupBytes = 1<<20, 1<<30 // the row group within the plan's bounds
		if p.Outputs[0].PassThrough = p.PassThrough(p.Outputs[0]); p.Outputs[0].PassThrough {
			t.Fatalf("marked, though a window read would fetch its 20000 rows\n%s", p.Picture())
		}
		// Marked by a plan that thought otherwise, the writer refuses it all the same.
		p.Outputs[0].PassThrough = true
		res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"P", 0), tp.layout(t), nil)
		if err != nil || res.PassedThrough || res.NotPassed == "" {
			t.Fatalf("passed %v, why %q, %v", res.PassedThrough, res.NotPassed, err)
		}
	})
	t.Run("per-file footer pairs", func(t *testing.T) {
		tp := newTopicEach(t, [][]int64{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16}}, indexedProps)
		// The second chunk again, a schema-level pair of its Arrow schema (stored as a footer
		// pair too) of another value.
		md := arrow.NewMetadata([]string{"topic", "format"}, []string{"run_7/imu", "imu-v3"})
		schema := arrow.NewSchema(testSchema().Fields(), &md)
		rec := chunkRecord(schema, 1, []int64{9, 10, 11, 12, 13, 14, 15, 16})
		defer rec.Release()
		key := tp.inputs[1].ObjectKey
		if err := tp.bucket.WriteAll(ctx, key, encodeChunkWith(t, rec, indexedProps(1)), nil); err != nil {
			t.Fatal(err)
		}
		attrs, err := tp.bucket.Attributes(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		tp.inputs[1].SizeBytes = attrs.Size
		p := passThroughPlan(t, tp)
		o := p.Outputs[len(p.Outputs)-1]
		if !o.PassThrough || o.Inputs[0] != 1 {
			t.Fatalf("the second chunk does not pass\n%s", p.Picture())
		}
		res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, o, store.ChunkKey(prefix+"P", 1), tp.layout(t), nil)
		if err != nil || res.PassedThrough || !res.Copied || res.NotPassed == "" {
			t.Fatalf("passed %v, copied %v, why %q, %v", res.PassedThrough, res.Copied, res.NotPassed, err)
		}
	})
	t.Run("a page index that cannot be decoded", func(t *testing.T) {
		tp := newTopicEach(t, [][]int64{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16}}, indexedProps)
		p := passThroughPlan(t, tp)
		key := tp.inputs[0].ObjectKey
		data, err := tp.bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		c := openTestChunk(t, data)
		ix := c.PageIndex(0)
		c.Close()
		for i := ix.Offsets.Offset; i < ix.Offsets.End(); i++ {
			data[i] = 0xff
		}
		if err := tp.bucket.WriteAll(ctx, key, data, nil); err != nil {
			t.Fatal(err)
		}
		if !p.Outputs[0].PassThrough {
			t.Fatalf("not marked\n%s", p.Picture())
		}
		res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"P", 0), tp.layout(t), nil)
		if err != nil || res.PassedThrough || res.NotPassed == "" || res.Read != res.Written || res.Stats.RowCount != 8 {
			t.Fatalf("passed %v, why %q, digests %s %s, rows %d, %v", res.PassedThrough, res.NotPassed, res.Read, res.Written, res.Stats.RowCount, err)
		}
	})
	t.Run("the chunk gone", func(t *testing.T) {
		tp := newTopicEach(t, [][]int64{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16}}, indexedProps)
		p, layout := passThroughPlan(t, tp), tp.layout(t)
		if err := tp.bucket.Delete(ctx, tp.inputs[0].ObjectKey); err != nil {
			t.Fatal(err)
		}
		_, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"P", 0), layout, nil)
		var ce *ChunkError
		if !errors.As(err, &ce) || ce.Key != tp.inputs[0].ObjectKey || !IsInputFault(err) {
			t.Fatalf("error %v, want a ChunkError naming %s", err, tp.inputs[0].ObjectKey)
		}
	})
}
