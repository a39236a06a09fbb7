package verify

import (
	"errors"
	"strings"
	"testing"
)

// goodOutputs are three consistent output chunks: timestamps 10..20, 20..30, then 35..40 with two
// null timestamps at the end, taken from two input chunks: chunk 11 (7 rows: 0..4 to output 0,
// 5..6 to output 1) and chunk 12 (5 rows: 3 and 0 to output 1, 4, 2 and 1 to output 2).
func goodOutputs() (Expected, []OutputFacts) {
	d := func(rows int64, sum uint64) Digest { return Digest{Rows: rows, Sum: sum} }
	outs := []OutputFacts{
		{Ordinal: 0, Rows: 5, MinTs: ptr(int64(10)), MaxTs: ptr(int64(20)), Read: d(5, 1), Written: d(5, 1),
			Taken: taken(rowsOf(11, 0, 1, 2, 3, 4))},
		{Ordinal: 1, Rows: 4, MinTs: ptr(int64(20)), MaxTs: ptr(int64(30)), Read: d(4, 2), Written: d(4, 2),
			Taken: taken(rowsOf(11, 5, 6), rowsOf(12, 3, 0))},
		{Ordinal: 2, Rows: 3, TimestampNulls: 2, MinTs: ptr(int64(35)), MaxTs: ptr(int64(40)), Read: d(3, 3), Written: d(3, 3),
			Taken: taken(rowsOf(12, 4, 2, 1))},
	}
	inputs := []InputChunk{{ID: 11, Key: "tp_A/data/00000.parquet", Rows: 7}, {ID: 12, Key: "tp_A/data/00001.parquet", Rows: 5}}
	for i := range outs {
		outs[i].Footer = footer()
	}
	return Expected{Outputs: 3, Rows: 12, TimestampNulls: 2, MinTs: ptr(int64(10)), MaxTs: ptr(int64(40)), Inputs: inputs, Footer: footer()}, outs
}

// footer is a footer digest (any bytes: Check compares them).
func footer() []byte { return []byte{0xf0, 0x07, 0xe4} }

// rowsOf returns the positions of the given stored rows of chunk id.
func rowsOf(id int64, rows ...int64) ChunkPositions {
	p := NewChunkPositions(id)
	p.AddRows(rows)
	return p
}

func taken(ps ...ChunkPositions) Taken {
	t := Taken{}
	for _, p := range ps {
		t.Add(p)
	}
	return t
}

func TestCheckAccepts(t *testing.T) {
	want, outs := goodOutputs()
	if err := Check(want, outs); err != nil {
		t.Fatalf("consistent outputs refused: %v", err)
	}
	// A last chunk of null timestamps only, from a third input chunk; an input chunk without
	// rows, which no output reads.
	want.Outputs, want.Rows, want.TimestampNulls = 4, 14, 4
	want.Inputs = append(want.Inputs, InputChunk{ID: 13, Key: "tp_A/data/00002.parquet", Rows: 2},
		InputChunk{ID: 14, Key: "tp_A/data/00003.parquet"})
	outs = append(outs, OutputFacts{Ordinal: 3, Rows: 2, TimestampNulls: 2, Read: Digest{Rows: 2}, Written: Digest{Rows: 2},
		Taken: taken(rowsOf(13, 1, 0)), Footer: footer()})
	if err := Check(want, outs); err != nil {
		t.Fatalf("trailing all-null chunk refused: %v", err)
	}
	// A topic whose timestamps are all null.
	allNull := []OutputFacts{{Ordinal: 0, Rows: 3, TimestampNulls: 3, Read: Digest{3, 9}, Written: Digest{3, 9},
		Taken: taken(rowsOf(5, 2, 1, 0)), Footer: footer()}}
	if err := Check(Expected{Outputs: 1, Rows: 3, TimestampNulls: 3, Inputs: []InputChunk{{ID: 5, Rows: 3}}, Footer: footer()}, allNull); err != nil {
		t.Fatalf("all-null topic refused: %v", err)
	}
}

func TestCheckReportsMismatches(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(want *Expected, outs []OutputFacts) []OutputFacts
		words  []string // every one must appear in the message
	}{
		{"an output chunk too few", func(w *Expected, o []OutputFacts) []OutputFacts { return o[:2] },
			[]string{"2 output chunks staged, 3 planned"}},
		{"missing ordinal", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[1].Ordinal = 2
			o[2].Ordinal = 3
			return o
		}, []string{"output chunk 1 missing", "ordinal 2"}},
		{"row count of a chunk", func(w *Expected, o []OutputFacts) []OutputFacts { o[1].Rows = 5; return o },
			[]string{"output chunk 1", "5 rows", "4 read", "4 encoded"}},
		{"rows lost between decoding and encoding", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[0].Written.Rows = 4
			return o
		}, []string{"output chunk 0", "5 rows", "5 read", "4 encoded"}},
		{"content digest", func(w *Expected, o []OutputFacts) []OutputFacts { o[2].Written.Sum = 99; return o },
			[]string{"output chunk 2", "digest", o3Read(), "3/0000000000000063"}},
		{"total rows against the replaced chunks", func(w *Expected, o []OutputFacts) []OutputFacts { w.Rows = 13; return o },
			[]string{"the 2 input chunks hold 12 rows, the plan's totals say 13"}},
		{"a replaced chunk the plan left out (its totals too)", func(w *Expected, o []OutputFacts) []OutputFacts {
			w.Inputs = append(w.Inputs, InputChunk{ID: 13, Key: "tp_A/data/00002.parquet", Rows: 4})
			return o
		}, []string{"input chunk tp_A/data/00002.parquet: 0 rows taken by the output chunks, 4 in the chunk"}},
		{"row taken twice and another by no output, inside one input chunk", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[1].Taken = taken(rowsOf(11, 4, 6), rowsOf(12, 3, 0)) // row 4 also in output 0, row 5 nowhere
			return o
		}, []string{"input chunk tp_A/data/00000.parquet: 7 rows taken by the output chunks, as many as the chunk holds, " +
			"but not each of its rows 0..6 exactly once (a row taken twice, another by no output)"}},
		{"row taken twice in one input chunk, another skipped in a second", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[1].Taken = taken(rowsOf(11, 4, 5, 6), rowsOf(12, 3)) // chunk 11 row 4 twice, chunk 12 row 0 nowhere
			return o
		}, []string{"input chunk tp_A/data/00000.parquet: 8 rows taken by the output chunks, 7 in the chunk",
			"input chunk tp_A/data/00001.parquet: 4 rows taken by the output chunks, 5 in the chunk"}},
		{"rows taken from a chunk the plan does not read", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[2].Taken = taken(rowsOf(12, 4, 2), rowsOf(99, 0))
			return o
		}, []string{"output chunk 2 took 1 rows of chunk ID 99, which the optimization does not replace"}},
		{"taken rows disagree with the chunk's rows", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[0].Taken = taken(rowsOf(11, 0, 1, 2, 3))
			return o
		}, []string{"output chunk 0: 5 rows, but 4 taken from its input chunks"}},
		{"no taken rows recorded", func(w *Expected, o []OutputFacts) []OutputFacts {
			for i := range o {
				o[i].Taken = nil
			}
			return o
		}, []string{"output chunk 0: 5 rows, but 0 taken"}},
		{"null count", func(w *Expected, o []OutputFacts) []OutputFacts { w.TimestampNulls = 1; return o },
			[]string{"2 null timestamps written, 1 in the input chunks"}},
		{"min timestamp", func(w *Expected, o []OutputFacts) []OutputFacts { w.MinTs = ptr(int64(9)); return o },
			[]string{"timestamp range written [10, 40], input [9, 40]"}},
		{"max timestamp", func(w *Expected, o []OutputFacts) []OutputFacts { w.MaxTs = ptr(int64(41)); return o },
			[]string{"[10, 40]", "[10, 41]"}},
		{"timestamps where the input has none", func(w *Expected, o []OutputFacts) []OutputFacts {
			w.MinTs, w.MaxTs = nil, nil
			return o
		}, []string{"input [none, none]"}},
		{"chunks out of order", func(w *Expected, o []OutputFacts) []OutputFacts { o[1].MinTs = ptr(int64(19)); return o },
			[]string{"output chunk 1 starts at 19", "previous chunk's last timestamp 20"}},
		{"footer of an output", func(w *Expected, o []OutputFacts) []OutputFacts { o[1].Footer = []byte{1}; return o },
			[]string{"output chunk 1: footer 01 differs from the inputs' footer f007e4"}},
		{"no footer in the plan", func(w *Expected, o []OutputFacts) []OutputFacts { w.Footer = nil; return o },
			[]string{"output chunk 0: footer f007e4 differs from the inputs' footer"}},
		{"non-null timestamps after nulls", func(w *Expected, o []OutputFacts) []OutputFacts {
			o[1].TimestampNulls = 1
			w.TimestampNulls = 3
			return o
		}, []string{"output chunk 2 has non-null timestamps after a chunk with null timestamps"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, outs := goodOutputs()
			outs = tc.mutate(&want, outs)
			err := Check(want, outs)
			var me *MismatchError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *MismatchError", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "verification failed: ") {
				t.Errorf("message %q lacks the prefix", msg)
			}
			for _, w := range tc.words {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
		})
	}
}

func o3Read() string { return Digest{Rows: 3, Sum: 3}.String() }
