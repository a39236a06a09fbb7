package compaction

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// gatherSchema has a column of every gatherable kind, with nulls in some.
func gatherSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	}, nil)
}

func gatherBatch(t *testing.T, schema *arrow.Schema, r *rand.Rand, n int, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		null := r.IntN(5) == 0
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if null {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			b.Field(5).AppendNull()
			b.Field(6).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(r.Float64())
			b.Field(2).(*array.StringBuilder).Append(string(rune('a' + r.IntN(26))))
			b.Field(3).(*array.BinaryBuilder).Append(make([]byte, r.IntN(40)))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Int64()))
			b.Field(6).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), 1, 2})
		}
		b.Field(4).(*array.Uint8Builder).Append(uint8(i))
	}
	return b.NewRecordBatch()
}

func TestGatherSpansEqualsSliceAndConcatenate(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := gatherSchema()
	if !gatherable(schema) {
		t.Fatal("schema of gatherable kinds is not gatherable")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var recs []arrow.RecordBatch
	for range 4 {
		whole := gatherBatch(t, schema, r, 200, mem)
		recs = append(recs, whole.NewSlice(int64(r.IntN(20)), 200)) // non-zero array offsets
		whole.Release()
	}
	for trial := range 50 {
		var spans []span
		var slices []arrow.RecordBatch
		for range 1 + r.IntN(30) {
			rec := recs[r.IntN(len(recs))]
			from := int64(r.IntN(int(rec.NumRows())))
			to := min(from+int64(1+r.IntN(5)), rec.NumRows())
			spans = append(spans, span{rec: rec, from: from, to: to})
			slices = append(slices, rec.NewSlice(from, to))
		}
		got, err := gatherSpans(schema, spans, mem)
		if err != nil {
			t.Fatal(err)
		}
		want, err := concatRecords(schema, slices, mem)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, want) {
			t.Fatalf("trial %d: gathered rows differ from sliced and concatenated rows:\n%v\n%v", trial, got, want)
		}
		for i := range schema.NumFields() {
			if got.Column(i).NullN() != want.Column(i).NullN() {
				t.Fatalf("trial %d column %d: %d nulls, want %d", trial, i, got.Column(i).NullN(), want.Column(i).NullN())
			}
		}
		got.Release()
		want.Release()
		for _, s := range slices {
			s.Release()
		}
	}
	for _, rec := range recs {
		rec.Release()
	}
}

func TestGatherableKinds(t *testing.T) {
	for _, tc := range []struct {
		dt   arrow.DataType
		want bool
	}{
		{arrow.PrimitiveTypes.Int32, true},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, true},
		{arrow.FixedWidthTypes.Boolean, false},
		{arrow.BinaryTypes.LargeString, false},
		{arrow.ListOf(arrow.PrimitiveTypes.Int64), false},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, false},
		{arrow.Null, false},
	} {
		if _, ok := gatherKind(tc.dt); ok != tc.want {
			t.Errorf("%s: gatherable %v, want %v", tc.dt, ok, tc.want)
		}
	}
}
