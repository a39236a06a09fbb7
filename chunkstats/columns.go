package chunkstats

import (
	"cmp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/storeopt/storeopt/catalog"
)

// columnAccumulator collects the statistics of one top-level column.
type columnAccumulator interface {
	add(arr arrow.Array)
	stats() catalog.ColumnStats
	// compare orders two Min or Max values of the column as stats returns them or the catalog
	// reads them back (MergeColumns); ok is false when either is not such a value, and always
	// for a column without min/max.
	compare(a, b any) (c int, ok bool)
}

// newColumnAccumulator picks the accumulator for a column type: min/max for signed integers (as
// int64), unsigned integers (as uint64), float32/float64 (as float64, NaN and ±Inf skipped),
// strings and booleans; null counts only for everything else.
func newColumnAccumulator(t arrow.DataType) columnAccumulator {
	switch t.ID() {
	case arrow.INT8:
		return newNumber(typedValues((*array.Int8).Int8Values), false, toInt64[int8])
	case arrow.INT16:
		return newNumber(typedValues((*array.Int16).Int16Values), false, toInt64[int16])
	case arrow.INT32:
		return newNumber(typedValues((*array.Int32).Int32Values), false, toInt64[int32])
	case arrow.INT64:
		return newNumber(int64Values, false, toInt64[int64])
	case arrow.UINT8:
		return newNumber(typedValues((*array.Uint8).Uint8Values), false, toUint64[uint8])
	case arrow.UINT16:
		return newNumber(typedValues((*array.Uint16).Uint16Values), false, toUint64[uint16])
	case arrow.UINT32:
		return newNumber(typedValues((*array.Uint32).Uint32Values), false, toUint64[uint32])
	case arrow.UINT64:
		return newNumber(typedValues((*array.Uint64).Uint64Values), false, toUint64[uint64])
	case arrow.FLOAT32:
		return newNumber(typedValues((*array.Float32).Float32Values), true, toFloat64[float32])
	case arrow.FLOAT64:
		return newNumber(typedValues((*array.Float64).Float64Values), true, toFloat64[float64])
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return &stringColumn{}
	case arrow.BOOL:
		return &boolColumn{}
	default:
		return &nullsOnlyColumn{}
	}
}

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

func toInt64[T ~int8 | ~int16 | ~int32 | ~int64](v T) any      { return int64(v) }
func toUint64[T ~uint8 | ~uint16 | ~uint32 | ~uint64](v T) any { return uint64(v) }
func toFloat64[T ~float32 | ~float64](v T) any                 { return float64(v) }

var int64Values = typedValues((*array.Int64).Int64Values)

// typedValues adapts a typed array's Values method to any arrow.Array (ok is false for another
// array type).
func typedValues[A any, T number](values func(A) []T) func(arrow.Array) ([]T, bool) {
	return func(arr arrow.Array) ([]T, bool) {
		typed, ok := arr.(A)
		if !ok {
			return nil, false
		}
		return values(typed), true
	}
}

// numberColumn tracks null count and min/max of a numeric column.
type numberColumn[T number] struct {
	values     func(arrow.Array) ([]T, bool)
	finiteOnly bool
	toJSON     func(T) any
	min, max   T
	has        bool
	nulls      int64
}

func newNumber[T number](values func(arrow.Array) ([]T, bool), finiteOnly bool, toJSON func(T) any) *numberColumn[T] {
	return &numberColumn[T]{values: values, finiteOnly: finiteOnly, toJSON: toJSON}
}

func (c *numberColumn[T]) add(arr arrow.Array) {
	c.nulls += int64(arr.NullN())
	vals, ok := c.values(arr)
	if !ok {
		return
	}
	lo, hi, found := scanNumbers(vals, arr, c.finiteOnly)
	if !found {
		return
	}
	if !c.has || lo < c.min {
		c.min = lo
	}
	if !c.has || hi > c.max {
		c.max = hi
	}
	c.has = true
}

func (c *numberColumn[T]) stats() catalog.ColumnStats {
	s := catalog.ColumnStats{NullCount: c.nulls}
	if c.has {
		s.Min, s.Max = c.toJSON(c.min), c.toJSON(c.max)
	}
	return s
}

func (c *numberColumn[T]) compare(a, b any) (int, bool) { return compareNumbers(a, b) }

// scanNumbers returns the min and max of the valid values of arr (whose values slice is vals);
// with finiteOnly, NaN and ±Inf are skipped. found is false when no value qualified.
func scanNumbers[T number](vals []T, arr arrow.Array, finiteOnly bool) (lo, hi T, found bool) {
	noNulls := arr.NullN() == 0
	for i, v := range vals {
		if !noNulls && arr.IsNull(i) {
			continue
		}
		// v-v is 0 for every finite value and NaN for NaN and ±Inf.
		if finiteOnly && v-v != 0 {
			continue
		}
		lo, hi, found = widen(lo, hi, found, v)
	}
	return lo, hi, found
}

// widen returns the range [lo, hi] extended to hold v; found says whether the range held a value
// before (when not, it becomes [v, v]).
func widen[T cmp.Ordered](lo, hi T, found bool, v T) (T, T, bool) {
	switch {
	case !found:
		return v, v, true
	case v < lo:
		return v, hi, true
	case v > hi:
		return lo, v, true
	}
	return lo, hi, true
}

// stringColumn tracks null count and min/max (bytewise order) of a string column.
type stringColumn struct {
	min, max string
	has      bool
	nulls    int64
}

type stringArray interface {
	arrow.Array
	Value(int) string
}

func (c *stringColumn) add(arr arrow.Array) {
	c.nulls += int64(arr.NullN())
	strs, ok := arr.(stringArray)
	if !ok {
		return
	}
	// lo and hi point into arr's buffers; they are copied only when they become the column's.
	var lo, hi string
	found := false
	for i := range strs.Len() {
		if strs.IsNull(i) {
			continue
		}
		lo, hi, found = widen(lo, hi, found, strs.Value(i))
	}
	if !found {
		return
	}
	if !c.has || lo < c.min {
		c.min = strings.Clone(lo)
	}
	if !c.has || hi > c.max {
		c.max = strings.Clone(hi)
	}
	c.has = true
}

func (c *stringColumn) stats() catalog.ColumnStats {
	s := catalog.ColumnStats{NullCount: c.nulls}
	if c.has {
		s.Min, s.Max = c.min, c.max
	}
	return s
}

func (c *stringColumn) compare(a, b any) (int, bool) { return compareAs[string](a, b, strings.Compare) }

// boolColumn tracks null count and min/max (false < true) of a boolean column.
type boolColumn struct {
	seenFalse, seenTrue bool
	nulls               int64
}

func (c *boolColumn) add(arr arrow.Array) {
	c.nulls += int64(arr.NullN())
	bools, ok := arr.(*array.Boolean)
	if !ok || (c.seenTrue && c.seenFalse) {
		return
	}
	for i := range bools.Len() {
		if bools.IsNull(i) {
			continue
		}
		if bools.Value(i) {
			c.seenTrue = true
		} else {
			c.seenFalse = true
		}
		if c.seenTrue && c.seenFalse {
			return
		}
	}
}

func (c *boolColumn) stats() catalog.ColumnStats {
	s := catalog.ColumnStats{NullCount: c.nulls}
	if c.seenFalse || c.seenTrue {
		s.Min, s.Max = !c.seenFalse, c.seenTrue
	}
	return s
}

func (c *boolColumn) compare(a, b any) (int, bool) {
	return compareAs(a, b, func(x, y bool) int {
		switch {
		case x == y:
			return 0
		case y:
			return -1
		}
		return 1
	})
}

// compareAs orders a and b by order when both are of type T.
func compareAs[T any](a, b any, order func(x, y T) int) (int, bool) {
	x, ok := a.(T)
	y, ok2 := b.(T)
	if !ok || !ok2 {
		return 0, false
	}
	return order(x, y), true
}

// nullsOnlyColumn counts nulls of a column without min/max (binary, nested and other types).
type nullsOnlyColumn struct{ nulls int64 }

func (c *nullsOnlyColumn) add(arr arrow.Array) { c.nulls += int64(arr.NullN()) }
func (c *nullsOnlyColumn) stats() catalog.ColumnStats {
	return catalog.ColumnStats{NullCount: c.nulls}
}
func (c *nullsOnlyColumn) compare(a, b any) (int, bool) { return 0, false }
