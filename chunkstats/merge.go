package chunkstats

import (
	"cmp"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/storeopt/storeopt/catalog"
)

// MergeColumns returns the column statistics of a chunk holding all the rows of several chunks
// of the given schema from theirs (parts, one per chunk): what an Accumulator would compute over
// all those rows, when each part is what an Accumulator computed over its rows, as Result returns
// it or as the catalog reads it back (catalog.StoredColumnStats). Per column of the schema:
// NullCount is the parts' sum, MaxValueBytes their largest, Min the smallest of the parts' Min and
// Max the largest of their Max, in the column's order as the Accumulator keeps it (signed and
// unsigned integers and floats by value, whether a value is an int64, a uint64 or a float64;
// strings bytewise; false before true). The value returned is the part's own, so merged
// statistics read back from the catalog are the parts' read back. Columns of types the
// Accumulator keeps no min/max of (binary, nested, temporal types such as timestamp[ns]) get
// none. Without parts every column is empty, as for a chunk without rows. MaxValueBytes of
// string_view and dictionary columns are estimates per batch (ArrowSizeBits), so theirs is the
// largest of the parts' estimates, not what one Accumulator over all rows would estimate.
//
// The merged column keeps only what every part supports, so that it never claims a bound a part
// might break:
//   - a column missing from a part is missing from the result (nothing is known of that part's
//     values, not even its nulls); fields of parts that are not in the schema are ignored;
//   - MaxValueBytes is 0 (not recorded) when a part's is 0 (not recorded, or a part without rows);
//   - a part without Min (or Max) has no values to bound the merged Min (Max) when it has neither:
//     for numbers and booleans the Accumulator always records both when a value qualifies (a float
//     column whose values are all null, NaN or infinite has none). For strings the catalog drops
//     a Min or Max it cannot hold (invalid UTF-8, a NUL byte), so a string part without both
//     holds no value only when its MaxValueBytes is that of an empty string (an empty string
//     would have been its Min): then every value of it is null. Otherwise (a part with one of
//     the two, a string part with longer values, a string_view column, whose sizes do not tell)
//     the merged Min (Max) is unset;
//   - a Min or Max that is not a value of the column's type (a string in an integer column)
//     leaves the merged one unset.
func MergeColumns(schema *arrow.Schema, parts []map[string]catalog.ColumnStats) map[string]catalog.ColumnStats {
	out := make(map[string]catalog.ColumnStats, schema.NumFields())
	for _, f := range schema.Fields() {
		if cs, ok := mergeColumn(f, parts); ok {
			out[f.Name] = cs
		}
	}
	return out
}

// mergeColumn merges the statistics of column f of the parts; ok is false when a part lacks it.
func mergeColumn(f arrow.Field, parts []map[string]catalog.ColumnStats) (merged catalog.ColumnStats, ok bool) {
	order := newColumnAccumulator(f.Type)
	lo, hi := bound{order: order, below: true}, bound{order: order}
	maxValueKnown := true
	for _, p := range parts {
		cs, ok := p[f.Name]
		if !ok {
			return catalog.ColumnStats{}, false
		}
		merged.NullCount += cs.NullCount
		if cs.MaxValueBytes <= 0 {
			maxValueKnown = false
		}
		merged.MaxValueBytes = max(merged.MaxValueBytes, cs.MaxValueBytes)
		if cs.Min == nil && cs.Max == nil && holdsNoValue(f.Type, cs) {
			continue
		}
		lo.add(cs.Min)
		hi.add(cs.Max)
	}
	if !maxValueKnown {
		merged.MaxValueBytes = 0
	}
	merged.Min, merged.Max = lo.value(), hi.value()
	return merged, true
}

// bound is the merged Min (below) or Max of a column over the parts added so far.
type bound struct {
	order   columnAccumulator // its compare orders the values
	below   bool
	v       any
	unknown bool // a part gave no value or one that is not the column's
}

func (b *bound) add(v any) {
	if b.unknown {
		return
	}
	if v == nil {
		b.unknown = true
		return
	}
	if b.v == nil {
		_, ok := b.order.compare(v, v)
		b.v, b.unknown = v, !ok
		return
	}
	c, ok := b.order.compare(v, b.v)
	switch {
	case !ok:
		b.unknown = true
	case b.below && c < 0, !b.below && c > 0:
		b.v = v
	}
}

func (b *bound) value() any {
	if b.unknown {
		return nil
	}
	return b.v
}

// holdsNoValue reports whether the statistics cs of a part, which has neither Min nor Max, show
// that no value of the part qualified for them (see MergeColumns).
func holdsNoValue(t arrow.DataType, cs catalog.ColumnStats) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		empty := emptyStringBytes()[t.ID()]
		return cs.MaxValueBytes > 0 && cs.MaxValueBytes <= empty
	case arrow.STRING_VIEW:
		return false
	}
	return true
}

// emptyStringBytes is the MaxValueBytes of a string and a large string column whose values are
// all empty (as Accumulator.Result records it): one offset and one validity bit. A value of one
// byte or more, any a column's Min or Max could be dropped for, is larger.
var emptyStringBytes = sync.OnceValue(func() map[arrow.Type]int64 {
	sizes := map[arrow.Type]int64{}
	for _, t := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString} {
		b := array.NewBuilder(memory.DefaultAllocator, t)
		b.AppendEmptyValue()
		arr := b.NewArray()
		sizes[t.ID()] = max((MaxValueBits(arr)+7)/8, 1)
		arr.Release()
		b.Release()
	}
	return sizes
})

// compareNumbers orders two numbers of the statistics exactly, each an int64, a uint64 or a
// finite float64 (a NaN or any other value: ok is false).
func compareNumbers(a, b any) (c int, ok bool) {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y), true
		case uint64:
			if x < 0 {
				return -1, true
			}
			return cmp.Compare(uint64(x), y), true
		case float64:
			return compareFloat(x, y)
		}
	case uint64:
		switch y := b.(type) {
		case int64:
			c, ok := compareNumbers(b, a)
			return -c, ok
		case uint64:
			return cmp.Compare(x, y), true
		case float64:
			return compareFloat(x, y)
		}
	case float64:
		switch y := b.(type) {
		case float64:
			if math.IsNaN(x) || math.IsNaN(y) {
				return 0, false
			}
			return cmp.Compare(x, y), true
		case int64, uint64:
			c, ok := compareNumbers(b, a)
			return -c, ok
		}
	}
	return 0, false
}

// compareFloat orders an integer and a float64 exactly (converting the integer to float64 would
// round it above 2^53).
func compareFloat[T int64 | uint64](i T, f float64) (int, bool) {
	lowest, above := -0x1p63, 0x1p63 // the float64 range holding every T (above excluded)
	if T(0)-1 > 0 {                  // unsigned
		lowest, above = 0, 0x1p64
	}
	switch {
	case math.IsNaN(f):
		return 0, false
	case f < lowest:
		return 1, true
	case f >= above:
		return -1, true
	}
	whole := math.Trunc(f)
	if c := cmp.Compare(i, T(whole)); c != 0 {
		return c, true
	}
	return cmp.Compare(whole, f), true
}
