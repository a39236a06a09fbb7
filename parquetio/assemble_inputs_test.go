package parquetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/storeopt/storeopt/verify"
)

// The copy path against inputs of other writers' settings: every assembled chunk must hold the
// inputs' rows in order, their footer, statistics and a page index that are right for the
// values, and a copy digest equal to what the Assembler read.

// typedSchema has a column of each physical type the copy path may copy.
func typedSchema(nullableTs bool) *arrow.Schema {
	schemaMD := md("mosaico:topic", "run_7/typed")
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: nullableTs},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 3}, Nullable: true},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms},
		{Name: "nulls", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, &schemaMD)
}

// typedRows builds rows [from, from+n) of typedSchema: timestamps ascending (nulls, last, in
// the last rows when nullTail), the other columns' values going up and down, "nulls" all null.
func typedRows(schema *arrow.Schema, from, n, nullTail int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		if i >= from+n-nullTail {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i) * 1000)
		}
		wave := (i*7919)%1000 - 500
		if i%11 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(wave))
		}
		b.Field(2).(*array.Uint64Builder).Append(uint64(wave) * 3) // wraps: unsigned order matters
		b.Field(3).(*array.Uint8Builder).Append(uint8(wave))
		if i%7 == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Float32Builder).Append(float32(wave) * 0.25)
		}
		if i%13 == 0 {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.BooleanBuilder).Append(i%3 == 0)
		}
		if i%17 == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(wave), byte(i), 0xff, byte(i >> 8)})
		}
		if i%19 == 0 {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(wave) * 1_000_003))
		}
		b.Field(8).(*array.Time32Builder).Append(arrow.Time32(i % 86_400_000))
		b.Field(9).AppendNull()
		b.Field(10).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("payload-%d", wave)))
	}
	return b.NewRecordBatch()
}

// writtenWith writes recs with the given writer properties (statistics on unless props say
// otherwise).
func writtenWith(t testing.TB, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	all := append([]parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(700), parquet.WithDataPageSize(2048)}, props...)
	return encodePlainWith(t, rec.Schema(), parquet.NewWriterProperties(all...), nil, rec)
}

// assembleInputs assembles every row group of inputs, in order, into one chunk; err is the
// first error of Append or Close (the chunk then nil). spec is nil when CopySpecFor refuses.
func assembleInputs(t testing.TB, inputs [][]byte, opts WriterOptions) (out []byte, spec *CopySpec, read verify.Digest, err error) {
	t.Helper()
	var chunks []*Chunk
	for _, in := range inputs {
		c, err := Open(bytes.NewReader(in), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		chunks = append(chunks, c)
	}
	layout := chunks[0].Layout()
	spec = layout.CopySpecFor(chunks[:1])
	if spec == nil {
		return nil, nil, read, nil
	}
	var buf bytes.Buffer
	a, err := NewAssembler(&buf, layout, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		for rg := range c.NumRowGroups() {
			if err := a.Append(context.Background(), c, rg); err != nil {
				a.Discard()
				return nil, spec, read, err
			}
		}
	}
	if err := a.Close(); err != nil {
		return nil, spec, read, err
	}
	return buf.Bytes(), spec, a.Read, nil
}

// checkAssembled checks chunk out assembled from inputs (holding recs): its rows, footer, copy
// digest, column statistics and column index against the values, and that assembling again
// gives the same bytes.
func checkAssembled(t *testing.T, inputs [][]byte, recs []arrow.RecordBatch, opts WriterOptions, out []byte, spec *CopySpec, read verify.Digest) {
	t.Helper()
	var want verify.Digest
	var h verify.Hasher
	for _, rec := range recs {
		h.AddRows(&want, rec, 0, rec.NumRows())
	}
	c, got, err := readAll(out, 333)
	if err != nil {
		t.Fatalf("read the assembled chunk: %v", err)
	}
	if got != want {
		t.Fatalf("rows of the assembled chunk: digest %s, the inputs' %s", got, want)
	}
	in, err := Open(bytes.NewReader(inputs[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if d := FirstFooterDifference(in.Footer, c.Footer); d != "" {
		t.Fatalf("footer differs from the inputs': %s", d)
	}
	oc, err := Open(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	written, err := CopyDigest(context.Background(), oc, spec)
	if err != nil {
		t.Fatal(err)
	}
	if written != read || read.Rows != want.Rows {
		t.Fatalf("copy digest of the stored chunk %s, of the inputs %s (rows %d)", written, read, want.Rows)
	}
	checkStatistics(t, oc)
	checkCopiedPages(t, inputs, out, spec)
	again, _, _, err := assembleInputs(t, inputs, opts)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("the same inputs assembled twice give different bytes (%v)", err)
	}
}

// storedPages returns the pages of leaf column leaf of chunk data, every row group's in order.
func storedPages(t *testing.T, data []byte, leaf int) []rawPage {
	t.Helper()
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var pages []rawPage
	for rg := range c.NumRowGroups() {
		cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, cc.TotalCompressedSize())
		if _, err := c.src.ReadAt(buf, cc.DataPageOffset()); err != nil {
			t.Fatal(err)
		}
		ps, err := splitPages(context.Background(), buf)
		if err != nil {
			t.Fatalf("row group %d column %d: %v", rg, leaf, err)
		}
		pages = append(pages, ps...)
	}
	return pages
}

// checkCopiedPages checks that each copied column of chunk out holds the inputs' pages, in order,
// as stored: their kind, bytes, and what their headers say of how the bytes are read (the pages
// were copied, not re-encoded).
func checkCopiedPages(t *testing.T, inputs [][]byte, out []byte, spec *CopySpec) {
	t.Helper()
	for leaf, copied := range spec.Copied {
		if !copied {
			continue
		}
		var want []rawPage
		for _, in := range inputs {
			want = append(want, storedPages(t, in, leaf)...)
		}
		got := storedPages(t, out, leaf)
		if len(got) != len(want) {
			t.Fatalf("copied column %d: %d pages, the inputs %d", leaf, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			var gw, ww pageWords
			gh, wh := g.header(&gw), w.header(&ww)
			if g.kind != w.kind || g.numValues != w.numValues || g.v2 != w.v2 || !slices.Equal(gh, wh) || !bytes.Equal(g.data, w.data) {
				t.Fatalf("copied column %d page %d: kind %d, %d values, header %x, V2 %+v, %d bytes; the input's %d, %d, %x, %+v, %d bytes",
					leaf, i, g.kind, g.numValues, gh, g.v2, len(g.data), w.kind, w.numValues, wh, w.v2, len(w.data))
			}
		}
	}
}

// pageKinds counts the pages of each kind in the copied columns of chunk data.
func pageKinds(t *testing.T, data []byte, spec *CopySpec) map[int32]int {
	t.Helper()
	kinds := map[int32]int{}
	for leaf, copied := range spec.Copied {
		if copied {
			for _, p := range storedPages(t, data, leaf) {
				kinds[p.kind]++
			}
		}
	}
	return kinds
}

// checkStatistics checks every column chunk's statistics and every column index entry of c
// against the statistics arrow-go's writer gives the same values (a reference file of the
// row group's, and of each page's, rows).
func checkStatistics(t *testing.T, c *Chunk) {
	t.Helper()
	ctx := context.Background()
	fmd := c.pf.MetaData()
	for rg := range fmd.NumRowGroups() {
		pir, err := c.pf.GetPageIndexReader().RowGroup(rg)
		if err != nil {
			t.Fatal(err)
		}
		for leaf := range fmd.NumColumns() {
			cc, _ := fmd.RowGroup(rg).ColumnChunk(leaf)
			col, err := c.fr.RowGroup(rg).Column(leaf).Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := array.Concatenate(col.Chunks(), memory.DefaultAllocator)
			col.Release()
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("row group %d column %s", rg, fmd.Schema.Column(leaf).Name())
			if set, _ := cc.StatsSet(); set {
				st, _ := cc.Statistics()
				compareStats(t, name, st, vals, 0, int64(vals.Len()), true)
			}
			oi, err := pir.GetOffsetIndex(leaf)
			if err != nil || oi == nil {
				t.Fatalf("%s: no offset index (%v)", name, err)
			}
			locs := oi.GetPageLocations()
			if ci, err := pir.GetColumnIndex(leaf); err == nil && ci != nil {
				if len(ci.GetNullPages()) != len(locs) {
					t.Fatalf("%s: column index of %d pages, offset index %d", name, len(ci.GetNullPages()), len(locs))
				}
				for i, loc := range locs {
					end := int64(vals.Len())
					if i+1 < len(locs) {
						end = locs[i+1].FirstRowIndex
					}
					st := metadata.NewStatistics(fmd.Schema.Column(leaf), memory.DefaultAllocator)
					if !ci.GetNullPages()[i] {
						enc := metadata.EncodedStatistics{HasMin: true, Min: ci.GetMinValues()[i], HasMax: true, Max: ci.GetMaxValues()[i]}
						st = mustStats(t, fmd.Schema.Column(leaf), enc)
					}
					pname := fmt.Sprintf("%s page %d (rows %d…%d)", name, i, loc.FirstRowIndex, end)
					if ci.GetNullPages()[i] {
						if vals.NullN() == 0 || array.NewSlice(vals, loc.FirstRowIndex, end).NullN() != int(end-loc.FirstRowIndex) {
							t.Errorf("%s: a null page holding values", pname)
						}
						continue
					}
					compareStats(t, pname, st, vals, loc.FirstRowIndex, end, false)
					// Null counts of the column index are not checked: arrow-go v18.8.0's writer
					// stores 0 for every page of a nullable column (inputs and rewrites alike).
				}
			}
			vals.Release()
		}
	}
}

func mustStats(t *testing.T, descr *schema.Column, enc metadata.EncodedStatistics) metadata.TypedStatistics {
	t.Helper()
	return metadata.NewStatisticsFromEncoded(descr, memory.DefaultAllocator, 1, minMax(enc))
}

// minMax provides the min and max of enc as read from a file.
type minMax metadata.EncodedStatistics

func (m minMax) GetMin() []byte           { return m.Min }
func (m minMax) GetMax() []byte           { return m.Max }
func (m minMax) GetNullCount() int64      { return 0 }
func (m minMax) GetDistinctCount() int64  { return 0 }
func (m minMax) IsSetMax() bool           { return m.HasMax }
func (m minMax) IsSetMin() bool           { return m.HasMin }
func (m minMax) IsSetNullCount() bool     { return false }
func (m minMax) IsSetDistinctCount() bool { return false }

// compareStats checks that st's min and max (and null count, when st has one) are those
// arrow-go's writer gives rows [from, to) of vals (nulls: its null count too).
func compareStats(t *testing.T, name string, st metadata.TypedStatistics, vals arrow.Array, from, to int64, nulls bool) {
	t.Helper()
	slice := array.NewSlice(vals, from, to)
	defer slice.Release()
	ref := referenceStats(t, slice)
	if ref == nil {
		return
	}
	if ref.HasMinMax() != st.HasMinMax() {
		t.Errorf("%s: has min/max %v, the values' %v", name, st.HasMinMax(), ref.HasMinMax())
		return
	}
	if st.HasMinMax() && (!bytes.Equal(st.EncodeMin(), ref.EncodeMin()) || !bytes.Equal(st.EncodeMax(), ref.EncodeMax())) {
		t.Errorf("%s: min %x max %x, the values' %x %x", name, st.EncodeMin(), st.EncodeMax(), ref.EncodeMin(), ref.EncodeMax())
	}
	if nulls && st.HasNullCount() && st.NullCount() != int64(slice.NullN()) {
		t.Errorf("%s: null count %d, the values' %d", name, st.NullCount(), slice.NullN())
	}
}

// referenceStats returns the column chunk statistics arrow-go's writer gives vals.
func referenceStats(t *testing.T, vals arrow.Array) metadata.TypedStatistics {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: vals.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{vals}, int64(vals.Len()))
	defer rec.Release()
	data := encodePlainWith(t, schema, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithStats(true)), nil, rec)
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cc, _ := r.MetaData().RowGroup(0).ColumnChunk(0)
	st, _ := cc.Statistics()
	return st
}

var _ = compress.Codecs.Zstd
var _ = errors.New

// inputsOf writes n inputs of rows rows each with props (prop(i) for input i).
func inputsOf(t *testing.T, n, rows, nullTail int, props func(i int) []parquet.WriterProperty) ([][]byte, []arrow.RecordBatch) {
	schema := typedSchema(nullTail > 0)
	var inputs [][]byte
	var recs []arrow.RecordBatch
	for i := range n {
		tail := 0
		if i == n-1 {
			tail = nullTail
		}
		rec := typedRows(schema, i*rows, rows, tail)
		t.Cleanup(rec.Release)
		recs = append(recs, rec)
		inputs = append(inputs, writtenWith(t, rec, props(i)...))
	}
	return inputs, recs
}

// same returns props for every input.
func same(props ...parquet.WriterProperty) func(int) []parquet.WriterProperty {
	return func(int) []parquet.WriterProperty { return props }
}

func TestAssembleInputsOfOtherWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props func(int) []parquet.WriterProperty
	}{
		{"zstd with page index", same(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithPageIndexEnabled(true))},
		{"zstd without page index", same(parquet.WithCompression(compress.Codecs.Zstd))},
		{"snappy", same(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithPageIndexEnabled(true))},
		{"uncompressed", same(parquet.WithCompression(compress.Codecs.Uncompressed))},
		{"gzip", same(parquet.WithCompression(compress.Codecs.Gzip))},
		{"lz4 raw", same(parquet.WithCompression(compress.Codecs.Lz4Raw))},
		{"brotli", same(parquet.WithCompression(compress.Codecs.Brotli))},
		{"no statistics", same(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(false))},
		{"no statistics, page index", same(parquet.WithStats(false), parquet.WithPageIndexEnabled(true))},
		{"delta encodings", same(parquet.WithCompression(compress.Codecs.Snappy),
			parquet.WithEncodingFor("timestamp_ns", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("u64", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("bin", parquet.Encodings.DeltaLengthByteArray))},
		{"delta byte array", same(parquet.WithEncodingFor("bin", parquet.Encodings.DeltaByteArray))},
		{"byte stream split", same(parquet.WithEncodingFor("f32", parquet.Encodings.ByteStreamSplit),
			parquet.WithEncodingFor("nulls", parquet.Encodings.ByteStreamSplit))},
		{"dictionary fallback", same(parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(64))},
		{"dictionary in some", func(i int) []parquet.WriterProperty {
			return []parquet.WriterProperty{parquet.WithDictionaryFor("i32", i%2 == 0)}
		}},
		{"codecs differ", func(i int) []parquet.WriterProperty {
			return []parquet.WriterProperty{parquet.WithCompression([]compress.Compression{compress.Codecs.Zstd, compress.Codecs.Snappy}[i%2])}
		}},
		{"page index in some", func(i int) []parquet.WriterProperty {
			return []parquet.WriterProperty{parquet.WithPageIndexEnabled(i%2 == 1)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { assembleAndCheck(t, tc.props, nil) })
	}
}

// The copy path copies V2 data pages as V2 pages (their levels' lengths, rows, nulls and
// compression kept in the headers it writes), and inputs of both page versions page by page.
func TestAssembleV2Pages(t *testing.T) {
	v2 := func(p ...parquet.WriterProperty) func(int) []parquet.WriterProperty {
		return same(append(p, parquet.WithDataPageVersion(parquet.DataPageV2))...)
	}
	for _, tc := range []struct {
		name  string
		props func(int) []parquet.WriterProperty
		kinds []int32 // the page kinds the output's copied columns hold
	}{
		// V2 pages: uncompressed ones say their values are not compressed.
		{"v2 pages", v2(), []int32{pageDataV2}},
		{"v2 pages, zstd, page index", v2(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithPageIndexEnabled(true)), []int32{pageDataV2}},
		{"v2 pages, snappy, no statistics", v2(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(false)), []int32{pageDataV2}},
		{"v2 pages, delta encodings, byte stream split", v2(parquet.WithCompression(compress.Codecs.Gzip),
			parquet.WithEncodingFor("timestamp_ns", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("bin", parquet.Encodings.DeltaLengthByteArray),
			parquet.WithEncodingFor("f32", parquet.Encodings.ByteStreamSplit)), []int32{pageDataV2}},
		// Inputs of both page versions: their pages keep their kind, in the same column chunks.
		{"v2 pages after v1", func(i int) []parquet.WriterProperty {
			return []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy),
				parquet.WithDataPageVersion([]parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2}[i%2])}
		}, []int32{pageData, pageDataV2}},
	} {
		t.Run(tc.name, func(t *testing.T) { assembleAndCheck(t, tc.props, tc.kinds) })
	}
}

// assembleAndCheck assembles 4 inputs written with props (props(i) for input i) and checks the
// output (checkAssembled). With kinds, every column must be copied, its pages of those kinds,
// but timestamp_ns where the inputs store it other than delta-encoded (re-encoded: CopySpecOf);
// without, the inputs may be left to a rewrite (CopySpecFor's nil, ErrNotCopyable).
func assembleAndCheck(t *testing.T, props func(int) []parquet.WriterProperty, kinds []int32) {
	inputs, recs := inputsOf(t, 4, 1500, 40, props)
	opts := WriterOptions{RowGroupRows: 2500}
	out, spec, read, err := assembleInputs(t, inputs, opts)
	if kinds != nil && (spec == nil || err != nil || spec.CopiedLeaves() != len(spec.Copied)-reencodedTimestamps(t, inputs[0])) {
		t.Fatalf("not every column copied: spec %v, %v", spec, err)
	}
	if spec == nil {
		t.Logf("not copyable by CopySpecFor")
		return
	}
	if errors.Is(err, ErrNotCopyable) {
		t.Logf("ErrNotCopyable: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("copied %v", spec.Copied)
	checkAssembled(t, inputs, recs, opts, out, spec, read)
	if kinds != nil {
		if got := pageKinds(t, out, spec); !slices.Equal(slices.Sorted(maps.Keys(got)), kinds) {
			t.Fatalf("pages of the copied columns by kind: %v, want kinds %v", got, kinds)
		}
	}
}

// A corrupt page of a copied column that still decompresses to its stated size is an input
// error when its levels or values do not fit it, as a rewrite's decoding finds them: in the
// definition levels' length, in a level run's header, in a byte array's length. It must not be
// copied into an output that verifies (the copy digest is of the stored bytes, corrupt or not).
// A V2 page's levels are stored uncompressed whatever the codec: the page checks, not the
// codec, find a changed level there.
func TestAssemblerRefusesCorruptLevelsAndValues(t *testing.T) {
	v1 := func(at ...int) func(rawPage) []int { return func(rawPage) []int { return at } }
	// levels returns bytes of a V2 page's definition levels, values bytes of its values.
	v2 := func(levels, values []int) func(rawPage) []int {
		return func(p rawPage) []int {
			var at []int
			for _, l := range levels {
				at = append(at, int(p.v2.repBytes)+l)
			}
			for _, v := range values {
				at = append(at, int(p.levelBytes())+v)
			}
			return at
		}
	}
	for version, kind := range map[parquet.DataPageVersion]string{parquet.DataPageV1: "V1", parquet.DataPageV2: "V2"} {
		for _, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy} {
			inputs, _ := inputsOf(t, 2, 1500, 0, func(int) []parquet.WriterProperty {
				return []parquet.WriterProperty{parquet.WithCompression(codec), parquet.WithDataPageVersion(version)}
			})
			c, err := Open(bytes.NewReader(inputs[1]), nil)
			if err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				column string
				at     func(rawPage) []int // bytes of the first page's stored data flipped in turn
			}{
				{"i32", v1(0, 1, 3)},   // definition levels' length
				{"f32", v1(0, 1, 3)},   // definition levels' length
				{"bin", v1(4, 5, 7)},   // the level runs of a byte array column
				{"nulls", v1(0, 1, 3)}, // levels of a column of nulls only
				{"ok", v1(0, 1)},       // booleans
				{"fsb", v1(0, 1, 3)},   // fixed-size binary
			}
			if version == parquet.DataPageV2 {
				cases = []struct {
					column string
					at     func(rawPage) []int
				}{
					{"i32", v2([]int{0, 1}, nil)},
					{"f32", v2([]int{0, 1}, nil)},
					{"bin", v2([]int{0, 1}, []int{0, 1, 3})}, // the levels, the first value's length
					{"nulls", v2([]int{0, 1}, nil)},
					{"ok", v2([]int{0, 1}, []int{0})},
					{"fsb", v2([]int{0, 1}, nil)},
				}
			}
			refused := 0
			for _, tc := range cases {
				leaf := c.pf.MetaData().Schema.ColumnIndexByName(tc.column)
				cc, _ := c.pf.MetaData().RowGroup(0).ColumnChunk(leaf)
				buf := make([]byte, cc.TotalCompressedSize())
				if _, err := c.src.ReadAt(buf, cc.DataPageOffset()); err != nil {
					t.Fatal(err)
				}
				pages, err := splitPages(context.Background(), buf)
				if err != nil {
					t.Fatal(err)
				}
				dataAt := cc.DataPageOffset() + int64(cap(buf)-cap(pages[0].data))
				for _, at := range tc.at(pages[0]) {
					name := fmt.Sprintf("%s pages %s: column %s byte %d flipped", kind, codec, tc.column, at)
					bad := bytes.Clone(inputs[1])
					bad[dataAt+int64(at)] ^= 0x10
					if _, _, err := readAll(bad, 333); err == nil {
						continue // the flip left a page a reader decodes: no one can see it
					}
					out, spec, read, err := assembleInputs(t, [][]byte{inputs[0], bad}, WriterOptions{RowGroupRows: 2500})
					if err != nil {
						if !IsInputError(err) {
							t.Errorf("%s: %v, want an input error", name, err)
						}
						refused++
						continue
					}
					oc, err := Open(bytes.NewReader(out), nil)
					if err != nil {
						t.Fatal(err)
					}
					if d, err := CopyDigest(context.Background(), oc, spec); err == nil && d == read {
						t.Errorf("%s: a page a reader cannot decode is copied, the output verifies", name)
					}
					oc.Close()
				}
			}
			if refused == 0 {
				t.Errorf("%s pages %s: no flip refused by the page checks", kind, codec)
			}
			c.Close()
		}
	}
}

// An earlier output among the inputs stores timestamp_ns delta-encoded, whose values the page
// checks do not look at (checkPage): a page of it that no longer decodes (a miniblock's bit width
// past 64, a block size that is not a multiple of 128, its bytes stored uncompressed, as a
// rewrite of such an output stores them) is an input error, found by the decoding of the
// timestamps the Append takes the page index from, not a page copied.
func TestAssemblerRefusesCorruptDeltaTimestamps(t *testing.T) {
	rec := jitteredRows(20_000)
	defer rec.Release()
	again := rewrite(t, rewrite(t, encodeWith(t, rec, compress.Codecs.Zstd), 4096), 4096)
	if got := codecs(t, again)[TimestampColumn]; got != compress.Codecs.Uncompressed {
		t.Fatalf("timestamp_ns of a rewritten output stored %s, want UNCOMPRESSED", got)
	}
	page := storedPages(t, again, 0)[0]
	at := bytes.Index(again, page.data) // the page's values: its delta header first
	widths := 0
	for range 5 { // values per block, miniblocks, values, first value, the block's minimum delta
		for page.data[widths] >= 0x80 {
			widths++
		}
		widths++
	}
	for name, off := range map[string]int{"bit width": at + widths, "block size": at} {
		bad := bytes.Clone(again)
		bad[off] = map[string]byte{"bit width": 0xff, "block size": 0x81}[name]
		if _, _, err := readAll(bad, 4096); err == nil {
			t.Fatalf("%s: the corrupt page reads", name)
		}
		_, spec, _, err := assembleInputs(t, [][]byte{again, bad}, WriterOptions{})
		if spec == nil || !spec.Copied[0] || !IsInputError(err) {
			t.Errorf("%s: timestamp_ns copied %v; assembling: %v, want an input error", name, spec != nil && spec.Copied[0], err)
		}
	}
}

// An input whose last column chunk runs past the object's end (bytes cut out before its
// footer) is an input error, as it is to a rewrite, not a read error of the store (retried).
func TestAssemblerRefusesAColumnChunkPastTheEnd(t *testing.T) {
	inputs, _ := inputsOf(t, 2, 1500, 0, func(int) []parquet.WriterProperty {
		return []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithMaxRowGroupLength(5000)}
	})
	in := inputs[1]
	footer := int(binary.LittleEndian.Uint32(in[len(in)-8:]))
	start := len(in) - 8 - footer
	cut := append(bytes.Clone(in[:start-footer-200]), in[start:]...)
	if _, _, err := readAll(cut, 333); !IsInputError(err) {
		t.Fatalf("a rewrite's read of the cut input: %v, want an input error", err)
	}
	if _, _, _, err := assembleInputs(t, [][]byte{inputs[0], cut}, WriterOptions{RowGroupRows: 2500}); !IsInputError(err) {
		t.Fatalf("assembling the cut input: %v, want an input error", err)
	}
}

// The copy digest of a stored chunk sees a changed page header of a copied column (its
// encoding, levels' encoding or uncompressed size, and a V2 page's rows, nulls, levels' length
// and compression: how a reader decodes the page's bytes), not only changed page bytes: a chunk
// whose header was damaged in the store must not verify.
func TestCopyDigestSeesChangedPageHeaders(t *testing.T) {
	for _, tc := range []struct {
		version parquet.DataPageVersion
		codec   compress.Compression
		fields  []string // the header fields some bit flip must change
	}{
		{parquet.DataPageV1, compress.Codecs.Snappy, []string{"encoding", "definition levels' encoding", "uncompressed size"}},
		// arrow-go writes is_compressed only when false (true is its default): uncompressed pages.
		{parquet.DataPageV2, compress.Codecs.Uncompressed, []string{"encoding", "uncompressed size", "rows", "nulls", "definition levels' length", "compression"}},
	} {
		inputs, _ := inputsOf(t, 2, 1500, 0, func(int) []parquet.WriterProperty {
			return []parquet.WriterProperty{parquet.WithCompression(tc.codec), parquet.WithDataPageVersion(tc.version)}
		})
		out, spec, read, err := assembleInputs(t, inputs, WriterOptions{RowGroupRows: 2500})
		if err != nil {
			t.Fatal(err)
		}
		oc, err := Open(bytes.NewReader(out), nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf := oc.pf.MetaData().Schema.ColumnIndexByName("i32")
		cc, _ := oc.pf.MetaData().RowGroup(0).ColumnChunk(leaf)
		buf := make([]byte, cc.TotalCompressedSize())
		if _, err := oc.src.ReadAt(buf, cc.DataPageOffset()); err != nil {
			t.Fatal(err)
		}
		oc.Close()
		pages, err := splitPages(context.Background(), buf)
		if err != nil {
			t.Fatal(err)
		}
		changed := map[string]bool{}
		for what, damaged := range headerFlips(buf) {
			changed[what] = true
			chunk := bytes.Clone(out)
			copy(chunk[cc.DataPageOffset():], damaged)
			dc, err := Open(bytes.NewReader(chunk), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := CopyDigest(context.Background(), dc, spec); err == nil && d == read {
				t.Errorf("page kind %d: a header flip changes the page's %s: the copy digest is the inputs'", pages[0].kind, what)
			}
			dc.Close()
		}
		for _, f := range tc.fields {
			if !changed[f] {
				t.Errorf("page kind %d: no flip changes the %s (changed: %v)", pages[0].kind, f, changed)
			}
		}
	}
}

// headerFlips yields the copies of column chunk buf whose first page header has one bit (or a
// compact boolean's two) flipped, its pages still split as before with the same values and
// bytes, and what the flip changed of how the first page is read.
func headerFlips(buf []byte) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		pages, err := splitPages(context.Background(), buf)
		if err != nil {
			return
		}
		want := pages[0]
		for at := range cap(buf) - cap(want.data) {
			// 3 turns a compact boolean's true into false.
			for _, bit := range []byte{1, 2, 3, 4} {
				damaged := bytes.Clone(buf)
				damaged[at] ^= bit
				ps, err := splitPages(context.Background(), damaged)
				if err != nil || len(ps) != len(pages) || ps[0].numValues != want.numValues || !bytes.Equal(ps[0].data, want.data) {
					continue
				}
				var what string
				switch got := ps[0]; {
				case got.encoding != want.encoding:
					what = "encoding"
				case got.defEnc != want.defEnc:
					what = "definition levels' encoding"
				case got.uncompressed != want.uncompressed:
					what = "uncompressed size"
				case got.v2.numRows != want.v2.numRows:
					what = "rows"
				case got.v2.numNulls != want.v2.numNulls:
					what = "nulls"
				case got.v2.defBytes != want.v2.defBytes:
					what = "definition levels' length"
				case got.v2.compressed != want.v2.compressed:
					what = "compression"
				default:
					continue
				}
				if !yield(what, damaged) {
					return
				}
			}
		}
	}
}

// A V2 page whose header counts other rows than values (in a flat column, a value a row) makes
// its output rewritten, not its input reported as corrupt: a rewrite reads its values, and
// writes the rows right.
func TestAssemblerLeavesV2PagesOfOtherRowsToARewrite(t *testing.T) {
	inputs, _ := inputsOf(t, 2, 1500, 0, same(parquet.WithDataPageVersion(parquet.DataPageV2)))
	c, err := Open(bytes.NewReader(inputs[1]), nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.pf.MetaData().Schema.ColumnIndexByName("i32")
	cc, _ := c.pf.MetaData().RowGroup(0).ColumnChunk(leaf)
	c.Close()
	buf := inputs[1][cc.DataPageOffset() : cc.DataPageOffset()+cc.TotalCompressedSize()]
	tried := 0
	for what, damaged := range headerFlips(buf) {
		if what != "rows" {
			continue
		}
		bad := bytes.Clone(inputs[1])
		copy(bad[cc.DataPageOffset():], damaged)
		if _, _, err := readAll(bad, 333); err != nil {
			continue // a reader refuses it too
		}
		tried++
		if _, _, _, err := assembleInputs(t, [][]byte{inputs[0], bad}, WriterOptions{RowGroupRows: 2500}); !errors.Is(err, ErrNotCopyable) || IsInputError(err) {
			t.Errorf("assembling a V2 page of other rows than values: %v, want ErrNotCopyable", err)
		}
	}
	if tried == 0 {
		t.Fatal("no header flip changes the rows of a page a reader reads")
	}
}

// Inputs written without statistics give an output whose timestamp_ns column chunks have them,
// as a rewrite's do: the catalog's block index (Blocks) takes each row group's time range from
// them, and window reads skip row groups by it.
func TestAssembledTimestampsHaveStatisticsWithoutTheInputs(t *testing.T) {
	// timestamp_ns delta-encoded, as a Writer stores it: the copy path copies it (stored PLAIN it
	// would be re-encoded, its statistics a Writer's).
	inputs, recs := inputsOf(t, 3, 1500, 40, func(i int) []parquet.WriterProperty {
		return []parquet.WriterProperty{parquet.WithStats(i == 1), // statistics in the second only
			parquet.WithEncodingFor("timestamp_ns", parquet.Encodings.DeltaBinaryPacked)}
	})
	opts := WriterOptions{RowGroupRows: 2500}
	out, spec, read, err := assembleInputs(t, inputs, opts)
	if err != nil || spec == nil || !spec.Copied[0] {
		t.Fatalf("assemble: %v (spec %v)", err, spec)
	}
	checkAssembled(t, inputs, recs, opts, out, spec, read)
	c, err := Open(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	blocks, err := c.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range blocks {
		if b.MinTs == nil || b.MaxTs == nil || b.Nulls < 0 {
			t.Errorf("row group %d: no timestamp range in the block index (%+v)", i, b)
		}
	}
}

// An input whose timestamp_ns column index does not hold its pages' values (a writer's bug, a
// byte changed in the store: nothing checks an index) gives an output whose timestamp_ns column
// index and statistics hold the values, as a rewrite's do: window reads and the block index
// rely on them.
func TestAssembledTimestampIndexFromTheValues(t *testing.T) {
	inputs, recs := inputsOf(t, 2, 1500, 0, func(int) []parquet.WriterProperty {
		return []parquet.WriterProperty{parquet.WithPageIndexEnabled(true),
			parquet.WithEncodingFor("timestamp_ns", parquet.Encodings.DeltaBinaryPacked)} // copied
	})
	c, err := Open(bytes.NewReader(inputs[1]), nil)
	if err != nil {
		t.Fatal(err)
	}
	ci := c.columnIndex(0, c.TimestampLeaf)
	cc, _ := c.pf.MetaData().RowGroup(0).ColumnChunk(c.TimestampLeaf)
	loc := cc.GetColumnIndexLocation()
	c.Close()
	if ci == nil || loc == nil {
		t.Fatal("no timestamp column index in the input")
	}
	// Find a byte of the column index whose change leaves it readable with another minimum.
	var damaged []byte
	for at := loc.Offset; at < loc.Offset+int64(loc.Length) && damaged == nil; at++ {
		bad := bytes.Clone(inputs[1])
		bad[at] ^= 0x40
		bc, err := Open(bytes.NewReader(bad), nil)
		if err != nil {
			continue
		}
		if bci := bc.columnIndex(0, bc.TimestampLeaf); bci != nil && len(bci.GetMinValues()) == len(ci.GetMinValues()) &&
			!bytes.Equal(bci.GetMinValues()[0], ci.GetMinValues()[0]) && len(bci.GetMinValues()[0]) == 8 {
			damaged = bad
		}
		bc.Close()
	}
	if damaged == nil {
		t.Fatal("no byte of the column index changes a minimum")
	}
	inputs[1] = damaged
	opts := WriterOptions{RowGroupRows: 2500}
	out, spec, read, err := assembleInputs(t, inputs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Copied[0] {
		t.Fatal("timestamp_ns not copied")
	}
	checkAssembled(t, inputs, recs, opts, out, spec, read)
}

// A column chunk larger than the copy path holds in memory (CopiedChunkBytes) makes its output
// rewritten (ErrNotCopyable), not its input reported as corrupt: it is a valid chunk a rewrite
// reads page by page.
func TestAssemblerLeavesLargeColumnChunksToARewrite(t *testing.T) {
	defer func(b int64) { copiedChunkBytes = b }(copiedChunkBytes)
	copiedChunkBytes = 1 << 10
	inputs, _ := inputsOf(t, 2, 1500, 0, func(int) []parquet.WriterProperty { return nil })
	if _, _, _, err := assembleInputs(t, inputs, WriterOptions{RowGroupRows: 2500}); !errors.Is(err, ErrNotCopyable) || IsInputError(err) {
		t.Fatalf("assembling column chunks larger than the copy path holds: %v, want ErrNotCopyable", err)
	}
}

// The page reading and checks of the copy path accept the V2 pages of other writers (parquet-mr,
// arrow-cpp, arrow-rs: parquet-testing's files), as a reader reads them: every flat column chunk
// without a dictionary page splits into pages whose values decompress to their stated size and
// whose levels and values fit them (decompressPage, checkPage).
func TestPageChecksTakeOtherWritersV2Pages(t *testing.T) {
	checked := map[string]int{}
	for _, f := range sharedFiles(t, "parquet-testing") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if readRowsUnchecked(data) != nil {
			continue // a reader refuses it: no copy either
		}
		r, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		fmd := r.MetaData()
		for rg := range fmd.NumRowGroups() {
			for leaf := range fmd.NumColumns() {
				descr := fmd.Schema.Column(leaf)
				cc, err := fmd.RowGroup(rg).ColumnChunk(leaf)
				if err != nil || cc.HasDictionaryPage() || descr.MaxRepetitionLevel() > 0 || descr.MaxDefinitionLevel() > 1 {
					continue
				}
				codec, err := compress.GetCodec(cc.Compression())
				if err != nil {
					continue
				}
				start := cc.DataPageOffset()
				pages, err := splitPages(context.Background(), data[start:start+cc.TotalCompressedSize()])
				if err != nil {
					// nation.dict-malformed.parquet's pages overrun their column chunk; a
					// V2 file's would leave it out of checked below.
					t.Logf("%s row group %d column %s: %v", name, rg, descr.Path(), err)
					continue
				}
				var scratch []byte
				for k := range pages {
					p := &pages[k]
					if p.kind != pageDataV2 {
						continue
					}
					b, err := decompressPage(codec, p, &scratch)
					if err == nil {
						err = checkPage(descr, p, b)
					}
					if err != nil {
						t.Errorf("%s row group %d column %s page %d (%+v): %v", name, rg, descr.Path(), k, p.v2, err)
					}
					checked[name]++
				}
			}
		}
		r.Close()
	}
	t.Logf("V2 pages checked: %v", checked)
	for _, f := range []string{"datapage_v2.snappy.parquet", "delta_binary_packed.parquet", "delta_byte_array.parquet",
		"delta_length_byte_array.parquet", "rle_boolean_encoding.parquet"} {
		if checked[f] == 0 {
			t.Errorf("%s: no V2 page checked", f)
		}
	}
}

// reencodedTimestamps is 1 when the chunk stores timestamp_ns other than delta-encoded (the copy
// path re-encodes it), else 0.
func reencodedTimestamps(t *testing.T, chunk []byte) int {
	t.Helper()
	c, err := Open(bytes.NewReader(chunk), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if storedDelta(c.pf.MetaData(), c.TimestampLeaf) {
		return 0
	}
	return 1
}
