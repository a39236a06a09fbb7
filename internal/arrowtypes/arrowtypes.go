// Package arrowtypes lists the Arrow column types storeopt must carry through a topic unchanged
// (docs/formats.md#types) with sample values, and writes test chunks of them as other Arrow writers
// do. For tests and fixture generators only.
package arrowtypes

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Case is one column type of that list: Values (a JSON array, one element per row)
// written by plain pqarrow in type Written; Stored, when set, is the type the footer's
// ARROW:schema names instead (what writers that arrow-go cannot imitate store: polars'
// string_view, decimal32…).
type Case struct {
	Name    string
	Written arrow.DataType
	Stored  arrow.DataType
	Values  string
	// Dict says the column must stay dictionary-encoded when rewritten.
	Dict bool
	// PlainReadFails says plain pqarrow (arrow-go v18.8.0, ReadTable with the stored schema)
	// refuses a chunk of this case; storeopt's own reader reads it (parquetio). Tests that read
	// the cases with plain pqarrow skip exactly these and fail on any other case it refuses.
	PlainReadFails bool
}

func jsonType() arrow.DataType {
	jt, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err) // utf8 is a valid storage type
	}
	return jt
}

// Cases returns every type case, six values each (nulls, extremes, duplicates).
func Cases() []Case {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	point := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true})
	strs := `["a", null, "", "ü€", "a", "b"]`
	return []Case{
		{Name: "utf8", Written: arrow.BinaryTypes.String, Values: strs},
		{Name: "large_utf8", Written: arrow.BinaryTypes.LargeString, Values: strs},
		{Name: "string_view", Written: arrow.BinaryTypes.String, Stored: arrow.BinaryTypes.StringView, Values: strs},
		{Name: "binary", Written: arrow.BinaryTypes.Binary, Values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{Name: "large_binary", Written: arrow.BinaryTypes.LargeBinary, Values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{Name: "binary_view", Written: arrow.BinaryTypes.Binary, Stored: arrow.BinaryTypes.BinaryView, Values: `["AAE=", null, "", "/w==", "AAE=", "AA=="]`},
		{Name: "dictionary<int32, utf8>", Written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Values: strs, Dict: true},
		{Name: "dictionary<int8, utf8>", Written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Values: strs, Dict: true},
		{Name: "dictionary<int32, uint8>", Written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Uint8}, Values: `[1, null, 2, 1, 255, 0]`, Dict: true},
		{Name: "dictionary<int16, int64>", Written: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Int64}, Values: `[1, null, -2, 1, 9007199254740993, 0]`, Dict: true},
		{Name: "timestamp[s]", Written: ts(arrow.Second, ""), Values: `[0, null, 1700000000, -1, 253402300799, 1]`},
		{Name: "timestamp[ms, UTC]", Written: ts(arrow.Millisecond, "UTC"), Values: `[0, null, 1700000000123, -1, 5, 1]`},
		{Name: "timestamp[us, Europe/Rome]", Written: ts(arrow.Microsecond, "Europe/Rome"), Values: `[0, null, 1700000000123456, -1, 5, 1]`},
		{Name: "timestamp[ns]", Written: ts(arrow.Nanosecond, ""), Values: `[0, null, 1700000000123456789, -1, 5, 1]`},
		{Name: "timestamp[s, +05:30]", Written: ts(arrow.Second, "+05:30"), Values: `[0, null, 1700000000, -1, 5, 1]`},
		{Name: "date32", Written: arrow.FixedWidthTypes.Date32, Values: `[0, null, 19000, -1, 2932896, 1]`},
		{Name: "date64", Written: arrow.FixedWidthTypes.Date64, Values: `[0, null, 1641600000000, -86400000, 86400000, 0]`},
		{Name: "time32[s]", Written: arrow.FixedWidthTypes.Time32s, Values: `[0, null, 86399, 1, 3600, 0]`},
		{Name: "time32[ms]", Written: arrow.FixedWidthTypes.Time32ms, Values: `[0, null, 86399999, 1, 3600, 0]`},
		{Name: "time64[us]", Written: arrow.FixedWidthTypes.Time64us, Values: `[0, null, 86399999999, 1, 3600, 0]`},
		{Name: "time64[ns]", Written: arrow.FixedWidthTypes.Time64ns, Values: `[0, null, 86399999999999, 1, 3600, 0]`},
		{Name: "decimal128(9, 2)", Written: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Values: `["1.23", null, "-9999999.99", "0.00", "9999999.99", "1.23"]`},
		{Name: "decimal128(18, 3)", Written: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Values: `["1.234", null, "-999999999999999.999", "0.000", "5", "1"]`},
		{Name: "decimal128(38, 10)", Written: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Values: `["1.2345678901", null, "-9999999999999999999999999999.9999999999", "0", "5", "1"]`},
		{Name: "decimal256(76, 20)", Written: &arrow.Decimal256Type{Precision: 76, Scale: 20}, Values: `["1.2", null, "-99999999999999999999999999999999999999999999999999999999.99999999999999999999", "0", "5", "1"]`},
		{Name: "decimal32(9, 2)", Written: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Stored: &arrow.Decimal32Type{Precision: 9, Scale: 2}, Values: `["1.23", null, "-9999999.99", "0.00", "9999999.99", "1.23"]`},
		{Name: "float16", Written: arrow.FixedWidthTypes.Float16, Values: `[0.5, null, -65504, 1, 0.0001, 1]`},
		{Name: "float32 with NaN", Written: arrow.PrimitiveTypes.Float32, Values: `[0.5, null, "NaN", "Inf", "-Inf", -0.0]`},
		{Name: "uint64 above 2^63", Written: arrow.PrimitiveTypes.Uint64, Values: `[18446744073709551615, null, 9223372036854775808, 0, 1, 9223372036854775807]`},
		{Name: "int8", Written: arrow.PrimitiveTypes.Int8, Values: `[-128, null, 127, 0, 1, -1]`},
		{Name: "uint32", Written: arrow.PrimitiveTypes.Uint32, Values: `[4294967295, null, 2147483648, 0, 1, 7]`},
		{Name: "bool", Written: arrow.FixedWidthTypes.Boolean, Values: `[true, null, false, true, true, false]`},
		{Name: "fixed_size_binary(16)", Written: &arrow.FixedSizeBinaryType{ByteWidth: 16}, Values: `["AAECAwQFBgcICQoLDA0ODw==", null, "/////////////////////w==", "AAAAAAAAAAAAAAAAAAAAAA==", "AAECAwQFBgcICQoLDA0ODw==", "AQEBAQEBAQEBAQEBAQEBAQ=="]`},
		{Name: "arrow.uuid", Written: extensions.NewUUIDType(), Values: `["00010203-0405-0607-0809-0a0b0c0d0e0f", null, "ffffffff-ffff-ffff-ffff-ffffffffffff", "00000000-0000-0000-0000-000000000000", "00010203-0405-0607-0809-0a0b0c0d0e0f", "01010101-0101-0101-0101-010101010101"]`},
		{Name: "arrow.json", Written: jsonType(), Values: `["{\"a\":1}", null, "[]", "null", "{\"a\":1}", "\"s\""]`, PlainReadFails: true},
		{Name: "fixed_size_list<float32, 3>", Written: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Values: `[[1, 2, 3], [7, 8, 9], [null, 0, -1], [4, 5, 6], [1, 2, 3], [0, 0, 0]]`},
		{Name: "list<int32>", Written: arrow.ListOf(arrow.PrimitiveTypes.Int32), Values: `[[1, 2], null, [], [null], [3, null, 4], [5]]`},
		{Name: "large_list<utf8>", Written: arrow.LargeListOf(arrow.BinaryTypes.String), Values: `[["a"], null, [], [null, ""], ["b", "c"], ["d"]]`},
		{Name: "list_view<int32>", Written: arrow.ListOf(arrow.PrimitiveTypes.Int32), Stored: arrow.ListViewOf(arrow.PrimitiveTypes.Int32), Values: `[[1, 2], null, [], [null], [3, null, 4], [5]]`},
		{Name: "struct<x, label>", Written: point, Values: `[{"x": 1, "label": "a"}, null, {"x": null, "label": null}, {"x": 2, "label": ""}, {"x": 1, "label": "a"}, {"x": -0.5, "label": "z"}]`},
		{Name: "list<struct>", Written: arrow.ListOf(point), Values: `[[{"x": 1, "label": "a"}, null], null, [], [{"x": null, "label": null}], [{"x": 2, "label": "b"}, {"x": 3, "label": "c"}], [null]]`},
		{Name: "struct<list, struct>", Written: arrow.StructOf(arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			arrow.Field{Name: "p", Type: point, Nullable: true}), Values: `[{"tags": ["a", null], "p": {"x": 1, "label": "q"}}, null, {"tags": null, "p": null}, {"tags": [], "p": {"x": null, "label": null}}, {"tags": ["b"], "p": null}, {"tags": null, "p": {"x": 2, "label": "r"}}]`},
		{Name: "map<utf8, int64>", Written: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Values: `[[{"key": "a", "value": 1}, {"key": "b", "value": null}], null, [], [{"key": "c", "value": 3}], [{"key": "a", "value": 1}], [{"key": "", "value": -1}]]`},
		{Name: "list<list<int64>>", Written: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), Values: `[[[1], [], null], null, [], [[null, 2]], [[3, 4], [5]], [null]]`},
	}
}

// File writes a chunk of column "v" of tc plus timestamp_ns (unsorted, with nulls): rows rows
// (the six values repeated), in two row groups, with plain pqarrow, the footer's ARROW:schema
// naming tc.Stored when set. It returns the file's bytes.
func File(tc Case, rows int) ([]byte, error) {
	b, err := Chunk([]Case{tc}, []string{"v"}, "types/"+tc.Name, rows, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tc.Name, err)
	}
	return b, nil
}

// Chunk writes chunk number chunk of a topic with timestamp_ns and one column per case (named
// names[i]): rows rows (each case's six values repeated, rows a multiple of six), timestamps
// unsorted with ties and nulls, overlapping those of the topic's other chunks; in two row
// groups, with plain pqarrow (dictionary encoding where a case asks for it), the footer's
// ARROW:schema naming each case's Stored type where set. It returns the file's bytes.
func Chunk(cases []Case, names []string, topic string, rows, chunk int) ([]byte, error) {
	topicMD := arrow.NewMetadata([]string{"topic"}, []string{topic})
	fields := []arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	cols := []arrow.Array{timestamps(rows, chunk)}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}
	restored := false
	for i, tc := range cases {
		fields = append(fields, arrow.Field{Name: names[i], Type: tc.Written, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"unit"}, []string{"test"})})
		vals, err := repeat(tc, rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tc.Name, err)
		}
		cols = append(cols, vals)
		if tc.Dict {
			props = append(props, parquet.WithDictionaryFor(names[i], true))
		}
		restored = restored || tc.Stored != nil
	}
	schema := arrow.NewSchema(fields, &topicMD)
	rec := array.NewRecordBatch(schema, cols, int64(rows))
	defer rec.Release()

	var buf bytes.Buffer
	aprops := []pqarrow.WriterOption{pqarrow.WithStoreSchema()}
	if restored {
		aprops = nil // ARROW:schema is appended below, with the stored types
	}
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		return nil, err
	}
	for _, part := range []arrow.RecordBatch{rec.NewSlice(0, rec.NumRows()/2), rec.NewSlice(rec.NumRows()/2, rec.NumRows())} {
		err := w.Write(part)
		part.Release()
		if err != nil {
			return nil, err
		}
	}
	if restored {
		stored := schema.Fields()
		for i, tc := range cases {
			if tc.Stored != nil {
				stored[i+1].Type = tc.Stored
			}
		}
		sc := arrow.NewSchema(stored, &topicMD)
		if err := w.AppendKeyValueMetadata("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, memory.DefaultAllocator))); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// timestamps are the timestamp_ns values of a chunk: unsorted, with ties and nulls.
func timestamps(rows, chunk int) arrow.Array {
	tb := array.NewInt64Builder(memory.DefaultAllocator)
	defer tb.Release()
	for i := range rows {
		if i%9 == 4 {
			tb.AppendNull()
		} else {
			tb.Append(int64((i*7919)%1000 + chunk*300))
		}
	}
	return tb.NewArray()
}

// repeat returns rows values of tc: its six values over and over.
func repeat(tc Case, rows int) (arrow.Array, error) {
	col, _, err := array.FromJSON(memory.DefaultAllocator, tc.Written, strings.NewReader(tc.Values))
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	defer col.Release()
	if rows%col.Len() != 0 {
		return nil, fmt.Errorf("%d rows is not a multiple of %d values", rows, col.Len())
	}
	parts := make([]arrow.Array, rows/col.Len())
	for i := range parts {
		parts[i] = col
	}
	return array.Concatenate(parts, memory.DefaultAllocator)
}
