package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// cell is one stored row's timestamp_ns.
type cell struct {
	ts   int64
	null bool
}

// N stands for a null timestamp in the table tests' row lists.
const N = math.MinInt64 + 7

func cells(vals ...int64) []cell {
	out := make([]cell, len(vals))
	for i, v := range vals {
		out[i] = cell{ts: v, null: v == N}
	}
	return out
}

// inputSpec describes an input chunk by its stored rows and its bytes.
type inputSpec struct {
	rows        []cell
	bytesPerRow int64 // SizeBytes = FooterBytes + bytesPerRow*rows
	footer      int64
}

// fixture is the catalog facts of a set of inputs plus every row's key, for brute-force checks.
type fixture struct {
	inputs  []Input
	samples [][]Sample // exact: one row per sample
	keys    [][]Key    // keys[j]: input j's keys in sorted order
	totals  Totals
}

func build(specs []inputSpec) fixture {
	var f fixture
	for j, s := range specs {
		keys := make([]Key, len(s.rows))
		for r, c := range s.rows {
			keys[r] = Key{Null: c.null, Input: j, Row: int64(r)}
			if !c.null {
				keys[r].Ts = c.ts
			}
		}
		sorted := slices.IsSortedFunc(keys, Key.Compare)
		slices.SortFunc(keys, Key.Compare)
		in := Input{
			ChunkID:     int64(100 + j),
			ObjectKey:   fmt.Sprintf("tp_X/data/%05d.parquet", j),
			Rows:        int64(len(keys)),
			SizeBytes:   s.footer + s.bytesPerRow*int64(len(keys)),
			FooterBytes: s.footer,
			ArrowBytes:  2 * s.bytesPerRow * int64(len(keys)),
			Sorted:      sorted,
		}
		var samples []Sample
		for _, k := range keys {
			samples = append(samples, Sample{Key: k, Rows: 1})
			f.totals.Rows++
			if k.Null {
				f.totals.TimestampNulls++
				continue
			}
			if f.totals.MinTs == nil || k.Ts < *f.totals.MinTs {
				f.totals.MinTs = ptr(k.Ts)
			}
			if f.totals.MaxTs == nil || k.Ts > *f.totals.MaxTs {
				f.totals.MaxTs = ptr(k.Ts)
			}
		}
		if len(keys) > 0 {
			in.First, in.Last = keys[0], keys[len(keys)-1]
		}
		f.inputs = append(f.inputs, in)
		f.samples = append(f.samples, samples)
		f.keys = append(f.keys, keys)
	}
	return f
}

func ptr[T any](v T) *T { return &v }

// rowBytes is the planner's documented estimate of one row of in: ceil((size-footer)/rows).
func rowBytes(in Input) int64 {
	data := max(in.SizeBytes-in.FooterBytes, 0)
	return (data + in.Rows - 1) / in.Rows
}

// checkExact checks a plan computed from exact samples against a brute-force assignment of every
// row to the output whose range contains it.
func checkExact(t *testing.T, f fixture, p *Plan, opts Options) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nplan:\n%s", append(args, p.Picture())...)
	}
	if len(p.Outputs) == 0 {
		fail("no outputs")
	}
	// Contiguous cover of the whole order.
	if p.Outputs[0].Lo != nil || p.Outputs[len(p.Outputs)-1].Hi != nil {
		fail("first Lo / last Hi must be unbounded")
	}
	for i, o := range p.Outputs {
		if o.Ordinal != i {
			fail("output %d has ordinal %d", i, o.Ordinal)
		}
		if i+1 < len(p.Outputs) {
			next := p.Outputs[i+1].Lo
			if o.Hi == nil || next == nil || o.Hi.Compare(*next) != 0 {
				fail("output %d Hi %v != output %d Lo %v", i, o.Hi, i+1, next)
			}
			if o.Lo != nil && o.Lo.Compare(*o.Hi) >= 0 {
				fail("output %d has an empty range", i)
			}
		}
	}
	// Brute force: every row belongs to exactly one output.
	rows := make([]int64, len(p.Outputs))
	bytes := make([]int64, len(p.Outputs))
	firstBytes := make([]int64, len(p.Outputs)) // bytes of the output's first row in key order
	firstKey := make([]*Key, len(p.Outputs))
	holds := make([]map[int]bool, len(p.Outputs))
	for i := range holds {
		holds[i] = map[int]bool{}
	}
	for j, keys := range f.keys {
		for _, k := range keys {
			owner := -1
			for i, o := range p.Outputs {
				if InRange(k, o.Lo, o.Hi) {
					if owner >= 0 {
						fail("row %s lies in outputs %d and %d", k, owner, i)
					}
					owner = i
				}
			}
			if owner < 0 {
				fail("row %s lies in no output", k)
			}
			rows[owner]++
			bytes[owner] += rowBytes(f.inputs[j])
			holds[owner][j] = true
			if firstKey[owner] == nil || k.Compare(*firstKey[owner]) < 0 {
				firstKey[owner] = ptr(k)
				firstBytes[owner] = rowBytes(f.inputs[j])
			}
		}
	}
	var footer int64
	for _, in := range f.inputs {
		footer = max(footer, in.FooterBytes)
	}
	maxSize := cmp.Or(opts.MaxChunkSizeBytes, DefaultMaxChunkSizeBytes)
	budget := max(maxSize-footer, 1)
	// Separate inputs, pairwise: rows, and a [First, Last] that meets no other input's.
	inputBytes := make([]int64, len(f.inputs))
	separateAt := map[string]int{} // First of a separate input → its position
	for j, in := range f.inputs {
		if in.Rows == 0 {
			continue
		}
		inputBytes[j] = rowBytes(in) * in.Rows
		separate := true
		for i, other := range f.inputs {
			if i != j && other.Rows > 0 && other.First.Compare(in.Last) <= 0 && in.First.Compare(other.Last) <= 0 {
				separate = false
			}
		}
		if separate {
			separateAt[in.First.String()] = j
		}
	}
	fitsWhole := func(j int) bool { return inputBytes[j] <= budget }
	for _, j := range separateAt {
		if !fitsWhole(j) {
			continue
		}
		var in []int
		for i := range p.Outputs {
			if holds[i][j] {
				in = append(in, i)
			}
		}
		if len(in) != 1 {
			fail("separate input %d (%d bytes, budget %d) is split over outputs %v", j, inputBytes[j], budget, in)
		}
	}
	for i, o := range p.Outputs {
		if rows[i] == 0 {
			fail("output %d holds no row", i)
		}
		if o.EstRows != rows[i] || o.EstBytes != bytes[i] {
			fail("output %d: estimated %d rows / %d bytes, brute force %d rows / %d bytes", i, o.EstRows, o.EstBytes, rows[i], bytes[i])
		}
		if o.EstBytes > budget && o.EstRows != 1 {
			fail("output %d: %d bytes over the budget %d with %d rows", i, o.EstBytes, budget, o.EstRows)
		}
		if i+1 < len(p.Outputs) && o.EstBytes+firstBytes[i+1] <= budget {
			// Only at the start of a separate input that fits an output whole and would have
			// overflowed this one.
			j, ok := separateAt[p.Outputs[i+1].Lo.String()]
			if !ok || !fitsWhole(j) || o.EstBytes+inputBytes[j] <= budget {
				fail("output %d (%d bytes) cut early: the next row (%d bytes) fits the budget %d", i, o.EstBytes, firstBytes[i+1], budget)
			}
		}
		// Inputs: exactly those with rows whose [First, Last] meets [Lo, Hi).
		var want []int
		for j, in := range f.inputs {
			meets := in.Rows > 0 && (o.Hi == nil || in.First.Compare(*o.Hi) < 0) && (o.Lo == nil || in.Last.Compare(*o.Lo) >= 0)
			if holds[i][j] && !meets {
				fail("output %d holds rows of input %d outside the input's range", i, j)
			}
			if meets {
				want = append(want, j)
			}
		}
		if !slices.Equal(o.Inputs, want) {
			fail("output %d reads inputs %v, want %v", i, o.Inputs, want)
		}
	}
	if p.Totals != f.totals || p.Version != Version || p.MaxChunkSizeBytes != maxSize {
		fail("header: totals %+v version %d max %d", p.Totals, p.Version, p.MaxChunkSizeBytes)
	}
	// Without a memory budget: batches of about 8 MiB and row groups of about 64 MiB (16 MiB for
	// rows wider than 4 KiB) of the inputs' average Arrow row, within [16, 64 Ki] and [16, 1 Mi]
	// rows (the documented rule, worked out here from the fixture, not by the planner's code).
	var allRows, arrowBytes int64
	for _, in := range f.inputs {
		allRows += in.Rows
		arrowBytes += in.ArrowBytes
	}
	bpr := max(arrowBytes/max(allRows, 1), 1)
	rgBytes := int64(64 << 20)
	if bpr > 4096 {
		rgBytes = 16 << 20
	}
	wantBatch, wantRG := min(max((8<<20)/bpr, 16), 64<<10), min(max(rgBytes/bpr, 16), 1<<20)
	if opts.MemoryBudgetBytes == 0 && (p.BatchRows != wantBatch || p.RowGroupRows != wantRG) {
		fail("batch sizes %d/%d, want %d/%d for %d-byte rows", p.BatchRows, p.RowGroupRows, wantBatch, wantRG, bpr)
	}
}

// TestComputeMemoryBudget: with a memory pool, a batch is at most 1/128 of it and a row group at
// most 1/32 (1/64 for rows wider than 4 KiB), never less than one row.
func TestComputeMemoryBudget(t *testing.T) {
	tests := []struct {
		name            string
		bytesPerRow     int64 // object bytes; the fixture's Arrow rows are twice as wide
		pool            int64
		batch, rowGroup int64
	}{
		{"100-byte rows, 256 MiB", 50, 256 << 20, 20971, 83886},       // 256 MiB/128/100, 256 MiB/32/100
		{"8 KiB rows, 256 MiB", 4096, 256 << 20, 256, 512},            // 256 MiB/128/8 KiB, 256 MiB/64/8 KiB
		{"1 MiB rows, 16 MiB", 512 << 10, 16 << 20, 1, 1},             // less than a row: one row
		{"100-byte rows, no pool", 50, 0, 64 << 10, (64 << 20) / 100}, // the caps without a pool
	}
	for _, tc := range tests {
		f := build([]inputSpec{{rows: cells(1, 2, 3), bytesPerRow: tc.bytesPerRow}})
		p, err := Compute(f.inputs, f.samples, f.totals, Options{MemoryBudgetBytes: tc.pool})
		if err != nil {
			t.Fatal(err)
		}
		if p.BatchRows != tc.batch || p.RowGroupRows != tc.rowGroup {
			t.Errorf("%s: batch %d rows, row group %d rows; want %d and %d", tc.name, p.BatchRows, p.RowGroupRows, tc.batch, tc.rowGroup)
		}
	}
}

func TestComputeTable(t *testing.T) {
	tests := []struct {
		name    string
		inputs  []inputSpec
		max     int64
		picture string
	}{
		{
			name: "ordered inputs fit one output",
			inputs: []inputSpec{
				{rows: cells(10, 11, 12), bytesPerRow: 10, footer: 5},
				{rows: cells(13, 14), bytesPerRow: 10, footer: 5},
			},
			max: 1000,
			picture: `
in0   s [10@0:0 .. 12@0:2] |#| rows=3
in1   s [13@1:0 .. 14@1:1] |#| rows=2
out0   [-inf, +inf) rows=5 bytes=50 inputs=[0 1]
`,
		},
		{
			name: "per-file overhead is paid once per output, one footer kept free",
			inputs: []inputSpec{
				{rows: cells(1, 2), bytesPerRow: 10, footer: 50},
				{rows: cells(3, 4), bytesPerRow: 10, footer: 50},
				{rows: cells(5, 6), bytesPerRow: 10, footer: 50},
			},
			max: 90, // budget 40: four rows
			picture: `
in0   s [1@0:0 .. 2@0:1] |#.| rows=2
in1   s [3@1:0 .. 4@1:1] |#.| rows=2
in2   s [5@2:0 .. 6@2:1] |.#| rows=2
out0   [-inf, 5@2:0) rows=4 bytes=40 inputs=[0 1]
out1   [5@2:0, +inf) rows=2 bytes=20 inputs=[2]
`,
		},
		{
			name: "overlapping and unsorted inputs, equal timestamps, nulls last",
			inputs: []inputSpec{
				{rows: cells(10, 20, 30, 40), bytesPerRow: 10},
				{rows: cells(40, 15, N, 25), bytesPerRow: 10},
				{rows: cells(N, N), bytesPerRow: 10},
			},
			max: 30,
			picture: `
in0   s [10@0:0 .. 40@0:3]     |##..| rows=4
in1   u [15@1:1 .. null@1:2]   |###.| rows=4
in2   s [null@2:0 .. null@2:1] |...#| rows=2
out0   [-inf, 25@1:3) rows=3 bytes=30 inputs=[0 1]
out1   [25@1:3, 40@1:0) rows=3 bytes=30 inputs=[0 1]
out2   [40@1:0, null@2:0) rows=2 bytes=20 inputs=[1]
out3   [null@2:0, +inf) rows=2 bytes=20 inputs=[2]
`,
		},
		{
			// in1 would be split after 3@1:0 and 4@1:1; the cut moves back to its first key.
			name: "a separate input the limit falls in goes whole to the next output",
			inputs: []inputSpec{
				{rows: cells(1, 2), bytesPerRow: 10},
				{rows: cells(3, 4, 5), bytesPerRow: 10},
				{rows: cells(6, 7), bytesPerRow: 10},
			},
			max: 40,
			picture: `
in0   s [1@0:0 .. 2@0:1] |#..| rows=2
in1   s [3@1:0 .. 5@1:2] |.#.| rows=3
in2   s [6@2:0 .. 7@2:1] |..#| rows=2
out0   [-inf, 3@1:0) rows=2 bytes=20 inputs=[0]
out1   [3@1:0, 6@2:0) rows=3 bytes=30 inputs=[1]
out2   [6@2:0, +inf) rows=2 bytes=20 inputs=[2]
`,
		},
		{
			// The same rows, in0 and in1 interleaved: the cut stays where the limit falls.
			name: "overlapping inputs are cut where the limit falls",
			inputs: []inputSpec{
				{rows: cells(1, 3, 5), bytesPerRow: 10},
				{rows: cells(2, 4), bytesPerRow: 10},
				{rows: cells(6, 7), bytesPerRow: 10},
			},
			max: 40,
			picture: `
in0   s [1@0:0 .. 5@0:2] |##| rows=3
in1   s [2@1:0 .. 4@1:1] |#.| rows=2
in2   s [6@2:0 .. 7@2:1] |.#| rows=2
out0   [-inf, 5@0:2) rows=4 bytes=40 inputs=[0 1]
out1   [5@0:2, +inf) rows=3 bytes=30 inputs=[0 2]
`,
		},
		{
			// in1 and in2 share the timestamp 4 but no key, so neither meets the other; the
			// limit falls at in2's first row (a cut at its start already). in3 and in4 overlap:
			// the limit falling in in3 cuts it where it falls.
			name: "inputs sharing a timestamp are separate, overlapping ones are cut as before",
			inputs: []inputSpec{
				{rows: cells(1, 2), bytesPerRow: 10},
				{rows: cells(3, 4), bytesPerRow: 10},
				{rows: cells(4, 5), bytesPerRow: 10},
				{rows: cells(6, 8), bytesPerRow: 10},
				{rows: cells(7, 9), bytesPerRow: 10},
			},
			max: 40,
			picture: `
in0   s [1@0:0 .. 2@0:1] |#..| rows=2
in1   s [3@1:0 .. 4@1:1] |#..| rows=2
in2   s [4@2:0 .. 5@2:1] |.#.| rows=2
in3   s [6@3:0 .. 8@3:1] |.##| rows=2
in4   s [7@4:0 .. 9@4:1] |.##| rows=2
out0   [-inf, 4@2:0) rows=4 bytes=40 inputs=[0 1]
out1   [4@2:0, 8@3:1) rows=4 bytes=40 inputs=[2 3 4]
out2   [8@3:1, +inf) rows=2 bytes=20 inputs=[3 4]
`,
		},
		{
			// Moving the cut back to 3@1:0 would not make in1 whole: it is split where the
			// limit falls, and so is the output it starts.
			name: "a separate input larger than the limit is split where the limit falls",
			inputs: []inputSpec{
				{rows: cells(1, 2), bytesPerRow: 10},
				{rows: cells(3, 4, 5, 6, 7, 8), bytesPerRow: 10},
			},
			max: 40,
			picture: `
in0   s [1@0:0 .. 2@0:1] |#.| rows=2
in1   s [3@1:0 .. 8@1:5] |##| rows=6
out0   [-inf, 5@1:2) rows=4 bytes=40 inputs=[0 1]
out1   [5@1:2, +inf) rows=4 bytes=40 inputs=[1]
`,
		},
		{
			name: "a row larger than the limit gets an output of its own",
			inputs: []inputSpec{
				{rows: cells(1, 2), bytesPerRow: 5},
				{rows: cells(3), bytesPerRow: 500},
				{rows: cells(4, 5), bytesPerRow: 5},
			},
			max: 100,
			picture: `
in0   s [1@0:0 .. 2@0:1] |#..| rows=2
in1   s [3@1:0 .. 3@1:0] |.#.| rows=1
in2   s [4@2:0 .. 5@2:1] |..#| rows=2
out0   [-inf, 3@1:0) rows=2 bytes=10 inputs=[0]
out1   [3@1:0, 4@2:0) rows=1 bytes=500 inputs=[1]
out2   [4@2:0, +inf) rows=2 bytes=10 inputs=[2]
`,
		},
		{
			name: "inputs without rows are read by no output",
			inputs: []inputSpec{
				{rows: nil, bytesPerRow: 10, footer: 7},
				{rows: cells(3, 1), bytesPerRow: 10},
				{rows: nil, bytesPerRow: 10},
			},
			max: 1000,
			picture: `
in0   s (no rows)        |.| rows=0
in1   u [1@1:1 .. 3@1:0] |#| rows=2
in2   s (no rows)        |.| rows=0
out0   [-inf, +inf) rows=2 bytes=20 inputs=[1]
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := build(tc.inputs)
			opts := Options{MaxChunkSizeBytes: tc.max}
			p, err := Compute(f.inputs, f.samples, f.totals, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Picture(), strings.TrimPrefix(tc.picture, "\n"); got != want {
				t.Errorf("plan picture:\n%s\nwant:\n%s", got, want)
			}
			checkExact(t, f, p, opts)
		})
	}
}

// randomSpecs draws up to 8 inputs of up to 30 rows with timestamps from a small range (many
// ties), some nulls and unsorted inputs, and various row and footer sizes.
func randomSpecs(r *rand.Rand) []inputSpec {
	specs := make([]inputSpec, r.IntN(9))
	span := int64(1 + r.IntN(40))
	nullRate := r.Float64() * 0.3
	for j := range specs {
		n := r.IntN(31)
		if r.IntN(6) == 0 {
			n = 0
		}
		start := r.Int64N(span)
		rows := make([]cell, n)
		for i := range rows {
			switch {
			case r.Float64() < nullRate:
				rows[i] = cell{null: true}
			case r.IntN(3) == 0: // disorder
				rows[i] = cell{ts: r.Int64N(span + 5)}
			default:
				rows[i] = cell{ts: start + int64(i)/(1+int64(r.IntN(3)))}
			}
		}
		if r.IntN(2) == 0 { // mostly sorted inputs, as ingestion writes them
			slices.SortStableFunc(rows, func(a, b cell) int {
				return Key{Null: a.null, Ts: a.ts}.Compare(Key{Null: b.null, Ts: b.ts})
			})
		}
		specs[j] = inputSpec{rows: rows, bytesPerRow: 1 + r.Int64N(60), footer: r.Int64N(40)}
	}
	return specs
}

// randomRunSpecs draws up to 12 sorted inputs as ingestion writes a recording: each one's
// timestamps follow the previous one's (separate inputs), some start before the previous one
// ends (overlapping ones), some have no rows; rows and bytes vary so that the limit falls inside
// inputs, between them and inside inputs larger than it.
func randomRunSpecs(r *rand.Rand) []inputSpec {
	specs := make([]inputSpec, r.IntN(13))
	var end int64
	for j := range specs {
		n := 1 + r.IntN(12)
		if r.IntN(8) == 0 {
			n = 0
		}
		start := end + int64(r.IntN(3))
		if r.IntN(4) == 0 {
			start = max(end-int64(r.IntN(6)), 0)
		}
		rows := make([]cell, n)
		for i := range rows {
			rows[i] = cell{ts: start + int64(i)}
		}
		if n > 0 {
			end = max(end, start+int64(n-1))
		}
		specs[j] = inputSpec{rows: rows, bytesPerRow: 1 + r.Int64N(30), footer: r.Int64N(20)}
	}
	return specs
}

// TestComputeRandomSeparateExact: checkExact on recordings of mostly separate inputs, where the
// cut moves back to an input's start most often.
func TestComputeRandomSeparateExact(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5e9a2a7e))
		f := build(randomRunSpecs(r))
		if f.totals.Rows == 0 {
			continue
		}
		opts := Options{MaxChunkSizeBytes: 1 + r.Int64N(400)}
		p, err := Compute(f.inputs, f.samples, f.totals, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkExact(t, f, p, opts) })
	}
}

func TestComputeRandomExact(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		f := build(randomSpecs(r))
		opts := Options{MaxChunkSizeBytes: 1 + r.Int64N(500), GroupSize: r.IntN(4)}
		p, err := Compute(f.inputs, f.samples, f.totals, opts)
		if f.totals.Rows == 0 {
			if !errors.Is(err, ErrNoRows) {
				t.Fatalf("seed %d: no rows: err = %v, want ErrNoRows", seed, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkExact(t, f, p, opts) })
	}
}

// Coarse samples: outputs still cover the order contiguously, cut only at sample keys (also where
// a cut moved back to an input's start), the row estimates add up to the topic's rows and stay
// within the budget except for a single sample.
func TestComputeRandomCoarseSamples(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 0xc0a25e))
		specs := randomSpecs(r)
		if seed%2 == 0 { // mostly separate inputs, where cuts move back to an input's start
			specs = randomRunSpecs(r)
		}
		f := build(specs)
		if f.totals.Rows == 0 {
			continue
		}
		step := 1 + r.IntN(7)
		samples := make([][]Sample, len(f.keys))
		sampleAt := map[Key]int64{} // key → bytes of its sample
		for j, keys := range f.keys {
			for pos := 0; pos < len(keys); pos += step {
				s := Sample{Key: keys[pos], Rows: int64(min(step, len(keys)-pos))}
				samples[j] = append(samples[j], s)
				in := f.inputs[j]
				sampleAt[s.Key] = (max(in.SizeBytes-in.FooterBytes, 0)*s.Rows + in.Rows - 1) / in.Rows
			}
		}
		opts := Options{MaxChunkSizeBytes: 1 + r.Int64N(500)}
		p, err := Compute(f.inputs, samples, f.totals, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var footer int64
		for _, in := range f.inputs {
			footer = max(footer, in.FooterBytes)
		}
		budget := max(opts.MaxChunkSizeBytes-footer, 1)
		var rows int64
		for i, o := range p.Outputs {
			rows += o.EstRows
			if (i == 0) != (o.Lo == nil) || (i == len(p.Outputs)-1) != (o.Hi == nil) {
				t.Fatalf("seed %d: output %d bounds %v..%v\n%s", seed, i, o.Lo, o.Hi, p.Picture())
			}
			if o.Lo != nil {
				if _, ok := sampleAt[*o.Lo]; !ok {
					t.Fatalf("seed %d: output %d starts at %s, not a sample key\n%s", seed, i, o.Lo, p.Picture())
				}
				if prev := p.Outputs[i-1].Hi; prev == nil || prev.Compare(*o.Lo) != 0 {
					t.Fatalf("seed %d: outputs %d and %d are not contiguous\n%s", seed, i-1, i, p.Picture())
				}
			}
			inRange := 0
			for k := range sampleAt {
				if InRange(k, o.Lo, o.Hi) {
					inRange++
				}
			}
			if o.EstBytes > budget && inRange != 1 {
				t.Fatalf("seed %d: output %d is %d bytes, budget %d\n%s", seed, i, o.EstBytes, budget, p.Picture())
			}
		}
		if rows != f.totals.Rows {
			t.Fatalf("seed %d: outputs estimate %d rows, inputs hold %d\n%s", seed, rows, f.totals.Rows, p.Picture())
		}
	}
}

func TestComputeErrors(t *testing.T) {
	if _, err := Compute(nil, nil, Totals{}, Options{}); !errors.Is(err, ErrNoRows) {
		t.Errorf("no inputs: err = %v, want ErrNoRows", err)
	}
	empty := build([]inputSpec{{footer: 10}, {}})
	if _, err := Compute(empty.inputs, empty.samples, empty.totals, Options{}); !errors.Is(err, ErrNoRows) {
		t.Errorf("inputs without rows: err = %v, want ErrNoRows", err)
	}
	f := build([]inputSpec{{rows: cells(1), bytesPerRow: 1}})
	if _, err := Compute(f.inputs, nil, f.totals, Options{}); err == nil || errors.Is(err, ErrNoRows) {
		t.Errorf("missing sample lists: err = %v, want a count mismatch", err)
	}
	// The samples of an input must come in key order: merged otherwise they would cut the
	// global order out of order.
	g := build([]inputSpec{{rows: cells(1, 2, 3), bytesPerRow: 1}, {rows: cells(2, 5), bytesPerRow: 1}})
	g.samples[0][0], g.samples[0][2] = g.samples[0][2], g.samples[0][0]
	if _, err := Compute(g.inputs, g.samples, g.totals, Options{}); err == nil || !strings.Contains(err.Error(), "not in ascending key order") {
		t.Errorf("samples out of order: err = %v, want it refused", err)
	}
}

func TestComputeDefaults(t *testing.T) {
	f := build([]inputSpec{{rows: cells(1, 2, 3), bytesPerRow: 100, footer: 10}})
	p, err := Compute(f.inputs, f.samples, f.totals, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxChunkSizeBytes != DefaultMaxChunkSizeBytes || p.GroupSize != 1 || len(p.Outputs) != 1 {
		t.Fatalf("defaults: max %d group %d outputs %d\n%s", p.MaxChunkSizeBytes, p.GroupSize, len(p.Outputs), p.Picture())
	}
}

// TestAutomaticGroupSize: one output per WriteChunks activity up to MaxGroups activities, then
// as many outputs per group as keep the number of groups at most MaxGroups.
func TestAutomaticGroupSize(t *testing.T) {
	for _, outputs := range []int{1, 7, MaxGroups, MaxGroups + 1, 4096} {
		rows := make([]int64, outputs)
		for i := range rows {
			rows[i] = int64(i)
		}
		f := build([]inputSpec{{rows: cells(rows...), bytesPerRow: 100}})
		p, err := Compute(f.inputs, f.samples, f.totals, Options{MaxChunkSizeBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Outputs) != outputs || p.Groups() > MaxGroups || (outputs <= MaxGroups && p.GroupSize != 1) {
			t.Errorf("%d outputs: got %d outputs, group size %d, %d groups", outputs, len(p.Outputs), p.GroupSize, p.Groups())
		}
	}
}

func TestGroups(t *testing.T) {
	rows := make([]int64, 7)
	for i := range rows {
		rows[i] = int64(i)
	}
	f := build([]inputSpec{{rows: cells(rows...), bytesPerRow: 10}})
	p, err := Compute(f.inputs, f.samples, f.totals, Options{MaxChunkSizeBytes: 10, GroupSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Outputs) != 7 || p.Groups() != 3 {
		t.Fatalf("outputs %d groups %d, want 7 and 3\n%s", len(p.Outputs), p.Groups(), p.Picture())
	}
	var seen []int
	for g := range p.Groups() {
		for _, o := range p.Group(g) {
			seen = append(seen, o.Ordinal)
		}
	}
	if !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Errorf("groups hold ordinals %v", seen)
	}
	if n := len(p.Group(2)); n != 1 {
		t.Errorf("last group has %d outputs, want 1", n)
	}
	if p.Group(3) != nil || p.Group(-1) != nil {
		t.Errorf("out-of-range groups must be nil")
	}
}

func TestBatchSizes(t *testing.T) {
	in := func(rows, arrow int64) Input { return Input{Rows: rows, ArrowBytes: arrow} }
	tests := []struct {
		name            string
		inputs          []Input
		batch, rowGroup int64
	}{
		{"narrow rows hit the caps", []Input{in(1000, 8_000)}, 64 << 10, 1 << 20},
		{"100-byte rows", []Input{in(600, 30_000), in(400, 70_000)}, 64 << 10, (64 << 20) / 100},
		{"4 KiB rows keep 64 MiB row groups", []Input{in(10, 40_960)}, (8 << 20) / 4096, (64 << 20) / 4096},
		{"wide rows take 16 MiB row groups", []Input{in(10, 81_920)}, (8 << 20) / 8192, (16 << 20) / 8192},
		{"huge rows keep the floors", []Input{in(2, 2<<30)}, 16, 16},
		{"no rows", []Input{in(0, 0)}, 64 << 10, 1 << 20},
	}
	for _, tc := range tests {
		b, rg := batchSizes(tc.inputs)
		if b != tc.batch || rg != tc.rowGroup {
			t.Errorf("%s: batchSizes = %d, %d; want %d, %d", tc.name, b, rg, tc.batch, tc.rowGroup)
		}
		rev := slices.Clone(tc.inputs)
		slices.Reverse(rev)
		if b2, rg2 := batchSizes(rev); b2 != b || rg2 != rg {
			t.Errorf("%s: input order changes batch sizes", tc.name)
		}
	}
}

// TestSeparateInputs: separateInputs agrees with a pairwise check of every two inputs with rows
// (closed ranges: a range that ends at another's first key meets it).
func TestSeparateInputs(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5e9a))
		f := build(randomSpecs(r))
		got := separateInputs(f.inputs)
		for j, in := range f.inputs {
			want := in.Rows > 0
			for i, other := range f.inputs {
				if i != j && other.Rows > 0 && other.First.Compare(in.Last) <= 0 && in.First.Compare(other.Last) <= 0 {
					want = false
				}
			}
			if got[j] != want {
				t.Fatalf("seed %d: input %d [%s .. %s] separate = %v, want %v", seed, j, in.First, in.Last, got[j], want)
			}
		}
	}
}
