package compaction

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
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
	// Footer identifies the footer read back from the written chunk (parquetio.Footer.Digest).
	Footer []byte
}

// Inputs resolves plan inputs to object keys for WriteOutput.
type Inputs struct {
	Bucket *blob.Bucket
	Plan   *plan.Plan
	Mem    memory.Allocator
	footer *parquetio.Footer // the topic's, set by WriteOutput from its layout
}

func (in Inputs) open(ctx context.Context, i int) (merge.Source, error) {
	pi := in.Plan.Inputs[i]
	return OpenSource(ctx, in.Bucket, pi.ObjectKey, pi.Sorted, in.footer, in.Plan.BatchRows, in.Mem)
}

// WriteOutput writes output chunk o of the plan to key in the bucket: the merge of its inputs
// restricted to o's key range, in record batches of exactly plan.BatchRows rows (the last one
// shorter) and row groups of plan.RowGroupRows rows, so that the same inputs always give the
// same bytes. Reading and merging run in one goroutine, encoding in another. The object is
// overwritten if it exists; on error the upload is aborted. The chunk is written in layout (the
// Parquet schema and footer pairs of the topic's chunks, parquetio.Layout); after closing, its
// footer is read back and must equal the layout's (verify.MismatchError otherwise), and its
// digest is returned for the commit's verification. An output without rows is an error.
func WriteOutput(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64)) (OutputResult, error) {
	res := OutputResult{Key: key, Taken: verify.Taken{}}
	schema := layout.Schema
	in.footer = layout.Footer
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
	cw := &countingWriter{ctx: uctx, w: bw}
	pw, err := parquetio.NewWriter(cw, writerLayout(layout), parquetio.WriterOptions{RowGroupRows: in.Plan.RowGroupRows, Mem: mem})
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
		if errors.Is(err, parquetio.ErrNoRows) {
			return res, &verify.MismatchError{What: fmt.Sprintf("output chunk %s would have no rows: the plan does not match its inputs", key)}
		}
		return res, err
	}
	if err := bw.Close(); err != nil {
		return res, fmt.Errorf("upload %s: %w", key, err)
	}
	res.SizeBytes = cw.n
	res.Stats = stats.Result()
	footer, err := checkWrittenFooter(ctx, in.Bucket, key, layout.Footer, res.Stats.RowCount, mem)
	if err != nil {
		return res, err
	}
	res.Footer = footer.Digest()
	return res, nil
}

// checkWrittenFooter reads the footer of the written chunk back and checks it against the
// topic's (Parquet schema elements and key/value pairs, verbatim), and that the chunk holds rows
// rows in row groups that are none of them empty. It returns the footer read back.
func checkWrittenFooter(ctx context.Context, b *blob.Bucket, key string, want *parquetio.Footer, rows int64, mem memory.Allocator) (*parquetio.Footer, error) {
	obj, err := store.OpenFooter(ctx, b, key)
	if err != nil {
		return nil, err
	}
	c, err := parquetio.Open(obj, mem)
	if err != nil {
		return nil, &verify.MismatchError{What: fmt.Sprintf("written chunk %s cannot be read back: %v", key, err)}
	}
	defer c.Close()
	if d := parquetio.FirstFooterDifference(want, c.Footer); d != "" {
		return nil, &verify.MismatchError{What: fmt.Sprintf("written chunk %s: footer differs from the inputs': %s", key, d)}
	}
	if c.NumRows != rows || rows == 0 {
		return nil, &verify.MismatchError{What: fmt.Sprintf("written chunk %s holds %d rows, %d written", key, c.NumRows, rows)}
	}
	if g := c.EmptyRowGroup(); g >= 0 {
		return nil, &verify.MismatchError{What: fmt.Sprintf("written chunk %s: row group %d is empty", key, g)}
	}
	return c.Footer, nil
}

type countingWriter struct {
	ctx context.Context // hits faults.WriteChunksUploading with it
	w   io.Writer
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	before := c.n
	c.n += int64(n)
	if faults.Enabled && err == nil && c.n>>20 > before>>20 {
		err = faults.Hit(c.ctx, faults.WriteChunksUploading)
	}
	return n, err
}
