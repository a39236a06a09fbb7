package chunkstats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
)

func ptr(v int64) *int64 { return &v }

func recordFromJSON(t *testing.T, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	require.NoError(t, err)
	t.Cleanup(rec.Release)
	return rec
}

func TestNewAccumulatorRequiresInt64Timestamp(t *testing.T) {
	_, err := NewAccumulator(arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.PrimitiveTypes.Int64}}, nil))
	require.EqualError(t, err, `no column "timestamp_ns" (type int64 required)`)

	_, err = NewAccumulator(arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Float64}}, nil))
	require.EqualError(t, err, `column "timestamp_ns" has type float64, int64 required`)

	_, err = NewAccumulator(arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.FixedWidthTypes.Timestamp_ns}}, nil))
	require.ErrorContains(t, err, `column "timestamp_ns" has type timestamp[ns`)

	_, err = NewAccumulator(nil)
	require.Error(t, err)

	_, err = NewAccumulator(arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.BinaryTypes.String},
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	require.NoError(t, err)
}

func TestStatsPerColumnType(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}), Nullable: true},
		{Name: "all_null", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	acc, err := NewAccumulator(schema)
	require.NoError(t, err)
	acc.Add(recordFromJSON(t, schema, `[
		{"timestamp_ns": 30, "i8": -5, "i32": 7, "u64": 18446744073709551615, "f32": 1.5, "s": "m", "ls": "b", "b": true, "bin": "AQI=", "list": [1], "st": {"a": 1}, "all_null": null},
		{"timestamp_ns": null, "i8": null, "i32": -7, "u64": 3, "f32": null, "s": null, "ls": "a", "b": null, "bin": "", "list": null, "st": null, "all_null": null}
	]`))
	acc.Add(recordFromJSON(t, schema, `[
		{"timestamp_ns": 10, "i8": 100, "i32": 0, "u64": 4, "f32": -2.25, "s": "z", "ls": "c", "b": true, "bin": "AA==", "list": [2, 3], "st": {"a": 2}, "all_null": null},
		{"timestamp_ns": 20, "i8": 3, "i32": 1, "u64": 5, "f32": 0, "s": "a", "ls": "c", "b": true, "bin": "AA==", "list": [], "st": {"a": 3}, "all_null": null}
	]`))
	require.NoError(t, acc.Err())

	s := acc.Result()
	assert.Equal(t, int64(4), s.RowCount)
	assert.Equal(t, int64(1), s.TimestampNullCount)
	assert.Equal(t, ptr(10), s.MinTimestampNs)
	assert.Equal(t, ptr(30), s.MaxTimestampNs)
	assert.Equal(t, map[string]catalog.ColumnStats{
		"timestamp_ns": {Min: int64(10), Max: int64(30), NullCount: 1, MaxValueBytes: 9},
		"i8":           {Min: int64(-5), Max: int64(100), NullCount: 1, MaxValueBytes: 2},
		"i32":          {Min: int64(-7), Max: int64(7), MaxValueBytes: 5},
		"u64":          {Min: uint64(3), Max: uint64(math.MaxUint64), MaxValueBytes: 9},
		"f32":          {Min: float64(-2.25), Max: float64(1.5), NullCount: 1, MaxValueBytes: 5},
		"s":            {Min: "a", Max: "z", NullCount: 1, MaxValueBytes: 6},
		"ls":           {Min: "a", Max: "c", MaxValueBytes: 10},
		"b":            {Min: true, Max: true, NullCount: 1, MaxValueBytes: 1},
		"bin":          {MaxValueBytes: 7},
		"list":         {NullCount: 1, MaxValueBytes: 13},
		"st":           {NullCount: 1, MaxValueBytes: 9},
		"all_null":     {NullCount: 4, MaxValueBytes: 9},
	}, s.Columns)
}

func TestFloatStatsSkipNaNAndInf(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "only_nan", Type: arrow.PrimitiveTypes.Float64},
		{Name: "g", Type: arrow.PrimitiveTypes.Float32},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4, 5}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(
		[]float64{math.NaN(), math.Inf(1), 2.5, math.Inf(-1), 999},
		[]bool{true, true, true, true, false})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{math.NaN(), math.NaN(), math.Inf(1), math.NaN(), math.NaN()}, nil)
	b.Field(3).(*array.Float32Builder).AppendValues([]float32{float32(math.NaN()), -1, 8, float32(math.Inf(1)), 0.5}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	acc, err := NewAccumulator(schema)
	require.NoError(t, err)
	acc.Add(rec)
	s := acc.Result()
	assert.Equal(t, catalog.ColumnStats{Min: 2.5, Max: 2.5, NullCount: 1, MaxValueBytes: 9}, s.Columns["f"])
	assert.Equal(t, catalog.ColumnStats{MaxValueBytes: 9}, s.Columns["only_nan"])
	assert.Equal(t, catalog.ColumnStats{Min: float64(-1), Max: float64(8), MaxValueBytes: 5}, s.Columns["g"])
}

func TestAllNullTimestampsAndEmpty(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	acc, err := NewAccumulator(schema)
	require.NoError(t, err)
	empty := acc.Result()
	assert.Equal(t, Stats{Columns: map[string]catalog.ColumnStats{"timestamp_ns": {}, "b": {}}}, empty)

	acc.Add(recordFromJSON(t, schema, `[{"timestamp_ns": null, "b": false}, {"timestamp_ns": null, "b": false}]`))
	s := acc.Result()
	assert.Equal(t, int64(2), s.RowCount)
	assert.Equal(t, int64(2), s.TimestampNullCount)
	assert.Nil(t, s.MinTimestampNs)
	assert.Nil(t, s.MaxTimestampNs)
	assert.Equal(t, catalog.ColumnStats{NullCount: 2, MaxValueBytes: 9}, s.Columns["timestamp_ns"])
	assert.Equal(t, catalog.ColumnStats{Min: false, Max: false, MaxValueBytes: 1}, s.Columns["b"])
}

func TestArrowSizeBytesLayout(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	acc, err := NewAccumulator(schema)
	require.NoError(t, err)
	// 10 rows; names total 30 bytes.
	acc.Add(recordFromJSON(t, schema, `[
		{"timestamp_ns": 0, "name": "abc"}, {"timestamp_ns": 1, "name": "abc"},
		{"timestamp_ns": 2, "name": "abc"}, {"timestamp_ns": 3, "name": "abc"},
		{"timestamp_ns": 4, "name": "abc"}, {"timestamp_ns": 5, "name": "abc"},
		{"timestamp_ns": 6, "name": "abc"}, {"timestamp_ns": 7, "name": "abc"},
		{"timestamp_ns": 8, "name": "abcdef"}, {"timestamp_ns": 9, "name": ""}
	]`))
	// timestamp: 10 validity bits + 10*64; name: 10 validity bits + 10*32 offset bits + 30*8.
	bits := 10 + 640 + 10 + 320 + 240
	assert.Equal(t, int64((bits+7)/8), acc.Result().ArrowSizeBytes)
}

// buildRows builds rows [from, to) of a deterministic table with flat and nested columns.
func buildRows(t *testing.T, schema *arrow.Schema, from, to int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < to; i++ {
		rng := rand.New(rand.NewPCG(7, uint64(i)))
		ts := b.Field(0).(*array.Int64Builder)
		if i%11 == 3 {
			ts.AppendNull()
		} else {
			ts.Append(int64(1_000_000 - i*37))
		}
		f := b.Field(1).(*array.Float64Builder)
		switch i % 13 {
		case 5:
			f.AppendNull()
		case 6:
			f.Append(math.NaN())
		default:
			f.Append(rng.NormFloat64())
		}
		s := b.Field(2).(*array.StringBuilder)
		if i%7 == 0 {
			s.AppendNull()
		} else {
			s.Append(strings.Repeat("x", rng.IntN(20)) + string(rune('a'+i%26)))
		}
		b.Field(3).(*array.BinaryBuilder).Append(make([]byte, rng.IntN(64)))
		lb := b.Field(4).(*array.ListBuilder)
		if i%5 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for range rng.IntN(4) {
				lb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
			}
		}
		sb := b.Field(5).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(strings.Repeat("y", i%9))
		sb.FieldBuilder(1).(*array.Uint16Builder).Append(uint16(i))
		b.Field(6).(*array.BooleanBuilder).Append(i%3 == 0)
	}
	return b.NewRecordBatch()
}

func TestStatsIndependentOfBatching(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Uint16})},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	const rows = 250
	stats := func(batches ...arrow.RecordBatch) Stats {
		acc, err := NewAccumulator(schema)
		require.NoError(t, err)
		for _, b := range batches {
			acc.Add(b)
		}
		require.NoError(t, acc.Err())
		return acc.Result()
	}

	whole := buildRows(t, schema, 0, rows)
	defer whole.Release()
	want := stats(whole)
	require.Equal(t, int64(rows), want.RowCount)
	require.Positive(t, want.ArrowSizeBytes)
	require.NotNil(t, want.Columns["f"].Min, "NaN must not hide the float min")

	cuts := []int{0, 1, 37, 38, 120, 249, rows}
	var slices, rebuilt []arrow.RecordBatch
	for i := 1; i < len(cuts); i++ {
		slices = append(slices, whole.NewSlice(int64(cuts[i-1]), int64(cuts[i])))
		rebuilt = append(rebuilt, buildRows(t, schema, cuts[i-1], cuts[i]))
	}
	defer func() {
		for _, b := range append(slices, rebuilt...) {
			b.Release()
		}
	}()
	assert.Equal(t, want, stats(slices...), "slices of one batch")
	assert.Equal(t, want, stats(rebuilt...), "separately built batches")

	// A slice counts only its own rows: the parts of a split add up to the whole.
	var sum int64
	for _, s := range slices {
		sum += ArrowSizeBits(s.Column(2)) + ArrowSizeBits(s.Column(4)) + ArrowSizeBits(s.Column(5))
	}
	assert.Equal(t, ArrowSizeBits(whole.Column(2))+ArrowSizeBits(whole.Column(4))+ArrowSizeBits(whole.Column(5)), sum)
	assert.Less(t, ArrowSizeBits(slices[0].Column(3)), ArrowSizeBits(whole.Column(3))/10)
}

func TestAddRejectsOtherSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}}, nil)
	other := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int32}}, nil)
	acc, err := NewAccumulator(schema)
	require.NoError(t, err)
	acc.Add(recordFromJSON(t, other, `[{"timestamp_ns": 1}]`))
	acc.Add(recordFromJSON(t, schema, `[{"timestamp_ns": 2}]`))
	require.ErrorContains(t, acc.Err(), `record batch column 0 is "timestamp_ns" int32, schema has "timestamp_ns" int64`)
	s := acc.Result()
	assert.Equal(t, int64(1), s.RowCount)
	assert.Equal(t, ptr(2), s.MinTimestampNs)
}

func BenchmarkAddIMULikeBatch(b *testing.B) {
	fields := []arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "frame_id", Type: arrow.BinaryTypes.String}}
	for _, name := range []string{"ax", "ay", "az", "gx", "gy", "gz", "qw", "qx", "qy", "qz"} {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	const rows = 4096
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range rows {
		rb.Field(0).(*array.Int64Builder).Append(int64(i) * 2_500_000)
		rb.Field(1).(*array.StringBuilder).Append("imu_link")
		for c := 2; c < len(fields); c++ {
			rb.Field(c).(*array.Float64Builder).Append(rng.NormFloat64())
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	b.SetBytes(ArrowSizeBits(rec.Column(0)) / 8 * int64(len(fields)))
	b.ReportAllocs()
	for b.Loop() {
		acc, err := NewAccumulator(schema)
		if err != nil {
			b.Fatal(err)
		}
		acc.Add(rec)
		_ = acc.Result()
	}
}
