package merge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/verify"
)

// Every row carries its own identity (input, stored row) next to its timestamp, so the test can
// rebuild its plan.Key from what merge emits.
var schema = arrow.NewSchema([]arrow.Field{
	{Name: "input", Type: arrow.PrimitiveTypes.Int64},
	{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "row", Type: arrow.PrimitiveTypes.Int64},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

const tsCol = 1

// testInput is one input chunk: its stored rows' timestamps (nil = null) and how its source
// hands them out.
type testInput struct {
	ts []*int64
	// sortedInMemory: the stored order is not key order; the source hands out rows in key order
	// with Batch.Rows giving each row's stored index (as compaction does for unsorted chunks).
	sortedInMemory bool
	batchRows      int
}

func (in testInput) keys(input int) []plan.Key {
	keys := make([]plan.Key, len(in.ts))
	for r, ts := range in.ts {
		keys[r] = plan.Key{Null: ts == nil, Input: input, Row: int64(r)}
		if ts != nil {
			keys[r].Ts = *ts
		}
	}
	return keys
}

// sortedRows returns the stored row indexes in key order.
func (in testInput) sortedRows(input int) []int64 {
	keys := in.keys(input)
	slices.SortFunc(keys, plan.Key.Compare)
	rows := make([]int64, len(keys))
	for i, k := range keys {
		rows[i] = k.Row
	}
	return rows
}

// record builds a batch of the given stored rows of input.
func (in testInput) record(input int, rows []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(input))
		if ts := in.ts[r]; ts == nil {
			b.Field(tsCol).AppendNull()
		} else {
			b.Field(tsCol).(*array.Int64Builder).Append(*ts)
		}
		b.Field(2).(*array.Int64Builder).Append(r)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("in%d-row%d", input, r))
	}
	return b.NewRecordBatch()
}

// openCounter counts the sources open at once.
type openCounter struct {
	open, maxOpen, opened int
	closedTwice           bool
}

// memSource is a merge.Source over in-memory record batches. Like compaction's source, it reuses
// one Batch and releases the previous record on Next.
type memSource struct {
	in      testInput
	input   int
	order   []int64 // stored rows in key order
	pos     int
	cur     Batch
	counter *openCounter
	closed  bool
	failAt  int // return an error on this call of Next (1-based); 0 = never
	calls   int
}

var errNext = errors.New("disk on fire")

func (s *memSource) Next(ctx context.Context) (*Batch, error) {
	s.calls++
	if s.failAt == s.calls {
		return nil, errNext
	}
	if s.cur.Rec != nil {
		s.cur.Rec.Release()
		s.cur = Batch{}
	}
	if s.pos == len(s.order) {
		return nil, nil
	}
	end := min(s.pos+s.in.batchRows, len(s.order))
	rows := s.order[s.pos:end]
	rec := s.in.record(s.input, rows)
	s.cur = Batch{Rec: rec, Ts: rec.Column(tsCol).(*array.Int64), FirstRow: int64(s.pos)}
	if s.in.sortedInMemory {
		s.cur.Rows = rows
		s.cur.FirstRow = 0
	}
	s.pos = end
	return &s.cur, nil
}

func (s *memSource) Close() {
	if s.closed {
		s.counter.closedTwice = true
		return
	}
	s.closed = true
	s.counter.open--
	if s.cur.Rec != nil {
		s.cur.Rec.Release()
	}
}

func opener(inputs []testInput, counter *openCounter) OpenFunc {
	return func(ctx context.Context, input int) (Source, error) {
		in := inputs[input]
		order := in.sortedRows(input)
		if !in.sortedInMemory && !slices.IsSorted(order) {
			return nil, fmt.Errorf("test bug: input %d is not stored in key order", input)
		}
		counter.open++
		counter.opened++
		counter.maxOpen = max(counter.maxOpen, counter.open)
		return &memSource{in: in, input: input, order: order, counter: counter}, nil
	}
}

// collect is an EmitFunc that records every emitted row's key.
type collect struct{ keys []plan.Key }

func (c *collect) emit(rec arrow.RecordBatch, from, to int64) error {
	if from >= to || to > rec.NumRows() || from < 0 {
		return fmt.Errorf("emit of rows [%d, %d) of a %d-row batch", from, to, rec.NumRows())
	}
	in := rec.Column(0).(*array.Int64)
	ts := rec.Column(tsCol).(*array.Int64)
	row := rec.Column(2).(*array.Int64)
	for i := int(from); i < int(to); i++ {
		k := plan.Key{Null: ts.IsNull(i), Input: int(in.Value(i)), Row: row.Value(i)}
		if !k.Null {
			k.Ts = ts.Value(i)
		}
		c.keys = append(c.keys, k)
	}
	return nil
}

// expected returns the keys of all rows in [lo, hi) in key order, their digest and their stored
// positions by chunk ID (chunkID).
func expected(inputs []testInput, lo, hi *plan.Key) ([]plan.Key, verify.Digest, verify.Taken) {
	var keys []plan.Key
	var d verify.Digest
	var h verify.Hasher
	taken := verify.Taken{}
	for j, in := range inputs {
		var rows []int64
		for _, k := range in.keys(j) {
			if plan.InRange(k, lo, hi) {
				keys = append(keys, k)
				rows = append(rows, k.Row)
			}
		}
		rec := in.record(j, rows)
		h.AddRows(&d, rec, 0, rec.NumRows())
		rec.Release()
		p := verify.NewChunkPositions(chunkID(j))
		for _, r := range rows { // one at a time: an independent way of adding them up
			p.AddRange(r, 1)
		}
		taken.Add(p)
	}
	slices.SortFunc(keys, plan.Key.Compare)
	return keys, d, taken
}

// chunkID is the catalog chunk ID the tests give input j.
func chunkID(j int) int64 { return 7000 + 3*int64(j) }

// fullRange lists every input with rows.
func fullRange(inputs []testInput, lo, hi *plan.Key) Range {
	r := Range{Lo: lo, Hi: hi}
	for j, in := range inputs {
		if len(in.ts) == 0 {
			continue
		}
		keys := in.keys(j)
		r.Inputs = append(r.Inputs, j)
		r.First = append(r.First, slices.MinFunc(keys, plan.Key.Compare))
		r.ChunkIDs = append(r.ChunkIDs, chunkID(j))
	}
	return r
}

// picture draws the inputs and the range for failure messages.
func picture(inputs []testInput, r Range) string {
	var b strings.Builder
	for j, in := range inputs {
		fmt.Fprintf(&b, "in%-2d mem-sorted=%-5t batch=%d:", j, in.sortedInMemory, in.batchRows)
		for _, ts := range in.ts {
			if ts == nil {
				b.WriteString(" null")
			} else {
				fmt.Fprintf(&b, " %d", *ts)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "range [%v, %v) inputs %v\n", r.Lo, r.Hi, r.Inputs)
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func randomInputs(r *rand.Rand) []testInput {
	inputs := make([]testInput, 1+r.IntN(7))
	span := int64(1 + r.IntN(30))
	for j := range inputs {
		n := r.IntN(25)
		ts := make([]*int64, n)
		start := r.Int64N(span)
		for i := range ts {
			switch {
			case r.IntN(8) == 0:
			case r.IntN(4) == 0:
				ts[i] = ptr(r.Int64N(span + 3))
			default:
				ts[i] = ptr(start + int64(i/2))
			}
		}
		in := testInput{ts: ts, batchRows: 1 + r.IntN(8)}
		keys := in.keys(j)
		if !slices.IsSortedFunc(keys, plan.Key.Compare) {
			if r.IntN(2) == 0 {
				in.sortedInMemory = true
			} else { // store it sorted instead
				slices.SortFunc(ts, func(a, b *int64) int {
					return plan.Key{Null: a == nil, Ts: deref(a)}.Compare(plan.Key{Null: b == nil, Ts: deref(b)})
				})
			}
		}
		// A sorted input may be handed out by the in-memory path too (Rows = identity).
		in.sortedInMemory = in.sortedInMemory || r.IntN(5) == 0
		inputs[j] = in
	}
	return inputs
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// randomBound is nil, a key of some row, or a key between rows.
func randomBound(r *rand.Rand, inputs []testInput) *plan.Key {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return &plan.Key{Null: r.IntN(3) == 0, Ts: r.Int64N(35) - 2, Input: r.IntN(len(inputs) + 1), Row: r.Int64N(30)}
	}
	j := r.IntN(len(inputs))
	if len(inputs[j].ts) == 0 {
		return nil
	}
	k := inputs[j].keys(j)[r.IntN(len(inputs[j].ts))]
	return &k
}

func TestMergeRandom(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		inputs := randomInputs(r)
		lo, hi := randomBound(r, inputs), randomBound(r, inputs)
		if lo != nil && hi != nil && lo.Compare(*hi) > 0 {
			lo, hi = hi, lo
		}
		rng := fullRange(inputs, lo, hi)
		want, wantDigest, wantTaken := expected(inputs, lo, hi)
		var got collect
		var read verify.Digest
		taken := verify.Taken{}
		counter := &openCounter{}
		err := Merge(ctx, rng, opener(inputs, counter), got.emit, &read, taken)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, picture(inputs, rng))
		}
		if !slices.Equal(got.keys, want) {
			t.Fatalf("seed %d: merged\n  %v\nwant\n  %v\n%s", seed, got.keys, want, picture(inputs, rng))
		}
		if read != wantDigest {
			t.Fatalf("seed %d: read digest %s, want %s\n%s", seed, read, wantDigest, picture(inputs, rng))
		}
		if !maps.Equal(taken, wantTaken) {
			t.Fatalf("seed %d: taken %v, want %v\n%s", seed, taken, wantTaken, picture(inputs, rng))
		}
		if counter.open != 0 || counter.closedTwice {
			t.Fatalf("seed %d: %d sources left open, closed twice: %t", seed, counter.open, counter.closedTwice)
		}
	}
}

// Consecutive ranges that cut the order anywhere give every row exactly once, in order.
func TestMergeAdjacentRanges(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		inputs := randomInputs(r)
		all, total, _ := expected(inputs, nil, nil)
		var cuts []*plan.Key
		for range r.IntN(5) {
			if len(all) > 0 {
				cuts = append(cuts, &all[r.IntN(len(all))])
			}
		}
		slices.SortFunc(cuts, func(a, b *plan.Key) int { return a.Compare(*b) })
		bounds := append(append([]*plan.Key{nil}, cuts...), nil)
		var got collect
		var read verify.Digest
		taken := verify.Taken{}
		for i := 0; i+1 < len(bounds); i++ {
			counter := &openCounter{}
			if err := Merge(ctx, fullRange(inputs, bounds[i], bounds[i+1]), opener(inputs, counter), got.emit, &read, taken); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got.keys, all) || read != total {
			t.Fatalf("seed %d: adjacent ranges merged %d rows (digest %s), want %d (%s)\n%s",
				seed, len(got.keys), read, len(all), total, picture(inputs, fullRange(inputs, nil, nil)))
		}
		// Together the ranges took each input's stored rows 0..n-1 exactly once.
		for j, in := range inputs {
			if want := verify.AllPositions(chunkID(j), int64(len(in.ts))); taken[chunkID(j)] != want {
				t.Fatalf("seed %d: input %d: taken %+v, want rows 0..%d %+v", seed, j, taken[chunkID(j)], len(in.ts)-1, want)
			}
		}
	}
}

// A perfectly ordered topic of 50 inputs keeps at most two sources open at once.
func TestMergeOpensLazily(t *testing.T) {
	inputs := make([]testInput, 50)
	for j := range inputs {
		ts := make([]*int64, 10)
		for i := range ts {
			ts[i] = ptr(int64(j*10 + i))
		}
		inputs[j] = testInput{ts: ts, batchRows: 4}
	}
	counter := &openCounter{}
	var got collect
	var read verify.Digest
	rng := fullRange(inputs, nil, nil)
	if err := Merge(context.Background(), rng, opener(inputs, counter), got.emit, &read, nil); err != nil {
		t.Fatal(err)
	}
	if len(got.keys) != 500 || counter.opened != 50 {
		t.Fatalf("merged %d rows from %d opened inputs", len(got.keys), counter.opened)
	}
	if counter.maxOpen > 2 {
		t.Fatalf("%d sources open at once, want at most 2", counter.maxOpen)
	}
	// A range in the middle opens only the inputs that reach into it.
	counter = &openCounter{}
	lo, hi := &plan.Key{Ts: 200}, &plan.Key{Ts: 230}
	rng = fullRange(inputs, lo, hi)
	got = collect{}
	if err := Merge(context.Background(), rng, opener(inputs, counter), got.emit, &read, nil); err != nil {
		t.Fatal(err)
	}
	if len(got.keys) != 30 || counter.maxOpen > 2 || counter.open != 0 {
		t.Fatalf("middle range: %d rows, %d open at once, %d left open", len(got.keys), counter.maxOpen, counter.open)
	}
}

func TestMergeErrors(t *testing.T) {
	ctx := context.Background()
	inputs := []testInput{
		{ts: []*int64{ptr(int64(1)), ptr(int64(3))}, batchRows: 1},
		{ts: []*int64{ptr(int64(2)), ptr(int64(4))}, batchRows: 1},
	}
	rng := fullRange(inputs, nil, nil)
	var read verify.Digest

	errOpen := errors.New("no such chunk")
	failOpen := func(ctx context.Context, input int) (Source, error) { return nil, errOpen }
	if err := Merge(ctx, rng, failOpen, (&collect{}).emit, &read, nil); !errors.Is(err, errOpen) {
		t.Errorf("open error: %v", err)
	}

	counter := &openCounter{}
	failNext := func(ctx context.Context, input int) (Source, error) {
		s, err := opener(inputs, counter)(ctx, input)
		if input == 1 {
			s.(*memSource).failAt = 2
		}
		return s, err
	}
	if err := Merge(ctx, rng, failNext, (&collect{}).emit, &read, nil); !errors.Is(err, errNext) {
		t.Errorf("Next error: %v", err)
	}
	if counter.open != 0 {
		t.Errorf("%d sources left open after an error", counter.open)
	}

	errEmit := errors.New("writer full")
	counter = &openCounter{}
	failEmit := func(arrow.RecordBatch, int64, int64) error { return errEmit }
	if err := Merge(ctx, rng, opener(inputs, counter), failEmit, &read, nil); !errors.Is(err, errEmit) {
		t.Errorf("emit error: %v", err)
	}
	if counter.open != 0 {
		t.Errorf("%d sources left open after an emit error", counter.open)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	counter = &openCounter{}
	if err := Merge(cctx, rng, opener(inputs, counter), (&collect{}).emit, &read, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}

	bad := rng
	bad.First = bad.First[:1]
	if err := Merge(ctx, bad, opener(inputs, &openCounter{}), (&collect{}).emit, &read, nil); err == nil {
		t.Errorf("first keys of the wrong length accepted")
	}
	bad = rng
	bad.ChunkIDs = nil
	if err := Merge(ctx, bad, opener(inputs, &openCounter{}), (&collect{}).emit, &read, nil); err == nil {
		t.Errorf("chunk IDs of the wrong length accepted")
	}
}
