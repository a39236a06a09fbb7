package compaction

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/merge"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// OutputResult describes one written output chunk.
type OutputResult struct {
	Key       string
	SizeBytes int64
	Stats     chunkstats.Stats
	// Read is the digest of the input rows merged into the chunk, as decoded from the inputs;
	// Written the digest of the rows handed to the Parquet encoder.
	Read, Written verify.Digest
	// Taken is which stored rows of which input chunks the merge emitted into the chunk.
	Taken verify.Taken
}

// Inputs resolves plan inputs to object keys for WriteOutput.
type Inputs struct {
	Bucket *blob.Bucket
	Plan   *plan.Plan
	Mem    memory.Allocator
}

func (in Inputs) open(ctx context.Context, i int) (merge.Source, error) {
	pi := in.Plan.Inputs[i]
	return OpenSource(ctx, in.Bucket, pi.ObjectKey, pi.Sorted, in.Plan.SchemaID, in.Plan.BatchRows, in.Mem)
}

// WriteOutput writes output chunk o of the plan to key in the bucket: the merge of its inputs
// restricted to o's key range, in record batches of exactly plan.BatchRows rows (the last one
// shorter) and row groups of plan.RowGroupRows rows, so that the same inputs always give the
// same bytes. Reading and merging run in one goroutine, encoding in another. The object is
// overwritten if it exists; on error the upload is aborted. After closing, the chunk's footer is
// read back and its Arrow schema must equal schema verbatim.
func WriteOutput(ctx context.Context, in Inputs, o plan.Output, key string, schema *arrow.Schema, progress func(rows int64)) (OutputResult, error) {
	res := OutputResult{Key: key, Taken: verify.Taken{}}
	mem := in.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	stats, err := chunkstats.NewAccumulator(schema)
	if err != nil {
		return res, err
	}
	uctx, abort := context.WithCancel(ctx)
	defer abort()
	bw, err := in.Bucket.NewWriter(uctx, key, &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		return res, fmt.Errorf("create %s: %w", key, err)
	}
	cw := &countingWriter{w: bw}
	wschema := writerSchema(schema)
	pw, err := parquetio.NewWriter(cw, wschema, parquetio.WriterOptions{RowGroupRows: in.Plan.RowGroupRows, Mem: mem})
	if err != nil {
		abort()
		_ = bw.Close()
		return res, err
	}

	batches := make(chan arrow.RecordBatch, 2)
	g, gctx := errgroup.WithContext(uctx)
	panics.Go(g, "encoder of "+key, func() error {
		var h verify.Hasher
		tsField := schema.FieldIndices(parquetio.TimestampColumn)[0]
		for rec := range batches {
			if err := faults.Hit(gctx, faults.WriteChunksEncode); err != nil {
				rec.Release()
				return err
			}
			rec = corruptBatch(rec, tsField, mem)
			if wschema != schema {
				rewrapped := array.NewRecordBatch(wschema, rec.Columns(), rec.NumRows())
				rec.Release()
				rec = rewrapped
			}
			stats.Add(rec)
			h.AddRows(&res.Written, rec, 0, rec.NumRows())
			err := pw.Write(rec)
			rec.Release()
			if err != nil {
				return err
			}
			if progress != nil {
				progress(pw.Rows())
			}
		}
		return stats.Err()
	})
	panics.Go(g, "reader and merger of "+key, func() error {
		defer close(batches)
		if err := faults.Hit(gctx, faults.WriteChunksMerge); err != nil {
			return err
		}
		col := newCollector(schema, in.Plan.BatchRows, in.Plan.ArrowBytesPerRow, mem, func(rec arrow.RecordBatch) error {
			select {
			case batches <- rec:
				return nil
			case <-gctx.Done():
				rec.Release()
				return gctx.Err()
			}
		})
		defer col.release()
		r := merge.Range{Lo: o.Lo, Hi: o.Hi, Inputs: o.Inputs}
		for _, i := range o.Inputs {
			r.First = append(r.First, in.Plan.Inputs[i].First)
			r.ChunkIDs = append(r.ChunkIDs, in.Plan.Inputs[i].ChunkID)
		}
		if err := merge.Merge(gctx, r, in.open, col.add, &res.Read, res.Taken); err != nil {
			return err
		}
		return col.flush()
	})
	if err := g.Wait(); err != nil {
		// The encoder stopped early (or panicked): release what the reader left in the
		// channel (closed by then: the reader stops at its next send once gctx is cancelled).
		for rest := range batches {
			rest.Release()
		}
		abort()
		pw.Discard()
		_ = bw.Close()
		return res, err
	}
	if err := pw.Close(); err != nil {
		abort()
		_ = bw.Close()
		return res, err
	}
	if err := bw.Close(); err != nil {
		return res, fmt.Errorf("upload %s: %w", key, err)
	}
	res.SizeBytes = cw.n
	res.Stats = stats.Result()
	if err := checkWrittenSchema(ctx, in.Bucket, key, schema, mem); err != nil {
		return res, err
	}
	return res, nil
}

// checkWrittenSchema reads the footer of the written chunk back and compares its Arrow schema,
// with all metadata, to the topic's.
func checkWrittenSchema(ctx context.Context, b *blob.Bucket, key string, want *arrow.Schema, mem memory.Allocator) error {
	obj, err := store.OpenFooter(ctx, b, key)
	if err != nil {
		return err
	}
	c, err := parquetio.Open(obj, mem)
	if err != nil {
		return &verify.MismatchError{What: fmt.Sprintf("written chunk %s cannot be read back: %v", key, err)}
	}
	defer c.Close()
	if d := parquetio.FirstDifference(want, c.Schema); d != "" {
		return &verify.MismatchError{What: fmt.Sprintf("written chunk %s: %s", key, d)}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
