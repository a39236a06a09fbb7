package compaction

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// collector gathers the row runs that merge emits into record batches of exactly batchRows rows
// (the last one shorter). A run that fills a whole batch on its own is passed on as a zero-copy
// slice; runs that share a batch are concatenated.
type collector struct {
	schema    *arrow.Schema
	batchRows int64
	mem       memory.Allocator
	out       func(arrow.RecordBatch) error
	parts     []arrow.RecordBatch
	rows      int64
}

func newCollector(schema *arrow.Schema, batchRows int64, mem memory.Allocator, out func(arrow.RecordBatch) error) *collector {
	return &collector{schema: schema, batchRows: max(batchRows, 1), mem: mem, out: out}
}

// add takes rows [from, to) of rec (merge.EmitFunc).
func (c *collector) add(rec arrow.RecordBatch, from, to int64) error {
	for from < to {
		take := min(to-from, c.batchRows-c.rows)
		c.parts = append(c.parts, rec.NewSlice(from, from+take))
		c.rows += take
		from += take
		if c.rows == c.batchRows {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush hands on the gathered rows as one batch.
func (c *collector) flush() error {
	if len(c.parts) == 0 {
		return nil
	}
	var rec arrow.RecordBatch
	if len(c.parts) == 1 {
		rec = c.parts[0]
	} else {
		var err error
		rec, err = concatRecords(c.schema, c.parts, c.mem)
		c.release()
		if err != nil {
			return err
		}
	}
	c.parts, c.rows = c.parts[:0], 0
	return c.out(rec)
}

func (c *collector) release() {
	for _, p := range c.parts {
		p.Release()
	}
	c.parts, c.rows = c.parts[:0], 0
}
