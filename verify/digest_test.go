package verify

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// row is one row of the test schema; nil pointers and nil slices are nulls.
type row struct {
	ts   *int64
	i2   int64
	f    float64
	s    *string
	s2   string
	bin  []byte
	ok   *bool
	list []int32 // nil = null list
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i2", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s2", Type: arrow.BinaryTypes.String},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

func record(t testing.TB, rows []row) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for _, r := range rows {
		if r.ts == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(*r.ts)
		}
		b.Field(1).(*array.Int64Builder).Append(r.i2)
		b.Field(2).(*array.Float64Builder).Append(r.f)
		if r.s == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(*r.s)
		}
		b.Field(4).(*array.StringBuilder).Append(r.s2)
		if r.bin == nil {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.BinaryBuilder).Append(r.bin)
		}
		if r.ok == nil {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.BooleanBuilder).Append(*r.ok)
		}
		lb := b.Field(7).(*array.ListBuilder)
		if r.list == nil {
			lb.AppendNull()
		} else {
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues(r.list, nil)
		}
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

func ptr[T any](v T) *T { return &v }

func randomRows(r *rand.Rand, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		x := row{i2: r.Int64N(5), f: float64(r.IntN(4)) / 2, s2: string(rune('a' + r.IntN(3)))}
		if r.IntN(5) > 0 {
			x.ts = ptr(r.Int64N(10))
		}
		if r.IntN(4) > 0 {
			x.s = ptr(string(rune('k' + r.IntN(3))))
		}
		if r.IntN(4) > 0 {
			x.bin = []byte{byte(r.IntN(3))}
		}
		if r.IntN(4) > 0 {
			x.ok = ptr(r.IntN(2) == 0)
		}
		if r.IntN(4) > 0 {
			x.list = make([]int32, r.IntN(3))
			for j := range x.list {
				x.list[j] = int32(r.IntN(3))
			}
		}
		rows[i] = x
	}
	return rows
}

func digestOf(t testing.TB, rows []row) Digest {
	var h Hasher
	return h.Record(record(t, rows))
}

func TestDigestOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := randomRows(r, 200)
	want := digestOf(t, rows)
	for range 5 {
		shuffled := slices.Clone(rows)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := digestOf(t, shuffled); got != want {
			t.Fatalf("shuffled rows: digest %s, want %s", got, want)
		}
	}
	// Disjoint parts in any order add up to the whole.
	rec := record(t, rows)
	var h Hasher
	var sum Digest
	cuts := []int64{0, 1, 17, 64, 65, 199, 200}
	for i := len(cuts) - 1; i > 0; i-- {
		var part Digest
		h.AddRows(&part, rec, cuts[i-1], cuts[i])
		sum.Add(part)
	}
	if sum != want {
		t.Fatalf("sum of parts %s, whole %s", sum, want)
	}
	var empty Digest
	h.AddRows(&empty, rec, 5, 5)
	if empty != (Digest{}) {
		t.Errorf("empty range adds %s", empty)
	}
}

// AddRows on a zero-copy slice of a batch (non-zero array offsets) equals AddRows on the range of
// the whole batch, for every column type.
func TestDigestSlicesEqualRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rec := record(t, randomRows(r, 100))
	var h Hasher
	for range 50 {
		from := r.Int64N(100)
		to := from + r.Int64N(100-from+1)
		var whole, sliced Digest
		h.AddRows(&whole, rec, from, to)
		s := rec.NewSlice(from, to)
		h.AddRows(&sliced, s, 0, to-from)
		// and a range inside the slice
		var inner, direct Digest
		if to-from >= 2 {
			h.AddRows(&inner, s, 1, to-from-1)
			h.AddRows(&direct, rec, from+1, to-1)
		}
		s.Release()
		if whole != sliced || inner != direct {
			t.Fatalf("rows [%d, %d): range %s, slice %s; inner %s vs %s", from, to, whole, sliced, inner, direct)
		}
	}
}

func TestDigestDetectsChanges(t *testing.T) {
	base := []row{
		{ts: ptr(int64(1)), i2: 7, f: 1.5, s: ptr("a"), s2: "b", bin: []byte{1, 2}, ok: ptr(true), list: []int32{1, 2}},
		{ts: ptr(int64(2)), i2: 8, f: 2.5, s: ptr("c"), s2: "d", bin: []byte{3}, ok: ptr(false), list: []int32{}},
		{ts: ptr(int64(3)), i2: 3, f: 3.5, s: ptr("e"), s2: "e", bin: []byte{}, ok: ptr(true), list: []int32{5}},
	}
	want := digestOf(t, base)
	changes := []struct {
		name   string
		change func(rows []row) []row
	}{
		{"dropped row", func(rows []row) []row { return rows[1:] }},
		{"duplicated row", func(rows []row) []row { return append(rows, rows[0]) }},
		{"row replaced by a duplicate of another", func(rows []row) []row { rows[1] = rows[0]; return rows }},
		{"int value", func(rows []row) []row { rows[1].i2++; return rows }},
		{"timestamp value", func(rows []row) []row { rows[0].ts = ptr(int64(4)); return rows }},
		{"timestamp null vs value", func(rows []row) []row { rows[0].ts = nil; return rows }},
		{"float value", func(rows []row) []row { rows[2].f = 3.25; return rows }},
		{"float negative zero", func(rows []row) []row { rows[2].f = 0; return rows }},
		{"string value", func(rows []row) []row { rows[0].s = ptr("A"); return rows }},
		{"string null vs empty", func(rows []row) []row { rows[0].s = nil; return rows }},
		{"binary value", func(rows []row) []row { rows[0].bin = []byte{1, 3}; return rows }},
		{"binary null vs empty", func(rows []row) []row { rows[2].bin = nil; return rows }},
		{"bool value", func(rows []row) []row { rows[1].ok = ptr(true); return rows }},
		{"bool null vs false", func(rows []row) []row { rows[1].ok = nil; return rows }},
		{"list element", func(rows []row) []row { rows[0].list = []int32{1, 3}; return rows }},
		{"list null vs empty", func(rows []row) []row { rows[1].list = nil; return rows }},
		{"list element moved to next row", func(rows []row) []row {
			rows[0].list, rows[1].list = []int32{1}, []int32{2}
			return rows
		}},
		{"values swapped between two int64 columns", func(rows []row) []row {
			rows[0].ts, rows[0].i2 = ptr(rows[0].i2), *rows[0].ts
			return rows
		}},
		{"values swapped between two string columns", func(rows []row) []row {
			rows[1].s, rows[1].s2 = ptr(rows[1].s2), *rows[1].s
			return rows
		}},
		{"values swapped between two rows of one column", func(rows []row) []row {
			rows[0].i2, rows[1].i2 = rows[1].i2, rows[0].i2
			return rows
		}},
	}
	for _, tc := range changes {
		rows := tc.change(slices.Clone(base))
		if got := digestOf(t, rows); got == want || got.Sum == want.Sum {
			t.Errorf("%s: digest %s unchanged (%s)", tc.name, got, want)
		}
	}
	// A null is not the zero value that its slot holds.
	if digestOf(t, []row{{ts: nil}}) == digestOf(t, []row{{ts: ptr(int64(0))}}) {
		t.Errorf("null timestamp hashes like 0")
	}
	// The sanity of the fixture: an identical copy has an identical digest.
	if got := digestOf(t, slices.Clone(base)); got != want {
		t.Fatalf("identical rows: digest %s, want %s", got, want)
	}
}

// A dictionary column is hashed by value: the same values under different dictionaries (as after
// concatenating batches of two inputs) give the same digest, and a changed value a different one.
func TestDigestDictionaryByValue(t *testing.T) {
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt, Nullable: true}}, nil)
	mk := func(dict []string, idx []int8, valid []bool) arrow.RecordBatch {
		db := array.NewStringBuilder(memory.DefaultAllocator)
		db.AppendValues(dict, nil)
		d := db.NewArray()
		ib := array.NewInt8Builder(memory.DefaultAllocator)
		ib.AppendValues(idx, valid)
		i := ib.NewArray()
		arr := array.NewDictionaryArray(dt, i, d)
		rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(len(idx)))
		d.Release()
		i.Release()
		arr.Release()
		t.Cleanup(rec.Release)
		return rec
	}
	var h Hasher
	a := h.Record(mk([]string{"x", "y"}, []int8{0, 0, 1, 0}, []bool{true, true, true, false}))
	b := h.Record(mk([]string{"y", "x"}, []int8{1, 1, 0, 1}, []bool{true, true, true, false}))
	c := h.Record(mk([]string{"x", "z"}, []int8{0, 0, 1, 0}, []bool{true, true, true, false}))
	if a != b {
		t.Errorf("same values under different dictionaries: %s vs %s", a, b)
	}
	if a == c {
		t.Errorf("a changed dictionary value is not detected: %s", a)
	}
}

func TestDigestBinaryEncoding(t *testing.T) {
	d := Digest{Rows: 12345, Sum: 0xfedcba9876543210}
	got, err := UnmarshalDigest(d.MarshalBinary())
	if err != nil || got != d {
		t.Fatalf("round trip: %s, %v", got, err)
	}
	if _, err := UnmarshalDigest(make([]byte, 15)); err == nil {
		t.Fatalf("15 bytes decoded without error")
	}
	if s := d.String(); s != "12345/fedcba9876543210" {
		t.Errorf("String = %q", s)
	}
}

// A dictionary column hashes by value: the same rows give the same digest whatever the
// dictionary (order, unused entries) and however its batches were concatenated.
func TestDictionaryDigestByValue(t *testing.T) {
	mem := memory.DefaultAllocator
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	build := func(dict []string, idx []int32, valid []bool) arrow.RecordBatch {
		sb := array.NewStringBuilder(mem)
		sb.AppendValues(dict, nil)
		d := sb.NewArray()
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(idx, valid)
		ind := ib.NewArray()
		col := array.NewDictionaryArray(dt, ind, d)
		d.Release()
		ind.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt, Nullable: true}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		return rec
	}
	a := build([]string{"idle", "move"}, []int32{0, 1, 1, 0}, []bool{true, true, false, true})
	defer a.Release()
	b := build([]string{"stop", "move", "idle"}, []int32{2, 1, 0, 2}, []bool{true, true, false, true})
	defer b.Release()
	c := build([]string{"idle", "move"}, []int32{0, 1, 1, 1}, []bool{true, true, false, true})
	defer c.Release()
	var h Hasher
	if h.Record(a) != h.Record(b) {
		t.Fatalf("same values, other dictionaries: digests %s and %s differ", h.Record(a), h.Record(b))
	}
	if h.Record(a) == h.Record(c) {
		t.Fatalf("a changed value left the digest unchanged")
	}
}

// BenchmarkDigestDictionary: a categorical column (three labels) of 64 Ki rows.
func BenchmarkDigestDictionary(b *testing.B) {
	mem := memory.DefaultAllocator
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	bld := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
	for i := range 64 << 10 {
		_ = bld.AppendString([]string{"idle", "move", "stop"}[i%3])
	}
	col := bld.NewArray()
	bld.Release()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt}}, nil), []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	var h Hasher
	b.ReportAllocs()
	for b.Loop() {
		h.Record(rec)
	}
}

// fixedRecord is a batch of fixed-width columns of every byte width (and a string), with nulls in
// some, of n rows from seed.
func fixedRecord(t testing.TB, n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 7))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "frame", Type: arrow.BinaryTypes.String},
		{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		if i%17 == 3 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(r.Int64())
		}
		b.Field(1).(*array.Float64Builder).Append(r.NormFloat64())
		if i%5 == 1 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float32Builder).Append(r.Float32())
		}
		b.Field(3).(*array.Int16Builder).Append(int16(r.Uint32()))
		b.Field(4).(*array.Uint8Builder).Append(uint8(r.Uint32()))
		b.Field(5).(*array.StringBuilder).Append([]string{"base_link", "imu", "map"}[r.IntN(3)])
		b.Field(6).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), byte(i >> 8), 1})
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// TestDigestValuesAreStable pins digests: a digest recorded by one worker (a staged output's) is
// checked by another, so a faster hasher must give the very same sums.
func TestDigestValuesAreStable(t *testing.T) {
	var h Hasher
	rec := fixedRecord(t, 3000, 1)
	var d Digest
	h.AddRows(&d, rec, 5, 2999) // from an offset into the buffers
	if got, want := d.String(), "2994/333cddf37d3e1b42"; got != want {
		t.Errorf("fixed-width columns: digest %s, want %s", got, want)
	}
	sliced := rec.NewSlice(3, 3000) // an array offset as well
	defer sliced.Release()
	d = Digest{}
	h.AddRows(&d, sliced, 2, 2996)
	if got, want := d.String(), "2994/333cddf37d3e1b42"; got != want {
		t.Errorf("fixed-width columns of a slice: digest %s, want %s", got, want)
	}
	if got, want := digestOf(t, randomRows(rand.New(rand.NewPCG(1, 2)), 1000)).String(), "1000/92e76f96435c9cf4"; got != want {
		t.Errorf("test schema: digest %s, want %s", got, want)
	}
}

// BenchmarkDigestFixedWidth: 64 Ki rows of fixed-width columns of every width and a string.
func BenchmarkDigestFixedWidth(b *testing.B) {
	rec := fixedRecord(b, 64<<10, 1)
	var h Hasher
	b.ReportAllocs()
	for b.Loop() {
		h.Record(rec)
	}
}

// BenchmarkDigestIMU: 64 Ki rows of an IMU-like batch (a timestamp, a frame id, 10 float64).
func BenchmarkDigestIMU(b *testing.B) {
	fields := []arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}, {Name: "frame_id", Type: arrow.BinaryTypes.String}}
	for i := range 10 {
		fields = append(fields, arrow.Field{Name: string(rune('a' + i)), Type: arrow.PrimitiveTypes.Float64})
	}
	bl := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 64 << 10 {
		bl.Field(0).(*array.Int64Builder).Append(int64(i) * 2_500_000)
		bl.Field(1).(*array.StringBuilder).Append("imu_link")
		for c := range 10 {
			bl.Field(2 + c).(*array.Float64Builder).Append(r.NormFloat64())
		}
	}
	rec := bl.NewRecordBatch()
	bl.Release()
	defer rec.Release()
	var h Hasher
	b.ReportAllocs()
	for b.Loop() {
		h.Record(rec)
	}
}
