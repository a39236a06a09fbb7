package compaction

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// collector turns the row runs that merge emits into the batches handed to the encoder. A run of
// at least minRun rows (the usual case: a sorted input contributes whole batches) goes on as a
// zero-copy slice; shorter runs (where inputs interleave) are gathered and concatenated into one
// batch once they add up to minRun rows or a long run follows. The batches depend only on the
// sequence of runs, which depends only on the inputs and the plan, so the output bytes are the
// same on every retry.
type collector struct {
	schema *arrow.Schema
	minRun int64
	mem    memory.Allocator
	out    func(arrow.RecordBatch) error
	parts  []arrow.RecordBatch
	rows   int64
}

// newCollector passes on runs of at least min(batchRows, 1024, 1 MiB of rows) rows as they are.
func newCollector(schema *arrow.Schema, batchRows, bytesPerRow int64, mem memory.Allocator, out func(arrow.RecordBatch) error) *collector {
	minRun := min(batchRows, 1024, (1<<20)/max(bytesPerRow, 1))
	return &collector{schema: schema, minRun: max(minRun, 1), mem: mem, out: out}
}

// add takes rows [from, to) of rec (merge.EmitFunc).
func (c *collector) add(rec arrow.RecordBatch, from, to int64) error {
	if to-from >= c.minRun {
		if err := c.flush(); err != nil {
			return err
		}
		return c.out(rec.NewSlice(from, to))
	}
	c.parts = append(c.parts, rec.NewSlice(from, to))
	c.rows += to - from
	if c.rows >= c.minRun {
		return c.flush()
	}
	return nil
}

// flush hands on the gathered short runs as one batch.
func (c *collector) flush() error {
	if len(c.parts) == 0 {
		return nil
	}
	var rec arrow.RecordBatch
	if len(c.parts) == 1 {
		rec = c.parts[0]
		c.parts, c.rows = c.parts[:0], 0
	} else {
		var err error
		rec, err = concatRecords(c.schema, c.parts, c.mem)
		c.release()
		if err != nil {
			return err
		}
	}
	return c.out(rec)
}

func (c *collector) release() {
	for _, p := range c.parts {
		p.Release()
	}
	c.parts, c.rows = c.parts[:0], 0
}
