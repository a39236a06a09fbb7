// Command arrowgo writes the arrow-go fixture topics of storeopt's interop check
// (e2e/interop_test.go) into ../topics: arrowgo/ holds every Arrow type of internal/arrowtypes
// that arrow-go v18.8.0 reads back with its stored schema, one column each (string_view,
// binary_view, decimal32 and list_view stored in ARROW:schema over the types arrow-go writes),
// in three chunks whose timestamps overlap; arrowgo_json/ holds the arrow.json extension, which
// arrow-go writes but cannot read back with its stored schema (storeopt reads it in its
// storage type). Topics shaped after public bug reports, two chunks each:
//
//	drift_nullability     a column required in one file and optional in the next (pyarrow
//	                      writers with and without an explicit schema): real drift, refused
//	per_file_values       pandas-through-pyarrow chunks whose "pandas" pair and ARROW:schema
//	                      metadata hold each file's row count, plus a created_by-like pair
//	                      "created_at" with each file's write time: optimized, the first chunk's
//	                      values kept
//	bug_int96_timestamps  nanosecond timestamps stored as INT96 (duckdb/duckdb#707)
//
// Run from the repository root: go run ./e2e/testdata/interop/arrowgo
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/internal/arrowtypes"
)

const (
	chunks = 3
	rows   = 36
)

func main() {
	dir := filepath.Join("e2e", "testdata", "interop", "topics")
	var wide, json []arrowtypes.Case
	for _, tc := range arrowtypes.Cases() {
		if tc.Name == "arrow.json" {
			json = append(json, tc)
		} else {
			wide = append(wide, tc)
		}
	}
	for topic, cases := range map[string][]arrowtypes.Case{"arrowgo": wide, "arrowgo_json": json} {
		names := make([]string, len(cases))
		for i := range cases {
			names[i] = fmt.Sprintf("c%02d", i)
		}
		if err := os.MkdirAll(filepath.Join(dir, topic), 0o755); err != nil {
			fail(err)
		}
		for c := range chunks {
			data, err := arrowtypes.Chunk(cases, names, "interop/"+topic, rows, c)
			if err != nil {
				fail(fmt.Errorf("%s chunk %d: %w", topic, c, err))
			}
			if err := os.WriteFile(filepath.Join(dir, topic, fmt.Sprintf("%05d.parquet", c)), data, 0o644); err != nil {
				fail(err)
			}
		}
	}
	if err := bugTopics(dir); err != nil {
		fail(err)
	}
}

// bugTopics writes the topics shaped after bug reports.
func bugTopics(dir string) error {
	for c := range 2 {
		n := 10 + 7*c // files of different lengths
		for topic, opt := range map[string]func(*spec){
			"drift_nullability":    func(s *spec) { s.valueNullable = c == 1 },
			"per_file_values":      func(s *spec) { s.pandasStop, s.createdAt = n, fmt.Sprintf("2026-11-30T10:0%d:00Z", c) },
			"bug_int96_timestamps": func(s *spec) { s.int96 = true },
		} {
			s := spec{rows: n, chunk: c}
			opt(&s)
			data, err := s.write()
			if err != nil {
				return fmt.Errorf("%s: %w", topic, err)
			}
			if err := os.MkdirAll(filepath.Join(dir, topic), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, topic, fmt.Sprintf("%05d.parquet", c)), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// spec is one chunk of a bug-shaped topic: timestamp_ns, value (float64), at (timestamp[ns]).
type spec struct {
	rows, chunk   int
	valueNullable bool
	pandasStop    int    // > 0: a pandas "range" index metadata of that length
	createdAt     string // a "created_at" footer pair appended after ARROW:schema
	int96         bool   // timestamps as INT96
}

func (s spec) write() ([]byte, error) {
	var md *arrow.Metadata
	if s.pandasStop > 0 {
		m := arrow.NewMetadata([]string{"pandas"}, []string{fmt.Sprintf(
			`{"index_columns": [{"kind": "range", "name": null, "start": 0, "stop": %d, "step": 1}], "creator": {"library": "pyarrow"}}`, s.pandasStop)})
		md = &m
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: s.valueNullable},
		{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
	}, md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range s.rows {
		b.Field(0).(*array.Int64Builder).Append(int64(1_700_000_000_000_000_000 + s.chunk*5_000 + (i*7%s.rows)*1_000))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_123_456_789 + int64(i)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	aprops := []pqarrow.WriterOption{pqarrow.WithStoreSchema()}
	if s.int96 {
		aprops = append(aprops, pqarrow.WithDeprecatedInt96Timestamps(true))
	}
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if s.createdAt != "" {
		if err := w.AppendKeyValueMetadata("created_at", s.createdAt); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "arrowgo:", err)
	os.Exit(1)
}
