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
	chunk   *parquetio.Chunk
	closer  func() // closes the chunk (and its object)
	br      *parquetio.BatchReader
	sorted  bool
	tsField int
	mem     memory.Allocator
	next    int64 // stored row index of the next batch's first row
	first   int64 // stored row index of the run's first row
	cur     merge.Batch
	owned   arrow.RecordBatch // a batch this source built and must release
	done    bool
}

// OpenSource opens the chunk at key as a merge.Source. sorted says whether the scan found it in
// key order; footer is the topic's footer, which the chunk must still match (per-file values
// aside, parquetio.PerFileDifferences).
func OpenSource(ctx context.Context, b *blob.Bucket, key string, sorted bool, footer *parquetio.Footer, batchRows int64, mem memory.Allocator) (merge.Source, error) {
	return OpenRun(ctx, b, key, RunSpec{Sorted: sorted}, footer, parquetio.Limits{Rows: batchRows}, mem)
}

// RunSpec names a sorted run of a chunk (see Run): its row groups (nil = the whole chunk), the
// stored index of its first row, and whether its rows are stored in key order. A run with
// RowsTo > 0 is rows [RowsFrom, RowsTo) of its one row group, read by their pages
// (parquetio.Chunk.RowsOf); FirstRow is then the stored index of row RowsFrom.
type RunSpec struct {
	RowGroups        []int
	FirstRow         int64
	Sorted           bool
	RowsFrom, RowsTo int64
}

// OpenRun opens one run of the chunk at key as a merge.Source (OpenSource for a run) read in
// batches within lim (rows, bytes).
func OpenRun(ctx context.Context, b *blob.Bucket, key string, run RunSpec, footer *parquetio.Footer, lim parquetio.Limits, mem memory.Allocator) (merge.Source, error) {
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
	return RunSource(ctx, c.Chunk, key, run, lim, mem, func() { c.Close() })
}

// RunSource returns a merge.Source over one run of the opened chunk c (whose object key is key),
// read in batches within lim (rows, bytes: parquetio.Limits); closing the source calls
// closeChunk. On error closeChunk has been called.
func RunSource(ctx context.Context, c *parquetio.Chunk, key string, run RunSpec, lim parquetio.Limits, mem memory.Allocator, closeChunk func()) (merge.Source, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var br *parquetio.BatchReader
	var err error
	if run.RowsTo > 0 && len(run.RowGroups) == 1 {
		br, err = c.RowsOf(ctx, lim, run.RowGroups[0], run.RowsFrom, run.RowsTo)
	} else {
		br, err = c.BatchesWithin(ctx, lim, run.RowGroups)
	}
	if err != nil {
		closeChunk()
		return nil, &ChunkError{Key: key, Err: err}
	}
	return &chunkSource{key: key, chunk: c, closer: closeChunk, br: br, sorted: run.Sorted, tsField: c.TimestampField, mem: mem,
		next: run.FirstRow, first: run.FirstRow}, nil
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
	rec, order, err := sortedRecord(ctx, s.key, s.chunk.Schema, s.br, s.tsField, s.mem)
	if err != nil || rec == nil {
		return nil, err
	}
	s.owned = rec
	if order == nil { // sorted after all (the scan saw another file?): stored order
		s.cur = merge.Batch{Rec: rec, Ts: rec.Column(s.tsField).(*array.Int64), FirstRow: s.first}
		return &s.cur, nil
	}
	rows := order
	if s.first != 0 {
		rows = make([]int64, len(order))
		for i, r := range order {
			rows[i] = s.first + r
		}
	}
	s.cur = merge.Batch{Rec: rec, Ts: rec.Column(s.tsField).(*array.Int64), Rows: rows}
	return &s.cur, nil
}

// sortedRecord reads every batch of br into one record batch with its rows in key order (stable:
// ties keep their stored order). order gives each row's index in br's stored order, nil when the
// rows were stored in key order already. rec is nil when br has no rows; the caller releases it.
func sortedRecord(ctx context.Context, key string, schema *arrow.Schema, br *parquetio.BatchReader, tsField int, mem memory.Allocator) (rec arrow.RecordBatch, order []int64, err error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for r := br.Next(); r != nil; r = br.Next() {
		r.Retain()
		recs = append(recs, r)
	}
	if err := br.Err(); err != nil {
		return nil, nil, &ChunkError{Key: key, Err: err}
	}
	if len(recs) == 0 {
		return nil, nil, nil
	}
	whole, err := concatRecords(schema, recs, mem)
	if err != nil {
		// arrow-go refuses these rows (a library's refusal of the input's content): the same
		// rows fail the same way on every retry.
		return nil, nil, &ChunkError{Key: key, Err: fmt.Errorf("concatenate the chunk's batches to sort its rows: %w", err)}
	}
	order = sortedOrder(whole.Column(tsField).(*array.Int64))
	if order == nil {
		return whole, nil, nil
	}
	defer whole.Release()
	idxB := array.NewInt64Builder(mem)
	idxB.AppendValues(order, nil)
	idx := idxB.NewInt64Array()
	idxB.Release()
	defer idx.Release()
	cols := make([]arrow.Array, whole.NumCols())
	for i, col := range whole.Columns() {
		taken, err := compute.TakeArray(compute.WithAllocator(ctx, mem), col, idx)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, nil, &ChunkError{Key: key, Err: fmt.Errorf("sort rows: %w", err)}
		}
		cols[i] = taken
	}
	sorted := array.NewRecordBatch(schema, cols, whole.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return sorted, order, nil
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
		s.closer()
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
