package parquetio

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/verify"
)

// typeCase is one column type of issue 8's point 3: values (JSON, one per row) written by plain
// pqarrow in type written; stored, when set, is the type the footer's ARROW:schema names instead
// (what writers that arrow-go cannot imitate store: polars' string_view, decimal32…).
type typeCase struct {
	name    string
	written arrow.DataType
	stored  arrow.DataType
	values  string
	// dict says the column must stay dictionary-encoded in the output.
	dict bool
}

func mustJSONType(t testing.TB) arrow.DataType {
	jt, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	return jt
}

func typeCases(t testing.TB) []typeCase {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	point := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true})
	strs := `["a", null, "", "ü€", "a", "b"]`
	return []typeCase{
		{name: "utf8", written: arrow.BinaryTypes.String, values: strs},
		{name: "large_utf8", written: arrow.BinaryTypes.LargeString, values: strs},
		{name: "string_view", written: arrow.BinaryTypes.String, stored: arrow.BinaryTypes.StringView, values: strs},
		{name: "binary", written: arrow.BinaryTypes.Binary, values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{name: "large_binary", written: arrow.BinaryTypes.LargeBinary, values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{name: "binary_view", written: arrow.BinaryTypes.Binary, stored: arrow.BinaryTypes.BinaryView, values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{name: "dictionary<int32, utf8>", written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, values: strs, dict: true},
		{name: "dictionary<int8, utf8>", written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, values: strs, dict: true},
		{name: "dictionary<int32, uint8>", written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Uint8}, values: `[1, null, 2, 1, 255, 0]`, dict: true},
		{name: "dictionary<int16, int64>", written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Int64}, values: `[1, null, -2, 1, 9007199254740993, 0]`, dict: true},
		{name: "timestamp[s]", written: ts(arrow.Second, ""), values: `[0, null, 1700000000, -1, 253402300799, 1]`},
		{name: "timestamp[ms, UTC]", written: ts(arrow.Millisecond, "UTC"), values: `[0, null, 1700000000123, -1, 5, 1]`},
		{name: "timestamp[us, Europe/Rome]", written: ts(arrow.Microsecond, "Europe/Rome"), values: `[0, null, 1700000000123456, -1, 5, 1]`},
		{name: "timestamp[ns]", written: ts(arrow.Nanosecond, ""), values: `[0, null, 1700000000123456789, -1, 5, 1]`},
		{name: "timestamp[s, +05:30]", written: ts(arrow.Second, "+05:30"), values: `[0, null, 1700000000, -1, 5, 1]`},
		{name: "date32", written: arrow.FixedWidthTypes.Date32, values: `[0, null, 19000, -1, 2932896, 1]`},
		{name: "date64", written: arrow.FixedWidthTypes.Date64, values: `[0, null, 1641600000000, -86400000, 86400000, 0]`},
		{name: "time32[s]", written: arrow.FixedWidthTypes.Time32s, values: `[0, null, 86399, 1, 3600, 0]`},
		{name: "time32[ms]", written: arrow.FixedWidthTypes.Time32ms, values: `[0, null, 86399999, 1, 3600, 0]`},
		{name: "time64[us]", written: arrow.FixedWidthTypes.Time64us, values: `[0, null, 86399999999, 1, 3600, 0]`},
		{name: "time64[ns]", written: arrow.FixedWidthTypes.Time64ns, values: `[0, null, 86399999999999, 1, 3600, 0]`},
		{name: "decimal128(9, 2)", written: &arrow.Decimal128Type{Precision: 9, Scale: 2}, values: `["1.23", null, "-9999999.99", "0.00", "9999999.99", "1.23"]`},
		{name: "decimal128(18, 3)", written: &arrow.Decimal128Type{Precision: 18, Scale: 3}, values: `["1.234", null, "-999999999999999.999", "0.000", "5", "1"]`},
		{name: "decimal128(38, 10)", written: &arrow.Decimal128Type{Precision: 38, Scale: 10}, values: `["1.2345678901", null, "-9999999999999999999999999999.9999999999", "0", "5", "1"]`},
		{name: "decimal256(76, 20)", written: &arrow.Decimal256Type{Precision: 76, Scale: 20}, values: `["1.2", null, "-99999999999999999999999999999999999999999999999999999999.99999999999999999999", "0", "5", "1"]`},
		{name: "decimal32(9, 2)", written: &arrow.Decimal128Type{Precision: 9, Scale: 2}, stored: &arrow.Decimal32Type{Precision: 9, Scale: 2}, values: `["1.23", null, "-9999999.99", "0.00", "9999999.99", "1.23"]`},
		{name: "float16", written: arrow.FixedWidthTypes.Float16, values: `[0.5, null, -65504, 1, 0.0001, 1]`},
		{name: "float32 with NaN", written: arrow.PrimitiveTypes.Float32, values: `[0.5, null, "NaN", "Inf", "-Inf", -0.0]`},
		{name: "uint64 above 2^63", written: arrow.PrimitiveTypes.Uint64, values: `[18446744073709551615, null, 9223372036854775808, 0, 1, 9223372036854775807]`},
		{name: "int8", written: arrow.PrimitiveTypes.Int8, values: `[-128, null, 127, 0, 1, -1]`},
		{name: "uint32", written: arrow.PrimitiveTypes.Uint32, values: `[4294967295, null, 2147483648, 0, 1, 7]`},
		{name: "bool", written: arrow.FixedWidthTypes.Boolean, values: `[true, null, false, true, true, false]`},
		{name: "fixed_size_binary(16)", written: &arrow.FixedSizeBinaryType{ByteWidth: 16}, values: `["AAECAwQFBgcICQoLDA0ODw==", null, "/////////////////////w==", "AAAAAAAAAAAAAAAAAAAAAA==", "AAECAwQFBgcICQoLDA0ODw==", "AQEBAQEBAQEBAQEBAQEBAQ=="]`},
		{name: "arrow.uuid", written: extensions.NewUUIDType(), values: `["00010203-0405-0607-0809-0a0b0c0d0e0f", null, "ffffffff-ffff-ffff-ffff-ffffffffffff", "00000000-0000-0000-0000-000000000000", "00010203-0405-0607-0809-0a0b0c0d0e0f", "01010101-0101-0101-0101-010101010101"]`},
		{name: "arrow.json", written: mustJSONType(t), values: `["{\"a\":1}", null, "[]", "null", "{\"a\":1}", "\"s\""]`},
		{name: "fixed_size_list<float32, 3>", written: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), values: `[[1, 2, 3], [7, 8, 9], [null, 0, -1], [4, 5, 6], [1, 2, 3], [0, 0, 0]]`},
		{name: "list<int32>", written: arrow.ListOf(arrow.PrimitiveTypes.Int32), values: `[[1, 2], null, [], [null], [3, null, 4], [5]]`},
		{name: "large_list<utf8>", written: arrow.LargeListOf(arrow.BinaryTypes.String), values: `[["a"], null, [], [null, ""], ["b", "c"], ["d"]]`},
		{name: "list_view<int32>", written: arrow.ListOf(arrow.PrimitiveTypes.Int32), stored: arrow.ListViewOf(arrow.PrimitiveTypes.Int32), values: `[[1, 2], null, [], [null], [3, null, 4], [5]]`},
		{name: "struct<x, label>", written: point, values: `[{"x": 1, "label": "a"}, null, {"x": null, "label": null}, {"x": 2, "label": ""}, {"x": 1, "label": "a"}, {"x": -0.5, "label": "z"}]`},
		{name: "list<struct>", written: arrow.ListOf(point), values: `[[{"x": 1, "label": "a"}, null], null, [], [{"x": null, "label": null}], [{"x": 2, "label": "b"}, {"x": 3, "label": "c"}], [null]]`},
		{name: "struct<list, struct>", written: arrow.StructOf(arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			arrow.Field{Name: "p", Type: point, Nullable: true}), values: `[{"tags": ["a", null], "p": {"x": 1, "label": "q"}}, null, {"tags": null, "p": null}, {"tags": [], "p": {"x": null, "label": null}}, {"tags": ["b"], "p": null}, {"tags": null, "p": {"x": 2, "label": "r"}}]`},
		{name: "map<utf8, int64>", written: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), values: `[[{"key": "a", "value": 1}, {"key": "b", "value": null}], null, [], [{"key": "c", "value": 3}], [{"key": "a", "value": 1}], [{"key": "", "value": -1}]]`},
		{name: "list<list<int64>>", written: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), values: `[[[1], [], null], null, [], [[null, 2]], [[3, 4], [5]], [null]]`},
	}
}

// typeCaseFile writes a chunk of one typeCase column plus timestamp_ns (rows times the six
// values) with plain pqarrow, ARROW:schema naming tc.stored when set, and returns its bytes.
func typeCaseFile(t testing.TB, tc typeCase, rows int) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: tc.written, Nullable: true, Metadata: md("unit", "test")},
	}, ptr(md("topic", "types/"+tc.name)))
	col, _, err := array.FromJSON(memory.DefaultAllocator, tc.written, strings.NewReader(tc.values))
	if err != nil {
		t.Fatalf("%s: values: %v", tc.name, err)
	}
	defer col.Release()
	var cols []arrow.Array
	for range rows / col.Len() {
		col.Retain()
		cols = append(cols, col)
	}
	vals, err := array.Concatenate(cols, memory.DefaultAllocator)
	for _, c := range cols {
		c.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer vals.Release()
	tb := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range vals.Len() {
		if i%9 == 4 {
			tb.AppendNull()
		} else {
			tb.Append(int64((i * 7919) % 1000))
		}
	}
	tsCol := tb.NewArray()
	tb.Release()
	defer tsCol.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{tsCol, vals}, int64(vals.Len()))
	defer rec.Release()

	var buf bytes.Buffer
	aprops := []pqarrow.WriterOption{pqarrow.WithStoreSchema()}
	if tc.stored != nil {
		aprops = nil
	}
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithDictionaryDefault(tc.dict)),
		pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	// two row groups
	for _, part := range []arrow.RecordBatch{rec.NewSlice(0, rec.NumRows()/2), rec.NewSlice(rec.NumRows()/2, rec.NumRows())} {
		err := w.Write(part)
		part.Release()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	if tc.stored != nil {
		fields := schema.Fields()
		fields[1].Type = tc.stored
		stored := arrow.NewSchema(fields, ptr(schema.Metadata()))
		if err := w.AppendKeyValueMetadata(ArrowSchemaKey, base64.StdEncoding.EncodeToString(flight.SerializeSchema(stored, memory.DefaultAllocator))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	return buf.Bytes()
}

// plainRead reads data with plain pqarrow and returns its Arrow schema and every row rendered.
func plainRead(t testing.TB, data []byte) (*arrow.Schema, []string, error) {
	t.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, err
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var parts []string
			for _, col := range rec.Columns() {
				parts = append(parts, col.ValueStr(i))
			}
			rows = append(rows, strings.Join(parts, "|"))
		}
	}
	return tbl.Schema(), rows, nil
}

// dictionaryEncoded reports whether column chunk leaf of every row group of data has a
// dictionary page.
func dictionaryEncoded(t testing.TB, data []byte, leaf int) bool {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	for rg := range pf.NumRowGroups() {
		cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
		if err != nil {
			t.Fatal(err)
		}
		if !cc.HasDictionaryPage() {
			return false
		}
	}
	return true
}

// Every type of issue 8's point 3 is read in its storage type, written back with the input's
// footer verbatim, read back by plain pqarrow with the same Arrow types and values, and digested
// identically before and after.
func TestEveryTypeRoundTrips(t *testing.T) {
	for _, tc := range typeCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			in := typeCaseFile(t, tc, 600)
			c, dIn, err := readAll(in, 97)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			out := rewrite(t, in, 97)
			back, dOut, err := readAll(out, 97)
			if err != nil {
				t.Fatalf("read the output: %v", err)
			}
			if d := FirstFooterDifference(c.Footer, back.Footer); d != "" {
				t.Fatalf("footer: %s", d)
			}
			if dIn != dOut || dIn.Rows != 600 {
				t.Fatalf("digest of the input %s, of the output %s", dIn, dOut)
			}
			sIn, rowsIn, errIn := plainRead(t, in)
			sOut, rowsOut, errOut := plainRead(t, out)
			if errIn != nil || errOut != nil {
				// arrow-go cannot read the input with its stored schema (arrow.json in v18.8.0):
				// it must fail the same way on the output.
				if errIn == nil || errOut == nil || errIn.Error() != errOut.Error() {
					t.Fatalf("plain pqarrow reads the input with error %v, the output with error %v", errIn, errOut)
				}
				t.Logf("plain pqarrow cannot read input nor output: %v", errIn)
				return
			}
			if !sIn.Equal(sOut) || sIn.Field(1).Type.String() != back.Schema.Field(1).Type.String() {
				t.Fatalf("pqarrow reads the input as %s, the output as %s", sIn.Field(1).Type, sOut.Field(1).Type)
			}
			if strings.Join(rowsIn, "\n") != strings.Join(rowsOut, "\n") {
				t.Fatalf("rows differ:\n%s\n---\n%s", strings.Join(rowsIn[:6], "\n"), strings.Join(rowsOut[:6], "\n"))
			}
			if tc.dict && !dictionaryEncoded(t, out, 1) {
				t.Fatalf("the output of a dictionary column is not dictionary-encoded")
			}
			t.Logf("stored %s, read as %s", cmpOr(tc.stored, tc.written), sOut.Field(1).Type)
		})
	}
}

func cmpOr(a, b arrow.DataType) arrow.DataType {
	if a != nil {
		return a
	}
	return b
}

var _ = fmt.Sprint
var _ = verify.Digest{}
