package compaction

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/merge"
	"github.com/storeopt/storeopt/parquetio"
)

// chunkSource streams one input chunk for merge: batch by batch when the chunk is stored in key
// order, or sorted whole in memory (an unsorted chunk is small: one record batch of ingestion).
type chunkSource struct {
	key     string
	chunk   *openedChunk
	br      *parquetio.BatchReader
	sorted  bool
	tsField int
	mem     memory.Allocator
	next    int64 // stored row index of the next batch's first row
	cur     merge.Batch
	owned   arrow.RecordBatch // a batch this source built and must release
	done    bool
}

// OpenSource opens the chunk at key as a merge.Source. sorted says whether the scan found it in
// key order; footer is the topic's footer, which the chunk must still match (per-file values
// aside, parquetio.PerFileDifferences).
func OpenSource(ctx context.Context, b *blob.Bucket, key string, sorted bool, footer *parquetio.Footer, batchRows int64, mem memory.Allocator) (merge.Source, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	c, err := openChunk(ctx, b, key, mem)
	if err != nil {
		return nil, err
	}
	if _, drift := parquetio.PerFileDifferences(footer, c.Footer); drift != "" {
		c.Close()
		return nil, &ChunkError{Key: key, Err: fmt.Errorf("footer changed since planning: %s", drift)}
	}
	br, err := c.Batches(ctx, batchRows)
	if err != nil {
		c.Close()
		return nil, &ChunkError{Key: key, Err: err}
	}
	return &chunkSource{key: key, chunk: c, br: br, sorted: sorted, tsField: c.TimestampField, mem: mem}, nil
}

func (s *chunkSource) Next(ctx context.Context) (*merge.Batch, error) {
	s.releaseOwned()
	if s.done {
		return nil, nil
	}
	if !s.sorted {
		s.done = true
		return s.sortWhole(ctx)
	}
	rec := s.br.Next()
	if rec == nil {
		s.done = true
		if err := s.br.Err(); err != nil {
			return nil, &ChunkError{Key: s.key, Err: err}
		}
		return nil, nil
	}
	s.cur = merge.Batch{Rec: rec, Ts: rec.Column(s.tsField).(*array.Int64), FirstRow: s.next}
	s.next += rec.NumRows()
	return &s.cur, nil
}

// sortWhole reads every batch, concatenates them and takes the rows in key order.
func (s *chunkSource) sortWhole(ctx context.Context) (*merge.Batch, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for rec := s.br.Next(); rec != nil; rec = s.br.Next() {
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := s.br.Err(); err != nil {
		return nil, &ChunkError{Key: s.key, Err: err}
	}
	if len(recs) == 0 {
		return nil, nil
	}
	whole, err := concatRecords(s.chunk.Schema, recs, s.mem)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", s.key, err)
	}
	defer whole.Release()
	order := sortedOrder(whole.Column(s.tsField).(*array.Int64))
	if order == nil { // sorted after all (the scan saw another file?): keep stored order
		whole.Retain()
		s.owned = whole
		s.cur = merge.Batch{Rec: whole, Ts: whole.Column(s.tsField).(*array.Int64)}
		return &s.cur, nil
	}
	idxB := array.NewInt64Builder(s.mem)
	idxB.AppendValues(order, nil)
	idx := idxB.NewInt64Array()
	idxB.Release()
	defer idx.Release()
	cols := make([]arrow.Array, whole.NumCols())
	for i, col := range whole.Columns() {
		taken, err := compute.TakeArray(compute.WithAllocator(ctx, s.mem), col, idx)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("chunk %s: sort rows: %w", s.key, err)
		}
		cols[i] = taken
	}
	sorted := array.NewRecordBatch(s.chunk.Schema, cols, whole.NumRows())
	for _, c := range cols {
		c.Release()
	}
	s.owned = sorted
	s.cur = merge.Batch{Rec: sorted, Ts: sorted.Column(s.tsField).(*array.Int64), Rows: order}
	return &s.cur, nil
}

func (s *chunkSource) releaseOwned() {
	if s.owned != nil {
		s.owned.Release()
		s.owned = nil
	}
}

func (s *chunkSource) Close() {
	s.releaseOwned()
	if s.br != nil {
		s.br.Release()
		s.chunk.Close()
	}
	s.br, s.chunk, s.cur = nil, nil, merge.Batch{}
}

// concatRecords concatenates record batches of one schema column by column.
func concatRecords(schema *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	parts := make([]arrow.Array, len(recs))
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			for _, done := range cols[:c] {
				done.Release()
			}
			return nil, err
		}
		cols[c] = a
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
