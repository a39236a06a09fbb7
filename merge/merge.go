// Package merge streams the k-way merge of a topic's input chunks in global key order
// (plan.Key: timestamp_ns ascending, nulls last, ties by input then row), restricted to one output
// chunk's key range. It holds about one batch per open input, opens inputs lazily in merge order
// (a mostly-ordered topic keeps only a few open) and hands out whole runs of rows as zero-copy
// slices found by binary search, never row-by-row heap pops.
package merge

import (
	"container/heap"
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/verify"
)

// Batch is a batch of one input's rows in key order.
type Batch struct {
	Rec arrow.RecordBatch
	Ts  *array.Int64 // Rec's timestamp_ns column
	// FirstRow is the stored row index of Rec's row 0, used when Rows is nil (the input was stored
	// in key order). Rows gives each row's stored index when the input was sorted in memory.
	FirstRow int64
	Rows     []int64
}

// addPositions adds the stored positions of rows [from, to) to p.
func (b *Batch) addPositions(p *verify.ChunkPositions, from, to int64) {
	if b.Rows != nil {
		p.AddRows(b.Rows[from:to])
	} else {
		p.AddRange(b.FirstRow+from, to-from)
	}
}

func (b *Batch) key(input int, i int64) plan.Key {
	row := b.FirstRow + i
	if b.Rows != nil {
		row = b.Rows[i]
	}
	if b.Ts.IsNull(int(i)) {
		return plan.Key{Null: true, Input: input, Row: row}
	}
	return plan.Key{Ts: b.Ts.Value(int(i)), Input: input, Row: row}
}

// Source yields the rows of one input in key order.
type Source interface {
	// Next returns the next batch, or nil at the end. The batch is valid until the next call.
	Next(ctx context.Context) (*Batch, error)
	Close()
}

// OpenFunc opens input number input (a position in plan.Plan.Inputs).
type OpenFunc func(ctx context.Context, input int) (Source, error)

// EmitFunc receives rows [from, to) of rec, in global key order. rec is valid only during the call
// (Retain or slice it to keep it).
type EmitFunc func(rec arrow.RecordBatch, from, to int64) error

// Range is the part of the global order to merge.
type Range struct {
	Lo, Hi *plan.Key  // nil = unbounded
	Inputs []int      // inputs that may hold rows in [Lo, Hi)
	First  []plan.Key // First[i]: smallest key of Inputs[i]
	// ChunkIDs[i] is the catalog chunk ID of Inputs[i]: it keys the stored positions of the rows
	// taken from it (see Merge).
	ChunkIDs []int64
}

// Merge emits every row of the inputs whose key lies in [r.Lo, r.Hi) in key order, adds the
// digest of those rows, as read from the inputs, to read, and adds to taken (when not nil) the
// stored positions of the rows emitted, by input chunk ID: recorded run by run as the runs are
// emitted, from the batches' stored row indexes, so that verification can check that every
// input row went to exactly one output whatever the key ranges said. Errors of open, Next and
// emit are returned as they are.
func Merge(ctx context.Context, r Range, open OpenFunc, emit EmitFunc, read *verify.Digest, taken verify.Taken) error {
	m := &merger{r: r, open: open, read: read}
	defer m.close()
	if err := m.run(ctx, emit); err != nil {
		return err
	}
	if taken != nil {
		for _, c := range m.opened {
			taken.Add(c.taken)
		}
	}
	return nil
}

type cursor struct {
	input    int
	src      Source
	b        *Batch
	pos, end int64
	done     bool
	closed   bool
	taken    verify.ChunkPositions // stored positions of the rows emitted from this input
}

// close closes c's source and drops it, so that a finished input's reader, footer and buffers
// are garbage at once although the merger still lists the cursor (an output may read thousands
// of inputs).
func (c *cursor) close() {
	if !c.closed {
		c.closed = true
		c.src.Close()
		c.src = nil
		c.b = nil
	}
}

func (c *cursor) head() plan.Key { return c.b.key(c.input, c.pos) }

type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].head().Compare(h[j].head()) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

type pendingInput struct {
	input   int
	chunkID int64
	first   plan.Key
}

type merger struct {
	r       Range
	open    OpenFunc
	read    *verify.Digest
	hasher  verify.Hasher
	heap    cursorHeap
	pending []pendingInput
	opened  []*cursor
}

func (m *merger) close() {
	for _, c := range m.opened {
		c.close()
	}
}

func (m *merger) run(ctx context.Context, emit EmitFunc) error {
	if len(m.r.First) != len(m.r.Inputs) || len(m.r.ChunkIDs) != len(m.r.Inputs) {
		return fmt.Errorf("merge: %d first keys and %d chunk IDs for %d inputs", len(m.r.First), len(m.r.ChunkIDs), len(m.r.Inputs))
	}
	for i, in := range m.r.Inputs {
		m.pending = append(m.pending, pendingInput{input: in, chunkID: m.r.ChunkIDs[i], first: m.r.First[i]})
	}
	sort.Slice(m.pending, func(i, j int) bool { return m.pending[i].first.Compare(m.pending[j].first) < 0 })
	for {
		if err := m.openDue(ctx); err != nil {
			return err
		}
		if len(m.heap) == 0 {
			return nil
		}
		c := heap.Pop(&m.heap).(*cursor)
		var limit *plan.Key
		if len(m.heap) > 0 {
			k := m.heap[0].head()
			limit = &k
		}
		if len(m.pending) > 0 && (limit == nil || m.pending[0].first.Compare(*limit) < 0) {
			limit = &m.pending[0].first
		}
		to := c.end
		if limit != nil {
			to = max(search(c, c.pos, c.end, *limit), c.pos+1)
		}
		c.b.addPositions(&c.taken, c.pos, to)
		if err := emit(c.b.Rec, c.pos, to); err != nil {
			return err
		}
		c.pos = to
		if c.pos == c.end {
			if err := m.load(ctx, c); err != nil {
				return err
			}
		}
		if !c.done {
			heap.Push(&m.heap, c)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// openDue opens every pending input whose first key sorts before the smallest head in the heap.
func (m *merger) openDue(ctx context.Context) error {
	for len(m.pending) > 0 && (len(m.heap) == 0 || m.pending[0].first.Compare(m.heap[0].head()) < 0) {
		p := m.pending[0]
		m.pending = m.pending[1:]
		src, err := m.open(ctx, p.input)
		if err != nil {
			return err
		}
		c := &cursor{input: p.input, src: src, taken: verify.NewChunkPositions(p.chunkID)}
		m.opened = append(m.opened, c)
		if err := m.load(ctx, c); err != nil {
			return err
		}
		if !c.done {
			heap.Push(&m.heap, c)
		}
	}
	return nil
}

// load reads c's next batch that has rows in range and positions c on them; c.done is set when
// the input has no more rows in range.
func (m *merger) load(ctx context.Context, c *cursor) error {
	for !c.done {
		if c.b != nil && c.end < int64(c.b.Rec.NumRows()) {
			c.done = true // the previous batch reached Hi: every later row is past it
			break
		}
		b, err := c.src.Next(ctx)
		if err != nil {
			return err
		}
		if b == nil {
			c.done = true
			break
		}
		n := int64(b.Rec.NumRows())
		c.b, c.pos, c.end = b, 0, n
		if m.r.Lo != nil {
			c.pos = search(c, 0, n, *m.r.Lo)
		}
		if m.r.Hi != nil {
			c.end = search(c, c.pos, n, *m.r.Hi)
		}
		m.injectBoundaryFaults(c, n)
		if c.pos < c.end {
			m.hasher.AddRows(m.read, b.Rec, c.pos, c.end)
			return nil
		}
	}
	c.close()
	c.b = nil
	return nil
}

// search returns the first row index in [from, to) of c's batch whose key is >= k (to if none).
func search(c *cursor, from, to int64, k plan.Key) int64 {
	return from + int64(sort.Search(int(to-from), func(i int) bool {
		return c.b.key(c.input, from+int64(i)).Compare(k) >= 0
	}))
}
