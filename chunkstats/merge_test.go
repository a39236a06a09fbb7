package chunkstats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
)

// mergeSchema has a column of every kind of statistics the Accumulator keeps, and some it keeps
// none of; no string_view or dictionary column, whose MaxValueBytes are estimates per batch (see
// ArrowSizeBits) that no merge can reproduce.
var mergeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "when", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
	{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

// pick returns one of vals.
func pick[T any](r *rand.Rand, vals ...T) T { return vals[r.IntN(len(vals))] }

// randomBatch builds n rows of mergeSchema: values from small ranges (ties) and the types'
// extremes (uint64 above the int64 range, float64 beyond 2^53 and 1e21, integral floats, -0,
// NaN and infinities), each column null at its own rate, up to all its rows.
func randomBatch(r *rand.Rand, n int, nullRate []float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, mergeSchema)
	defer b.Release()
	strs := []string{"", "a", "b", "ab", "é", "z", "zz", "\u4e16", "Z"}
	for i := range n {
		for c, f := range mergeSchema.Fields() {
			fb := b.Field(c)
			if f.Nullable && r.Float64() < nullRate[c] {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(pick(r, int64(i), r.Int64N(100)-50, math.MinInt64, math.MaxInt64, 1<<53+1))
			case *array.Int8Builder:
				fb.Append(pick(r, int8(r.IntN(10)), math.MinInt8, math.MaxInt8))
			case *array.Int16Builder:
				fb.Append(pick(r, int16(r.IntN(10)-5), math.MinInt16, math.MaxInt16))
			case *array.Int32Builder:
				fb.Append(pick(r, int32(r.IntN(10)-5), math.MinInt32, math.MaxInt32))
			case *array.Uint8Builder:
				fb.Append(pick(r, uint8(r.IntN(10)), math.MaxUint8))
			case *array.Uint16Builder:
				fb.Append(pick(r, uint16(r.IntN(10)), math.MaxUint16))
			case *array.Uint32Builder:
				fb.Append(pick(r, uint32(r.IntN(10)), math.MaxUint32))
			case *array.Uint64Builder:
				fb.Append(pick(r, uint64(r.IntN(10)), math.MaxInt64, 1<<63, 1<<63+1, 1<<63+4096, math.MaxUint64-1, math.MaxUint64))
			case *array.Float32Builder:
				fb.Append(pick(r, float32(r.IntN(10)-5)/4, float32(math.NaN()), float32(math.Inf(1)), math.MaxFloat32, -math.SmallestNonzeroFloat32, 3))
			case *array.Float64Builder:
				fb.Append(pick(r, float64(r.IntN(10)-5)/4, math.NaN(), math.Inf(-1), math.Inf(1), 3, math.Copysign(0, -1),
					1<<53+2, 1e21, -1e300, 0x1p63, 0x1p64, 1.5e-7))
			case *array.StringBuilder:
				fb.Append(pick(r, strs...))
			case *array.LargeStringBuilder:
				fb.Append(pick(r, strs...))
			case *array.BooleanBuilder:
				fb.Append(r.IntN(3) == 0)
			case *array.BinaryBuilder:
				fb.Append(make([]byte, r.IntN(5)))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(r.Int64N(1000)))
			case *array.ListBuilder:
				fb.Append(true)
				for range r.IntN(3) {
					fb.ValueBuilder().(*array.Int32Builder).Append(r.Int32())
				}
			default:
				panic(f.Name)
			}
		}
	}
	return b.NewRecordBatch()
}

// statsOf returns the column statistics an Accumulator computes over rows [from, to) of rec,
// added in batches of random sizes.
func statsOf(t *testing.T, r *rand.Rand, rec arrow.RecordBatch, from, to int64) map[string]catalog.ColumnStats {
	t.Helper()
	acc, err := NewAccumulator(mergeSchema)
	require.NoError(t, err)
	for lo := from; lo < to; {
		hi := min(to, lo+1+r.Int64N(to-lo))
		s := rec.NewSlice(lo, hi)
		acc.Add(s)
		s.Release()
		lo = hi
	}
	require.NoError(t, acc.Err())
	return acc.Result().Columns
}

func stored(t *testing.T, cols map[string]catalog.ColumnStats) map[string]catalog.ColumnStats {
	t.Helper()
	s, err := catalog.StoredColumnStats(cols)
	require.NoError(t, err)
	return s
}

// TestMergeColumnsAgreesWithTheAccumulator: random rows split into parts of at least one row;
// the merge of the parts' statistics is what the Accumulator computes over all the rows, both as
// Result returns them and through the catalog's round trip (every part read back, and the whole
// read back).
func TestMergeColumnsAgreesWithTheAccumulator(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x3e4ce))
		rates := make([]float64, mergeSchema.NumFields())
		for c := range rates {
			rates[c] = pick(r, 0, 0.1, 0.5, 0.9, 1)
		}
		n := 1 + r.IntN(60)
		rec := randomBatch(r, n, rates)
		cuts := []int64{0}
		for at := int64(1); at < int64(n); at++ {
			if r.IntN(8) == 0 {
				cuts = append(cuts, at)
			}
		}
		cuts = append(cuts, int64(n))
		var raw, read []map[string]catalog.ColumnStats
		for i := 1; i < len(cuts); i++ {
			part := statsOf(t, r, rec, cuts[i-1], cuts[i])
			raw = append(raw, part)
			read = append(read, stored(t, part))
		}
		whole := statsOf(t, r, rec, 0, int64(n))
		rec.Release()
		require.Equal(t, whole, MergeColumns(mergeSchema, raw), "seed %d, %d parts: as Result returns them", seed, len(raw))
		require.Equal(t, stored(t, whole), MergeColumns(mergeSchema, read), "seed %d, %d parts: read back", seed, len(read))
	}
}

// TestMergeColumnsKeepsOnlyWhatEveryPartSupports: where a part does not tell a bound, the merged
// column has none; where its missing bound only means it holds no value (nulls, NaN), the merge
// is still the Accumulator's.
func TestMergeColumnsKeepsOnlyWhatEveryPartSupports(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	// read returns the statistics of rows (JSON) as the catalog reads them back.
	read := func(rows string) map[string]catalog.ColumnStats {
		acc, err := NewAccumulator(schema)
		require.NoError(t, err)
		acc.Add(recordFromJSON(t, schema, rows))
		return stored(t, acc.Result().Columns)
	}
	some := read(`[{"timestamp_ns": 1, "s": "m", "sv": "m", "f": 2.5}, {"timestamp_ns": 2, "s": "c", "sv": "c", "f": 7}]`)
	nulls := read(`[{"timestamp_ns": 3, "s": null, "sv": null, "f": null}]`)
	nan := read(`[{"timestamp_ns": 4, "s": "d", "sv": "d", "f": "NaN"}]`)
	nul := read(`[{"timestamp_ns": 5, "s": "\u0000", "sv": "\u0000", "f": 1}]`) // its min and max: a NUL byte
	nulMin := read(`[{"timestamp_ns": 6, "s": "\u0000a", "sv": "\u0000a", "f": 1}, {"timestamp_ns": 7, "s": "z", "sv": "z", "f": 1}]`)
	require.Equal(t, catalog.ColumnStats{MaxValueBytes: 6}, nul["s"], "the catalog drops a string with a NUL byte")

	merged := MergeColumns(schema, []map[string]catalog.ColumnStats{some, nulls, nan})
	require.Equal(t, catalog.ColumnStats{Min: "c", Max: "m", NullCount: 1, MaxValueBytes: 6}, merged["s"], "a part of nulls holds no value")
	require.Equal(t, catalog.ColumnStats{Min: 2.5, Max: int64(7), NullCount: 1, MaxValueBytes: 9}, merged["f"], "nor does a part of NaN")
	require.Equal(t, catalog.ColumnStats{NullCount: 1, MaxValueBytes: merged["sv"].MaxValueBytes}, merged["sv"],
		"a string_view part without bounds may have had its values dropped")
	require.Equal(t, catalog.ColumnStats{Min: int64(1), Max: int64(4), MaxValueBytes: 9}, merged["timestamp_ns"])

	merged = MergeColumns(schema, []map[string]catalog.ColumnStats{some, nul})
	require.Equal(t, catalog.ColumnStats{MaxValueBytes: 6}, merged["s"], "a part whose bounds were dropped bounds nothing")
	require.Equal(t, catalog.ColumnStats{Min: int64(1), Max: int64(7), MaxValueBytes: 9}, merged["f"])

	merged = MergeColumns(schema, []map[string]catalog.ColumnStats{some, nulMin})
	require.Equal(t, catalog.ColumnStats{Max: "z", MaxValueBytes: 7}, merged["s"], "only the dropped bound is unknown")

	missing := map[string]catalog.ColumnStats{"timestamp_ns": some["timestamp_ns"], "other": {NullCount: 3}}
	merged = MergeColumns(schema, []map[string]catalog.ColumnStats{some, missing})
	require.Equal(t, map[string]catalog.ColumnStats{"timestamp_ns": {Min: int64(1), Max: int64(2), MaxValueBytes: 9}}, merged,
		"a column missing from a part is missing, a column not in the schema ignored")

	unrecorded := map[string]catalog.ColumnStats{"timestamp_ns": {Min: int64(0), Max: int64(0)}, "s": {Min: "a", Max: "a"},
		"sv": {}, "f": {Min: "x", Max: 1.0}}
	merged = MergeColumns(schema, []map[string]catalog.ColumnStats{some, unrecorded})
	require.Equal(t, catalog.ColumnStats{Min: int64(0), Max: int64(2)}, merged["timestamp_ns"], "a MaxValueBytes not recorded")
	require.Equal(t, catalog.ColumnStats{Max: int64(7)}, merged["f"], "a Min that is no float")

	empty := MergeColumns(schema, nil)
	require.Equal(t, map[string]catalog.ColumnStats{"timestamp_ns": {}, "s": {}, "sv": {}, "f": {}}, empty, "no parts: no rows")
}

// TestCompareNumbers: integers and floats compare exactly across their types, also where a
// conversion to float64 would round.
func TestCompareNumbers(t *testing.T) {
	tests := []struct {
		a, b any
		c    int
	}{
		{int64(1<<53 + 1), float64(1 << 53), 1},
		{int64(1<<53 + 1), float64(1<<53 + 2), -1},
		{int64(math.MaxInt64), 0x1p63, -1},
		{int64(math.MinInt64), -0x1p63, 0},
		{int64(math.MinInt64), math.Inf(-1), 1},
		{int64(-3), -2.5, -1},
		{int64(-2), -2.5, 1},
		{int64(0), math.Copysign(0, -1), 0},
		{uint64(math.MaxUint64), 0x1p64, -1},
		{uint64(1 << 63), 0x1p63, 0},
		{uint64(1<<63 + 1), 0x1p63, 1},
		{uint64(0), -0.5, 1},
		{uint64(5), int64(-1), 1},
		{uint64(math.MaxUint64), int64(math.MaxInt64), 1},
		{3.0, int64(3), 0},
		{2.5, uint64(3), -1},
	}
	for _, tc := range tests {
		c, ok := compareNumbers(tc.a, tc.b)
		require.True(t, ok, "%v vs %v", tc.a, tc.b)
		require.Equal(t, tc.c, c, "%T %v vs %T %v", tc.a, tc.a, tc.b, tc.b)
		c, _ = compareNumbers(tc.b, tc.a)
		require.Equal(t, -tc.c, c, "%T %v vs %T %v", tc.b, tc.b, tc.a, tc.a)
	}
	for _, bad := range [][2]any{{math.NaN(), 1.0}, {int64(1), math.NaN()}, {"1", int64(1)}, {int64(1), int32(1)}} {
		if _, ok := compareNumbers(bad[0], bad[1]); ok {
			t.Errorf("%T %v vs %T %v: ok, want not comparable", bad[0], bad[0], bad[1], bad[1])
		}
	}
}

// TestEmptyStringBytes: a string value of one byte or more, any the catalog could drop, is
// recorded larger than an empty one (what lets a string part without bounds be read as nulls).
func TestEmptyStringBytes(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString} {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
			{Name: "s", Type: typ, Nullable: true},
		}, nil)
		size := func(rows string) int64 {
			acc, err := NewAccumulator(schema)
			require.NoError(t, err)
			acc.Add(recordFromJSON(t, schema, rows))
			return acc.Result().Columns["s"].MaxValueBytes
		}
		empty := emptyStringBytes()[typ.ID()]
		require.Equal(t, empty, size(`[{"timestamp_ns": 1, "s": ""}, {"timestamp_ns": 2, "s": null}]`), typ.String())
		require.Equal(t, empty, size(`[{"timestamp_ns": 1, "s": null}]`), typ.String())
		require.Greater(t, size(`[{"timestamp_ns": 1, "s": "\u0000"}]`), empty, typ.String())
	}
}
