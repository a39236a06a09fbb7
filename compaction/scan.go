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

// OutputError is an input fault met while writing output chunk Key from the rows of several
// inputs (arrow-go refusing to combine or encode their rows: parquetio.InputError), naming that
// output; a fault of one input chunk is a *ChunkError instead.
type OutputError struct {
	Key string
	Err error
}

func (e *OutputError) Error() string { return fmt.Sprintf("output chunk %s: %v", e.Key, e.Err) }
func (e *OutputError) Unwrap() error { return e.Err }

// IsInputFault reports whether err is caused by bad input data (a *ChunkError, a
// parquetio.InputError, which an *OutputError wraps, or a missing object) rather than by the
// infrastructure.
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
	// UncompressedBytes is the sum of the row groups' uncompressed bytes
	// (parquetio.Chunk.RowGroupBytes).
	UncompressedBytes int64
	// MaxRowGroupBytes is the largest of the row groups' uncompressed bytes
	// (plan.Input.MaxRowGroupBytes), MaxRowGroupRows the largest of their rows.
	MaxRowGroupBytes int64
	MaxRowGroupRows  int64
	// WindowReadable says a window read fetches no more of any row group than of a chunk
	// storeopt writes, as far as the footer tells (parquetio.Chunk.WindowReadable with the
	// copy path's page bounds).
	WindowReadable bool
	Nulls            int64  // rows with a null timestamp
	MinTs            *int64 // nil when every timestamp is null
	MaxTs            *int64
	// Runs are the chunk's sorted runs in row order: the row groups that follow each other in
	// key order form one run (an ingested chunk, or a rollup of sorted neighbours, is one run);
	// an unsorted row group is a run of its own, sorted in memory when it is read. A merge reads
	// each run as an input of its own, so a rollup chunk of many blocks is never sorted whole.
	Runs []Run
	// WrittenByStoreopt says storeopt's writer wrote the chunk (an earlier compaction's output),
	// whose catalog row records its largest row (ChunkRef.MaxRowBytes).
	WrittenByStoreopt bool
	// Storage is how the chunk stores its columns' pages (parquetio.Chunk.PageStorage).
	Storage string
}

// Run is one sorted run of a chunk: consecutive row groups whose rows are in key order.
type Run struct {
	// RowGroups are the run's row groups; nil when the run is the whole chunk.
	RowGroups []int
	FirstRow  int64 // stored index of the run's first row in the chunk
	Rows      int64
	// Sorted is false for a single row group whose rows are not stored in key order.
	Sorted      bool
	First, Last plan.Key
	// Samples cover the run's rows in key order (plan.Sample).
	Samples []plan.Sample
	// MinTs and MaxTs are the run's smallest and largest non-null timestamps (nil: none).
	MinTs, MaxTs *int64
	// MaxRowBytes is the uncompressed size of the run's largest row as the footer tells it, or
	// for a row group that may hide large rows an upper bound from its page headers
	// (parquetio.Chunk.HiddenRowBytes; plan.Input.MaxRowBytes), and MaxRowGroup the row group
	// it is in.
	MaxRowBytes int64
	MaxRowGroup int
}

// ScanChunk reads the footer and the timestamp_ns column of the chunk at key and returns its facts
// with its sorted runs, each with one sample every step rows (step >= 1) of its sorted order; the
// keys carry input as their input position (the caller renumbers runs as it places them).
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
	s := Scan{Footer: c.Footer, Rows: c.NumRows, FooterBytes: c.FooterBytes, WrittenByStoreopt: c.WrittenByStoreopt(),
		Storage: c.PageStorage(), WindowReadable: c.WindowReadable(parquetio.CopiedPageRows, parquetio.CopiedPageBytes)}
	s.Nulls = int64(ts.NullN())
	if ts.Len() == 0 {
		return s, nil
	}
	var start int64
	for rg := range c.NumRowGroups() {
		n := c.RowGroupRows(rg)
		if n == 0 {
			continue
		}
		r := scanRun(ts, start, start+n, input, max(step, 1))
		r.RowGroups = []int{rg}
		r.MaxRowBytes, r.MaxRowGroup = c.RowBytes(rg), rg
		// A row group whose footer average may hide large rows: bound its largest row from
		// its byte-array columns' page headers (a value is at most its page).
		hidden, _, err := c.HiddenRowBytes(ctx, rg, plan.DefaultBatchBytes)
		if err != nil {
			if parquetio.IsInputError(err) {
				return Scan{}, &ChunkError{Key: key, Err: err}
			}
			return Scan{}, fmt.Errorf("chunk %s: %w", key, err)
		}
		r.MaxRowBytes = max(r.MaxRowBytes, hidden)
		s.UncompressedBytes += c.RowGroupBytes(rg)
		s.MaxRowGroupBytes = max(s.MaxRowGroupBytes, c.RowGroupBytes(rg))
		s.MaxRowGroupRows = max(s.MaxRowGroupRows, n)
		if c.NumRowGroups() > 1 {
			// Weigh the samples by their row group's stored bytes (planner estimates; a single
			// row group's are the chunk's average anyway).
			stored := c.RowGroupCompressedBytes(rg)
			for k := range r.Samples {
				r.Samples[k].Bytes = max((stored*r.Samples[k].Rows+n-1)/n, 1)
			}
		}
		if k := len(s.Runs) - 1; k >= 0 && s.Runs[k].Sorted && r.Sorted && s.Runs[k].Last.Compare(r.First) < 0 {
			prev := &s.Runs[k]
			if r.MaxRowBytes > prev.MaxRowBytes {
				prev.MaxRowBytes, prev.MaxRowGroup = r.MaxRowBytes, r.MaxRowGroup
			}
			prev.RowGroups = append(prev.RowGroups, rg)
			prev.Rows += r.Rows
			prev.Last = r.Last
			prev.Samples = append(prev.Samples, r.Samples...)
			if prev.MinTs == nil {
				prev.MinTs = r.MinTs
			}
			if r.MaxTs != nil {
				prev.MaxTs = r.MaxTs
			}
		} else {
			s.Runs = append(s.Runs, r)
		}
		start += n
	}
	if len(s.Runs) == 1 && len(s.Runs[0].RowGroups) == c.NumRowGroups() {
		s.Runs[0].RowGroups = nil // the whole chunk
	}
	for _, r := range s.Runs {
		if r.MinTs != nil && (s.MinTs == nil || *r.MinTs < *s.MinTs) {
			s.MinTs = r.MinTs
		}
		if r.MaxTs != nil && (s.MaxTs == nil || *r.MaxTs > *s.MaxTs) {
			s.MaxTs = r.MaxTs
		}
	}
	return s, nil
}

// scanRun returns the facts of rows [from, to) of ts as one run.
func scanRun(ts *array.Int64, from, to int64, input int, step int64) Run {
	part := array.NewSlice(ts, from, to).(*array.Int64)
	defer part.Release()
	order := sortedOrder(part)
	r := Run{FirstRow: from, Rows: to - from, Sorted: order == nil}
	keyAt := func(pos int64) plan.Key {
		row := pos
		if order != nil {
			row = order[pos]
		}
		if part.IsNull(int(row)) {
			return plan.Key{Null: true, Input: input, Row: from + row}
		}
		return plan.Key{Ts: part.Value(int(row)), Input: input, Row: from + row}
	}
	n := r.Rows
	r.First, r.Last = keyAt(0), keyAt(n-1)
	if valued := n - int64(part.NullN()); valued > 0 {
		lo, hi := r.First.Ts, keyAt(valued-1).Ts
		r.MinTs, r.MaxTs = &lo, &hi
	}
	r.Samples = make([]plan.Sample, 0, (n+step-1)/step)
	for pos := int64(0); pos < n; pos += step {
		r.Samples = append(r.Samples, plan.Sample{Key: keyAt(pos), Rows: min(step, n-pos)})
	}
	return r
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

// ChunkRef is what MergeInputs needs to know of a chunk from the catalog.
type ChunkRef struct {
	ID         int64
	Key        string
	SizeBytes  int64 // object size
	ArrowBytes int64 // uncompressed Arrow bytes of all rows
	Ordinal    int
	// MaxRowBytes is the Arrow size of the chunk's largest row as storeopt's writer recorded it
	// in the catalog (chunkstats.MaxRowBytes of its column statistics), 0 when unknown.
	MaxRowBytes int64
}

// RecordedMaxRow returns the largest row of chunk c (scanned as s) as storeopt's writer recorded
// it, when storeopt wrote the chunk and its catalog row has the record; 0 otherwise (the row is
// then bounded from the footer).
func RecordedMaxRow(c ChunkRef, s Scan) int64 {
	if !s.WrittenByStoreopt {
		return 0
	}
	return c.MaxRowBytes
}

// MergeInputs returns the inputs of a merge plan over the scanned chunks (chunks[i] scanned as
// scans[i], in catalog order) and their samples: every sorted run of every chunk is an input of
// its own, at positions in catalog order then run order, which keeps the tie-break of rows with
// equal timestamps (catalog order, then stored row index). A run's bytes are its share of the
// chunk's by rows (plus the footer, which the planner leaves out again); a chunk without rows is
// one input without rows. The samples are the scans' own, renumbered in place (a topic's samples
// are most of its planner's memory: they are held once): MergeInputs takes them over, and a
// later call over some of the same scans renumbers the samples an earlier one returned.
func MergeInputs(chunks []ChunkRef, scans []Scan) ([]plan.Input, [][]plan.Sample) {
	var inputs []plan.Input
	var samples [][]plan.Sample
	for i, c := range chunks {
		s := scans[i]
		if len(s.Runs) == 0 {
			inputs = append(inputs, plan.Input{ChunkID: c.ID, ObjectKey: c.Key, SizeBytes: c.SizeBytes,
				FooterBytes: s.FooterBytes, ArrowBytes: c.ArrowBytes, Sorted: true, Ordinal: c.Ordinal, Storage: s.Storage})
			samples = append(samples, nil)
			continue
		}
		data := c.SizeBytes - s.FooterBytes
		for _, r := range s.Runs {
			// A dictionary-encoded column is smaller in the footer's uncompressed bytes than
			// decoded: scale the largest row by the chunk's Arrow bytes when they are larger.
			// A chunk storeopt wrote has its largest row recorded: that row, not a bound from
			// the footer's averages (docs/design.md#storeopt-never-refuses-its-own-output).
			if rec := RecordedMaxRow(c, s); rec > 0 {
				r.MaxRowBytes = rec
			} else if c.ArrowBytes > s.UncompressedBytes && s.UncompressedBytes > 0 {
				r.MaxRowBytes = int64(float64(r.MaxRowBytes) * float64(c.ArrowBytes) / float64(s.UncompressedBytes))
			}
			pos := len(inputs)
			in := plan.Input{ChunkID: c.ID, ObjectKey: c.Key, Rows: r.Rows, FooterBytes: s.FooterBytes,
				SizeBytes: c.SizeBytes, ArrowBytes: c.ArrowBytes,
				Sorted: r.Sorted, First: r.First, Last: r.Last, Ordinal: c.Ordinal,
				RowGroups: r.RowGroups, FirstRow: r.FirstRow, MaxRowBytes: r.MaxRowBytes, Storage: s.Storage,
				MaxRowGroupBytes: s.MaxRowGroupBytes, MaxRowGroupRows: s.MaxRowGroupRows, WindowReadable: s.WindowReadable}
			in.First.Input, in.Last.Input = pos, pos
			if len(s.Runs) > 1 {
				in.SizeBytes = data*r.Rows/max(s.Rows, 1) + s.FooterBytes
				in.ArrowBytes = c.ArrowBytes * r.Rows / max(s.Rows, 1)
				in.ObjectBytes = c.SizeBytes
			}
			for k := range r.Samples {
				r.Samples[k].Key.Input = pos
			}
			inputs = append(inputs, in)
			samples = append(samples, r.Samples)
		}
	}
	return inputs, samples
}
