package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/parquetio"
)

// writeChunk writes one Parquet file with a nullable timestamp_ns column (nil = null) and the
// given field metadata, Arrow schema stored in the footer.
func writeChunk(t *testing.T, path string, ts []*int64, unit string) {
	t.Helper()
	md := arrow.NewMetadata([]string{"unit"}, []string{unit})
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: md}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range ts {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(*v)
		}
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(ts)))
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openForTest returns the verbatim schema and schema ID of a file.
func openForTest(t *testing.T, path string) *parquetio.Chunk {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c, err := parquetio.Open(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ts(vs ...int64) []*int64 {
	out := make([]*int64, len(vs))
	for i := range vs {
		out[i] = &vs[i]
	}
	return out
}

func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, vals []*int64, unit string) string {
		p := filepath.Join(dir, name)
		writeChunk(t, p, vals, unit)
		return p
	}
	in := file("in.parquet", ts(5, 1), "ns")
	a := file("a.parquet", ts(1, 2, 2), "ns")
	b := file("b.parquet", append(ts(3, 9), nil, nil), "ns")
	noNulls := file("nonulls.parquet", ts(3, 9), "ns")
	late := file("late.parquet", ts(8), "ns")               // 8 after 9: out of order across files
	afterNull := file("afternull.parquet", ts(10), "ns")    // a value after b's nulls
	otherMeta := file("othermeta.parquet", ts(20, 21), "s") // field metadata differs
	withNulls := file("nullsfirst.parquet", append([]*int64{nil}, ts(1)...), "ns")

	ref := openForTest(t, in)
	cases := []struct {
		name      string
		files     []string
		rows      int64
		sorted    bool
		problem   string
		preserved bool
	}{
		{"sorted across files, nulls last", []string{a, b}, 7, true, "", true},
		{"order broken between files", []string{a, noNulls, late}, 6, false, "timestamp 8 < previous 9", true},
		{"value after nulls", []string{b, afterNull}, 5, false, "after a null", true},
		{"null before value in one file", []string{withNulls}, 2, false, "after a null", true},
		{"field metadata differs", []string{a, otherMeta}, 5, true, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := checkOutputs(context.Background(), c.files, ref.Footer)
			if err != nil {
				t.Fatal(err)
			}
			if got.Rows != c.rows || got.Sorted != c.sorted || got.MetadataPreserved != c.preserved || got.Files != len(c.files) {
				t.Fatalf("got %+v", got)
			}
			if !strings.Contains(got.SortProblem, c.problem) || (c.problem == "") != (got.SortProblem == "") {
				t.Fatalf("sort problem %q, want it to contain %q", got.SortProblem, c.problem)
			}
			if !c.preserved && !strings.Contains(got.MetadataProblem, `footer value of "ARROW:schema" differs`) {
				t.Fatalf("metadata problem %q does not show the differing stored schema", got.MetadataProblem)
			}
		})
	}
	if _, err := checkOutputs(context.Background(), []string{filepath.Join(dir, "missing.parquet")}, ref.Footer); err == nil ||
		!strings.Contains(err.Error(), "missing.parquet") {
		t.Fatalf("missing file: error %v does not name it", err)
	}
}

func TestMedian(t *testing.T) {
	ms := func(vs ...float64) []measurement {
		out := make([]measurement, len(vs))
		for i, v := range vs {
			out[i].Seconds = v
		}
		return out
	}
	sec := func(m measurement) float64 { return m.Seconds }
	for _, c := range []struct {
		runs []measurement
		want float64
	}{{ms(), 0}, {ms(3), 3}, {ms(9, 1, 5), 5}, {ms(4, 1, 3, 10), 3.5}} {
		if got := median(c.runs, sec); got != c.want {
			t.Errorf("median of %v = %v, want %v", c.runs, got, c.want)
		}
	}
}

func TestParamsAndProfilePath(t *testing.T) {
	cfg := config{overlap: 0.05, payload: 50_000, seed: 1, shapes: []string{shapeIMU, shapeImage}, runs: 3}
	imu := paramsFor(cfg, shapeIMU)
	if imu.Chunks != 2000 || imu.RowsPerChunk != 5500 || imu.PayloadBytes != 0 {
		t.Fatalf("imu defaults: %+v", imu)
	}
	img := paramsFor(cfg, shapeImage)
	if img.Chunks != 300 || img.RowsPerChunk != 33 || img.PayloadBytes != 50_000 {
		t.Fatalf("image defaults: %+v", img)
	}
	if imu.name() == img.name() || !strings.HasPrefix(imu.name(), "imu-") {
		t.Fatalf("names %s, %s", imu.name(), img.name())
	}
	cfg2 := cfg
	cfg2.seed = 2
	if paramsFor(cfg2, shapeIMU).name() == imu.name() {
		t.Fatal("a different seed must give a different dataset name")
	}
	if got := cfg.profilePath("/x/cpu.prof", shapeImage, 1); got != "/x/cpu.image.2.prof" {
		t.Fatalf("profile path %s", got)
	}
	one := config{shapes: []string{shapeIMU}, runs: 1}
	if got := one.profilePath("/x/cpu.prof", shapeIMU, 0); got != "/x/cpu.prof" {
		t.Fatalf("profile path %s", got)
	}
}
