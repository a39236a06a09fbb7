package compaction

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/parquetio"
)

// collector turns the row runs that merge emits into the batches handed to the encoder. A run of
// at least minRun rows or half of minRunBytes bytes (the usual case: a sorted input contributes
// whole batches) goes on as a zero-copy slice; shorter runs (where inputs interleave) are gathered
// and concatenated into one batch once they add up to minRun rows or minRunBytes bytes, or a long
// run follows. A gathered batch is thus smaller than 1.5 × minRunBytes, and no batch is larger
// than the input batch it is a slice of. The batches depend only on the
// sequence of runs, which depends only on the inputs and the plan, so the output bytes are the
// same on every retry. When every column is gatherable, short runs are not sliced at all: the
// collector holds a reference to their batches and copies the rows out at once (gatherSpans).
type collector struct {
	schema *arrow.Schema
	minRun int64
	mem    memory.Allocator
	out    func(arrow.RecordBatch) error
	parts  []arrow.RecordBatch // short runs as slices (schemas that are not gatherable)
	spans  []span              // short runs as row ranges (gatherable schemas)
	gather bool
	rows   int64
	bytes  int64 // of the gathered runs (chunkstats.RowsBytes)
}

// minRunBytes is the size in bytes of data from which a run goes on as it is, and at which
// gathered runs are handed on.
const minRunBytes = 1 << 20

// newCollector passes on runs of at least min(batchRows, 1024, 1 MiB of average rows) rows
// (bytesPerRow: the topic's average) or half of minRunBytes as they are: a source batch of about
// 1 MiB of rows goes on without a copy.
func newCollector(schema *arrow.Schema, batchRows, bytesPerRow int64, mem memory.Allocator, out func(arrow.RecordBatch) error) *collector {
	minRun := min(batchRows, 1024, minRunBytes/max(bytesPerRow, 1))
	return &collector{schema: schema, minRun: max(minRun, 1), mem: mem, out: out, gather: gatherable(schema)}
}

// add takes rows [from, to) of rec (merge.EmitFunc).
func (c *collector) add(rec arrow.RecordBatch, from, to int64) error {
	var bytes int64
	if to-from < c.minRun {
		bytes = chunkstats.RowsBytes(rec, from, to)
	}
	if to-from >= c.minRun || bytes >= minRunBytes/2 {
		if err := c.flush(); err != nil {
			return err
		}
		return c.out(rec.NewSlice(from, to))
	}
	if c.gather {
		if n := len(c.spans); n > 0 && c.spans[n-1].rec == rec && c.spans[n-1].to == from {
			c.spans[n-1].to = to // continues the previous run
		} else {
			rec.Retain()
			c.spans = append(c.spans, span{rec: rec, from: from, to: to})
		}
	} else {
		c.parts = append(c.parts, rec.NewSlice(from, to))
	}
	c.rows += to - from
	c.bytes += bytes
	if c.rows >= c.minRun || c.bytes >= minRunBytes {
		return c.flush()
	}
	return nil
}

// flush hands on the gathered short runs as one batch.
func (c *collector) flush() error {
	if len(c.spans) > 0 {
		var rec arrow.RecordBatch
		if len(c.spans) == 1 {
			rec = c.spans[0].rec.NewSlice(c.spans[0].from, c.spans[0].to)
		} else {
			var err error
			if rec, err = gatherSpans(c.schema, c.spans, c.mem); err != nil {
				c.release()
				return refusedRows(err)
			}
		}
		c.release()
		return c.out(rec)
	}
	if len(c.parts) == 0 {
		return nil
	}
	var rec arrow.RecordBatch
	if len(c.parts) == 1 {
		rec = c.parts[0]
		c.parts, c.rows, c.bytes = c.parts[:0], 0, 0
	} else {
		var err error
		rec, err = concatRecords(c.schema, c.parts, c.mem)
		c.release()
		if err != nil {
			return refusedRows(err)
		}
	}
	return c.out(rec)
}

func (c *collector) release() {
	for _, p := range c.parts {
		p.Release()
	}
	for i := range c.spans {
		c.spans[i].rec.Release()
		c.spans[i] = span{}
	}
	c.parts, c.spans, c.rows, c.bytes = c.parts[:0], c.spans[:0], 0, 0
}

// refusedRows marks an error of arrow-go joining the short runs of several inputs into one
// batch (dictionaries that cannot be combined, for instance) as an input fault: it is the
// library's refusal of the rows' content, which fails the same way on every retry. writeChunk
// names the output chunk (OutputError).
func refusedRows(err error) error {
	return &parquetio.InputError{Err: fmt.Errorf("concatenate rows of the inputs: %w", err)}
}
