package plan

import (
	"strings"
	"testing"
)

// TestPassThrough pictures which outputs of a merge plan pass through: an output that is one
// whole input chunk, stored in key order, within the size limit, with row groups within the
// plan's bounds and a page index; every other output is written.
func TestPassThrough(t *testing.T) {
	// indexed makes a fixture's inputs ones the pass-through path may keep: a page index (or
	// small row groups) and row groups of rowGroupRows rows and about their bytes.
	indexed := func(f fixture, rowGroupRows int64, except ...int) fixture {
		for j := range f.inputs {
			in := &f.inputs[j]
			in.WindowReadable = true
			in.MaxRowGroupRows = min(rowGroupRows, in.Rows)
			in.MaxRowGroupBytes = in.MaxRowGroupRows * (in.ArrowBytes / max(in.Rows, 1))
		}
		for _, j := range except {
			f.inputs[j].WindowReadable = false
		}
		return f
	}
	tests := []struct {
		name    string
		f       fixture
		max     int64
		picture string
	}{
		{
			name: "sorted disjoint chunks of more than half the limit each pass through",
			f: indexed(build([]inputSpec{
				{rows: cells(1, 2, 3), bytesPerRow: 10, footer: 5},
				{rows: cells(4, 5, 6), bytesPerRow: 10, footer: 5},
				{rows: cells(7, 8), bytesPerRow: 10, footer: 5},
			}), 2),
			max: 45,
			picture: `
in0   s [1@0:0 .. 3@0:2] |#..| rows=3
in1   s [4@1:0 .. 6@1:2] |.#.| rows=3
in2   s [7@2:0 .. 8@2:1] |..#| rows=2
out0   [-inf, 4@1:0) rows=3 bytes=30 inputs=[0] pass-through
out1   [4@1:0, 7@2:0) rows=3 bytes=30 inputs=[1] pass-through
out2   [7@2:0, +inf) rows=2 bytes=20 inputs=[2] pass-through
`,
		},
		{
			name: "a chunk a window read would fetch too much of is written",
			f: indexed(build([]inputSpec{
				{rows: cells(1, 2, 3), bytesPerRow: 10, footer: 5},
				{rows: cells(4, 5, 6), bytesPerRow: 10, footer: 5},
			}), 2, 1),
			max: 45,
			picture: `
in0   s [1@0:0 .. 3@0:2] |#.| rows=3
in1   s [4@1:0 .. 6@1:2] |.#| rows=3
out0   [-inf, 4@1:0) rows=3 bytes=30 inputs=[0] pass-through
out1   [4@1:0, +inf) rows=3 bytes=30 inputs=[1]
`,
		},
		{
			name: "small chunks joined in one output are written (by the copy path)",
			f: indexed(build([]inputSpec{
				{rows: cells(1, 2), bytesPerRow: 10, footer: 5},
				{rows: cells(3, 4), bytesPerRow: 10, footer: 5},
			}), 2),
			max: 1000,
			picture: `
in0   s [1@0:0 .. 2@0:1] |#| rows=2
in1   s [3@1:0 .. 4@1:1] |#| rows=2
out0   [-inf, +inf) rows=4 bytes=40 inputs=[0 1]
`,
		},
		{
			name: "overlapping chunks, an unsorted one, a chunk cut by the limit: written",
			f: indexed(build([]inputSpec{
				{rows: cells(1, 3, 5), bytesPerRow: 10, footer: 5},
				{rows: cells(2, 4, 6), bytesPerRow: 10, footer: 5},
				{rows: cells(8, 7), bytesPerRow: 10, footer: 5},
				{rows: cells(10, 11, 12, 13, 14, 15), bytesPerRow: 10, footer: 5},
			}), 6),
			max: 45,
			picture: `
in0   s [1@0:0 .. 5@0:2]   |##..| rows=3
in1   s [2@1:0 .. 6@1:2]   |##..| rows=3
in2   u [7@2:1 .. 8@2:0]   |.#..| rows=2
in3   s [10@3:0 .. 15@3:5] |..##| rows=6
out0   [-inf, 5@0:2) rows=4 bytes=40 inputs=[0 1]
out1   [5@0:2, 10@3:0) rows=4 bytes=40 inputs=[0 1 2]
out2   [10@3:0, 14@3:4) rows=4 bytes=40 inputs=[3]
out3   [14@3:4, +inf) rows=2 bytes=20 inputs=[3]
`,
		},
		{
			name: "a chunk not stored in key order is written",
			f: indexed(build([]inputSpec{
				{rows: cells(2, 1, 3), bytesPerRow: 10, footer: 5},
				{rows: cells(4, 5, 6), bytesPerRow: 10, footer: 5},
			}), 3),
			max: 45,
			picture: `
in0   u [1@0:1 .. 3@0:2] |#.| rows=3
in1   s [4@1:0 .. 6@1:2] |.#| rows=3
out0   [-inf, 4@1:0) rows=3 bytes=30 inputs=[0]
out1   [4@1:0, +inf) rows=3 bytes=30 inputs=[1] pass-through
`,
		},
		{
			name: "a chunk whose row groups are larger than the plan's is written",
			f: indexed(build([]inputSpec{
				{rows: cells(1, 2, 3), bytesPerRow: 10, footer: 5},
				{rows: cells(4, 5, 6), bytesPerRow: 10, footer: 5},
			}), 1000),
			max: 45,
			picture: `
in0   s [1@0:0 .. 3@0:2] |#.| rows=3
in1   s [4@1:0 .. 6@1:2] |.#| rows=3
out0   [-inf, 4@1:0) rows=3 bytes=30 inputs=[0]
out1   [4@1:0, +inf) rows=3 bytes=30 inputs=[1]
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			opts := Options{MaxChunkSizeBytes: tc.max}
			if strings.Contains(tc.name, "row groups are larger") {
				opts.MemoryBudgetBytes = 32 * 2 * 20 // row groups of 2 rows of 20 Arrow bytes
			}
			p, err := Compute(f.inputs, f.samples, f.totals, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Picture(), strings.TrimPrefix(tc.picture, "\n"); got != want {
				t.Fatalf("plan:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestPassThroughOnlyInMerges: a rollup (tiered compaction) joins its group's chunks and never
// passes one through, and plans made before the facts were recorded never pass.
func TestPassThroughOnlyInMerges(t *testing.T) {
	f := build([]inputSpec{{rows: cells(1, 2, 3), bytesPerRow: 10, footer: 5}})
	f.inputs[0].WindowReadable, f.inputs[0].MaxRowGroupRows, f.inputs[0].MaxRowGroupBytes = true, 3, 60
	r, err := Rollup(f.inputs, [][]int{{0}}, f.totals, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outputs[0].PassThrough || r.PassThrough(r.Outputs[0]) {
		t.Fatalf("a rollup output passes through:\n%s", r.Picture())
	}
	m, err := Compute(f.inputs, f.samples, f.totals, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Outputs[0].PassThrough {
		t.Fatalf("a sorted indexed chunk alone does not pass through:\n%s", m.Picture())
	}
	f.inputs[0].MaxRowGroupRows = 0 // a plan made before row group rows were recorded
	if m, _ = Compute(f.inputs, f.samples, f.totals, Options{}); m.Outputs[0].PassThrough {
		t.Fatalf("an input without recorded row group rows passes through:\n%s", m.Picture())
	}
}
