package policy

import (
	"fmt"
	"strings"
)

// ChunkFacts is what the selection of a compaction knows of one chunk: catalog facts only, no
// I/O (selection happens before any chunk is scanned, and only the selected chunks are).
type ChunkFacts struct {
	ChunkID   int64
	Level     Level
	Ordinal   int
	SizeBytes int64
	Rows      int64
	MinTs     *int64 // smallest non-null timestamp_ns; nil when none
	MaxTs     *int64
	Nulls     int64 // rows with a null timestamp_ns
	// Rollup is true for the output of a tiered compaction (its blocks name their sources): it
	// is never joined again, only merged into the sorted run by a leveled compaction.
	Rollup bool
}

// Kind says how a plan's outputs are made from its inputs.
type Kind string

const (
	// KindMerge: the k-way merge of the inputs in global key order, cut into output chunks by
	// key ranges (full and leveled compactions: L1 outputs).
	KindMerge Kind = "merge"
	// KindConcatenate: each output joins a run of neighbouring inputs, each input's rows sorted
	// into block(s) of their own, in input order (tiered compaction, Qbeast rollup: L0 outputs).
	KindConcatenate Kind = "concatenate"
)

// Selection is which chunks a compaction reads and where its outputs go. Positions index the
// chunk list given to Select (catalog order).
type Selection struct {
	Policy Policy // the policy applied (never Auto)
	Kind   Kind
	// Inputs are the positions of the chunks read, in catalog order; empty when there is
	// nothing to do.
	Inputs []int
	// Groups (KindConcatenate) are the inputs of each output: runs of neighbouring L0 chunks.
	Groups [][]int
	// L1From is the ordinal the first output takes in the sorted run (KindMerge): the ordinal of
	// the first replaced L1 chunk, or where the outputs are inserted.
	L1From int
	// L1FirstKept is the ordinal of the first L1 chunk kept after the replaced ones (-1: none):
	// the commit moves it and the chunks after it behind the outputs.
	L1FirstKept int
	// Before and After bound the outputs of a leveled compaction: the largest timestamp of the
	// kept L1 chunks before them and the smallest of those after (nil: no such chunk or no
	// timestamp). AfterRows is true when kept chunks follow at all; AfterHasNonNull when one of
	// them has a non-null timestamp (outputs with null timestamps must then not exist).
	Before, After   *int64
	AfterRows       bool
	AfterHasNonNull bool
}

// Empty reports whether the selection has nothing to do.
func (s Selection) Empty() bool { return len(s.Inputs) == 0 }

// SelectOptions configure Select.
type SelectOptions struct {
	MaxChunkSizeBytes int64 // target size of one output chunk; 0 = DefaultMaxChunkSizeBytes
	// Live: the topic is still being recorded (not finalized). A leveled compaction of a live
	// topic merges the run's small last chunk only while that is cheap (selectLeveled).
	Live bool
}

// tsBound is a position on the timestamp axis where null timestamps sort after every value.
type tsBound struct {
	null bool
	ts   int64
}

func (b tsBound) less(o tsBound) bool {
	if b.null || o.null {
		return !b.null && o.null
	}
	return b.ts < o.ts
}

// span returns the closed timestamp range of a chunk (nulls last); ok is false for a chunk
// without rows.
func span(c ChunkFacts) (lo, hi tsBound, ok bool) {
	if c.Rows == 0 {
		return tsBound{}, tsBound{}, false
	}
	lo, hi = tsBound{null: true}, tsBound{null: true}
	if c.MinTs != nil {
		lo = tsBound{ts: *c.MinTs}
	}
	if c.Nulls == 0 && c.MaxTs != nil {
		hi = tsBound{ts: *c.MaxTs}
	}
	return lo, hi, true
}

// Picture draws the selection for tests and logs: one line per chunk in catalog order with its
// level, ordinal, size and time range, "*" when it is read, and the output group it joins
// (concatenate), then the L1 placement of the outputs (merge).
func (s Selection) Picture(chunks []ChunkFacts) string {
	var b strings.Builder
	read := map[int]bool{}
	for _, i := range s.Inputs {
		read[i] = true
	}
	group := map[int]int{}
	for g, in := range s.Groups {
		for _, i := range in {
			group[i] = g
		}
	}
	fmt.Fprintf(&b, "%s %s\n", s.Policy, s.Kind)
	for i, c := range chunks {
		mark := " "
		if read[i] {
			mark = "*"
		}
		rng := "(no rows)"
		if lo, hi, ok := span(c); ok {
			rng = "[" + boundString(lo) + " .. " + boundString(hi) + "]"
		}
		fmt.Fprintf(&b, "%s %s#%d size=%d %s", mark, c.Level, c.Ordinal, c.SizeBytes, rng)
		if g, ok := group[i]; ok {
			fmt.Fprintf(&b, " -> out%d", g)
		}
		b.WriteString("\n")
	}
	if s.Kind == KindMerge && !s.Empty() {
		fmt.Fprintf(&b, "outputs at L1#%d", s.L1From)
		if s.L1FirstKept >= 0 {
			fmt.Fprintf(&b, ", kept from L1#%d", s.L1FirstKept)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func boundString(b tsBound) string {
	if b.null {
		return "null"
	}
	return fmt.Sprint(b.ts)
}
