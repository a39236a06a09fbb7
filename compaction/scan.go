// Package compaction runs the data path of one optimization against the object store: it scans
// input chunks for the planner (footer and timestamp column only) and writes planned output
// chunks by streaming the k-way merge of their inputs into Parquet. It knows nothing of Temporal
// or the catalog; activities bind it to both.
package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
)

// ChunkError is a fault of one input chunk's data, naming the chunk's object key. Retrying cannot
// help (activities report it as a non-retryable input error).
type ChunkError struct {
	Key string
	Err error
}

func (e *ChunkError) Error() string { return fmt.Sprintf("chunk %s: %v", e.Key, e.Err) }
func (e *ChunkError) Unwrap() error { return e.Err }

// IsInputFault reports whether err is caused by bad input data (a *ChunkError, a
// parquetio.InputError or a missing object) rather than by the infrastructure.
func IsInputFault(err error) bool {
	var ce *ChunkError
	return errors.As(err, &ce) || parquetio.IsInputError(err) || errors.Is(err, store.ErrNotExist)
}

// openedChunk is a chunk whose object was read into a buffer of the allocator; Close gives it
// back.
type openedChunk struct {
	*parquetio.Chunk
	obj *store.OpenedObject
}

func (c *openedChunk) Close() error {
	err := c.Chunk.Close()
	c.obj.Release()
	return err
}

// openChunk opens the chunk at key, classifying content faults and missing objects as *ChunkError.
// The object is read (when small) into a buffer of mem, which Close returns.
func openChunk(ctx context.Context, b *blob.Bucket, key string, mem memory.Allocator) (*openedChunk, error) {
	var alloc store.Allocator
	if mem != nil {
		alloc = mem
	}
	obj, err := store.OpenObjectWith(ctx, b, key, alloc)
	if err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return nil, &ChunkError{Key: key, Err: errors.New("object is missing from the store")}
		}
		return nil, err
	}
	c, err := parquetio.Open(obj, mem)
	if err != nil {
		obj.Release()
		if parquetio.IsInputError(err) {
			return nil, &ChunkError{Key: key, Err: err}
		}
		return nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	return &openedChunk{Chunk: c, obj: obj}, nil
}

// Scan is what the planner needs to know of one input chunk.
type Scan struct {
	// Footer is the chunk's Parquet schema and key/value pairs (the topic's schema identity).
	Footer *parquetio.Footer
	Rows   int64
	// FooterBytes is the size of the chunk's footer, bytes (per-file overhead the planner
	// leaves out of its estimate of the rows' bytes).
	FooterBytes int64
	Sorted      bool
	First       plan.Key
	Last        plan.Key
	Samples     []plan.Sample
	Nulls       int64  // rows with a null timestamp
	MinTs       *int64 // nil when every timestamp is null
	MaxTs       *int64
}

// ScanChunk reads the footer and the timestamp_ns column of the chunk at key (input position
// input) and returns its facts with one sample every step rows (step >= 1) of its sorted order.
func ScanChunk(ctx context.Context, b *blob.Bucket, key string, input int, step int64, mem memory.Allocator) (Scan, error) {
	c, err := openChunk(ctx, b, key, mem)
	if err != nil {
		return Scan{}, err
	}
	defer c.Close()
	ts, err := c.Timestamps(ctx)
	if err != nil {
		return Scan{}, &ChunkError{Key: key, Err: err}
	}
	defer ts.Release()
	s := Scan{Footer: c.Footer, Rows: c.NumRows, FooterBytes: c.FooterBytes}
	order := sortedOrder(ts)
	s.Sorted = order == nil
	s.Nulls = int64(ts.NullN())
	n := int64(ts.Len())
	if n == 0 {
		return s, nil
	}
	keyAt := func(pos int64) plan.Key {
		row := pos
		if order != nil {
			row = order[pos]
		}
		if ts.IsNull(int(row)) {
			return plan.Key{Null: true, Input: input, Row: row}
		}
		return plan.Key{Ts: ts.Value(int(row)), Input: input, Row: row}
	}
	s.First, s.Last = keyAt(0), keyAt(n-1)
	if !s.First.Null {
		lo := s.First.Ts
		s.MinTs = &lo
		hi := s.Last.Ts
		if s.Last.Null {
			hi = keyAt(n - 1 - s.Nulls).Ts
		}
		s.MaxTs = &hi
	}
	step = max(step, 1)
	s.Samples = make([]plan.Sample, 0, (n+step-1)/step)
	for pos := int64(0); pos < n; pos += step {
		s.Samples = append(s.Samples, plan.Sample{Key: keyAt(pos), Rows: min(step, n-pos)})
	}
	return s, nil
}

// sortedOrder returns nil when ts is already in key order (non-null values non-decreasing, nulls
// after them), else the row indexes in key order (stable: ties keep their stored order).
func sortedOrder(ts *array.Int64) []int64 {
	n := ts.Len()
	sorted := true
	seenNull := false
	for i := 0; i < n && sorted; i++ {
		switch {
		case ts.IsNull(i):
			seenNull = true
		case seenNull:
			sorted = false
		case i > 0 && !ts.IsNull(i-1) && ts.Value(i) < ts.Value(i-1):
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortStableFunc(order, func(a, b int64) int {
		an, bn := ts.IsNull(int(a)), ts.IsNull(int(b))
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		av, bv := ts.Value(int(a)), ts.Value(int(b))
		if av < bv {
			return -1
		}
		if av > bv {
			return 1
		}
		return 0
	})
	return order
}
