package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
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

func TestPathsOf(t *testing.T) {
	outputs := func(arrow ...int64) []catalog.Chunk {
		cs := make([]catalog.Chunk, len(arrow))
		for i, a := range arrow {
			cs[i] = catalog.Chunk{Ordinal: i, ArrowSizeBytes: a}
		}
		return cs
	}
	for _, c := range []struct {
		name    string
		written []activities.WriteChunksResult
		outputs []catalog.Chunk
		want    pathBytes
		path    string
		err     string
	}{
		{"all rewritten", []activities.WriteChunksResult{{Chunks: 2}, {Chunks: 1}}, outputs(100, 200, 50),
			pathBytes{RewriteChunks: 3, RewriteArrowBytes: 350}, pathRewrite, ""},
		{"all copied", []activities.WriteChunksResult{{Chunks: 1, CopiedChunks: 1, CopiedArrowBytes: 100}, {Chunks: 1, CopiedChunks: 1, CopiedArrowBytes: 200}},
			outputs(100, 200), pathBytes{CopyChunks: 2, CopyArrowBytes: 300}, pathCopy, ""},
		{"groups of both paths", []activities.WriteChunksResult{{Chunks: 2, CopiedChunks: 1, CopiedArrowBytes: 200}, {Chunks: 1}},
			outputs(100, 200, 50), pathBytes{RewriteChunks: 2, RewriteArrowBytes: 150, CopyChunks: 1, CopyArrowBytes: 200}, pathMixed, ""},
		{"all kept", []activities.WriteChunksResult{{Chunks: 2, PassedChunks: 2, PassedArrowBytes: 300}},
			outputs(100, 200), pathBytes{PassChunks: 2, PassArrowBytes: 300}, pathPass, ""},
		{"kept and copied", []activities.WriteChunksResult{{Chunks: 2, PassedChunks: 1, PassedArrowBytes: 200, CopiedChunks: 1, CopiedArrowBytes: 100}},
			outputs(100, 200), pathBytes{PassChunks: 1, PassArrowBytes: 200, CopyChunks: 1, CopyArrowBytes: 100}, pathMixed, ""},
		{"no output", nil, nil, pathBytes{}, "", ""},
		{"a chunk not written by these calls", []activities.WriteChunksResult{{Chunks: 1}}, outputs(100, 200), pathBytes{}, "",
			"WriteChunks wrote 1 output chunks, the catalog lists 2"},
		{"more copied than committed", []activities.WriteChunksResult{{Chunks: 1, CopiedChunks: 1, CopiedArrowBytes: 101}}, outputs(100), pathBytes{}, "",
			"more than the 1 committed (100 Arrow bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := pathsOf(c.written, c.outputs)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got.path() != c.path {
				t.Fatalf("got %+v (path %q), want %+v (path %q)", got, got.path(), c.want, c.path)
			}
		})
	}
}

// pathReports are a read and a storeopt report of one dataset, the storeopt job's output a
// quarter copied.
func pathReports() []jobReport {
	perGB := 7.5
	paths := &pathBytes{RewriteChunks: 3, RewriteArrowBytes: 1_500_000_000, CopyChunks: 1, CopyArrowBytes: 500_000_000}
	yes := true
	return []jobReport{
		{Type: "job", Job: jobRead, Shape: shapeIMU, InputArrowBytes: 2e9, RowsMatch: true},
		{Type: "job", Job: jobStoreopt, Shape: shapeIMU, InputArrowBytes: 2e9, CPUSeconds: 15, CPUSecondsPerArrowGB: &perGB,
			Paths: paths, Path: paths.path(), RowsMatch: true, Sorted: &yes, MetadataPreserved: &yes,
			Runs: []measurement{{CPUSeconds: 15, Paths: paths}}},
	}
}

func TestTableShowsPaths(t *testing.T) {
	var buf bytes.Buffer
	printTable(&buf, pathReports(), nil, 0)
	lines := strings.Split(buf.String(), "\n")
	header := strings.Join(strings.Fields(lines[0]), " ")
	if !strings.Contains(header, "cpu s rewrite GB copy GB pass GB path cpu s/GB peak RSS MiB") {
		t.Fatalf("header %q has no path columns before cpu s/GB", header)
	}
	// Columns: job shape input MB output MB rows seconds cpu s | rewrite GB copy GB pass GB path cpu s/GB | ...
	read, storeopt := strings.Fields(lines[1]), strings.Fields(lines[2])
	if got := strings.Join(read[7:11], " "); got != "- - - -" {
		t.Errorf("read row: path cells %q, want dashes (%q)", got, lines[1])
	}
	if got := strings.Join(storeopt[7:12], " "); got != "1.500 0.500 0.000 mixed 7.50" {
		t.Errorf("storeopt row: path cells and cpu s/GB %q, want 1.500 0.500 0.000 mixed 7.50 (%q)", got, lines[2])
	}
	want := "storeopt imu: output by path: rewrite 3 chunks (1500.0 MB Arrow), copy 1 chunk (500.0 MB), pass-through 0 chunks (0.0 MB); cpu s/GB is that of the paths together"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("table notes lack %q:\n%s", want, buf.String())
	}
}

func TestJSONCarriesPaths(t *testing.T) {
	reports := pathReports()
	var got []map[string]any
	for _, r := range reports {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	read, storeopt := got[0], got[1]
	if v, ok := read["paths"]; !ok || v != nil {
		t.Errorf("read job: paths = %v (present %t), want null", v, ok)
	}
	if _, ok := read["path"]; ok {
		t.Errorf("read job has a path: %v", read["path"])
	}
	wantPaths := map[string]any{"rewrite_chunks": 3.0, "rewrite_arrow_bytes": 1.5e9, "copy_chunks": 1.0, "copy_arrow_bytes": 5e8,
		"pass_chunks": 0.0, "pass_arrow_bytes": 0.0}
	if fmt.Sprint(storeopt["paths"]) != fmt.Sprint(wantPaths) || storeopt["path"] != pathMixed || storeopt["cpu_seconds_per_arrow_gb"] != 7.5 {
		t.Errorf("storeopt job: paths %v, path %v, cpu_seconds_per_arrow_gb %v", storeopt["paths"], storeopt["path"], storeopt["cpu_seconds_per_arrow_gb"])
	}
	runs, _ := storeopt["runs"].([]any)
	if len(runs) != 1 || fmt.Sprint(runs[0].(map[string]any)["paths"]) != fmt.Sprint(wantPaths) {
		t.Errorf("storeopt job: runs %v lack the run's paths", storeopt["runs"])
	}
}

func TestPerArrowGB(t *testing.T) {
	if got := perArrowGB(3, 1_500_000_000); got == nil || *got != 2 {
		t.Fatalf("3 s over 1.5 GB: %v", got)
	}
	if got := perArrowGB(3, 0); got != nil {
		t.Fatalf("no bytes: %v, want nil", *got)
	}
}

func TestOverlappingChunk(t *testing.T) {
	chunk := func(key string, lo, hi int64) catalog.Chunk {
		return catalog.Chunk{ObjectKey: key, MinTimestampNs: &lo, MaxTimestampNs: &hi}
	}
	for _, c := range []struct {
		name   string
		chunks []catalog.Chunk
		want   string
	}{
		{"disjoint", []catalog.Chunk{chunk("a", 1, 5), chunk("b", 6, 9), chunk("c", 10, 10)}, ""},
		{"equal boundary", []catalog.Chunk{chunk("a", 1, 5), chunk("b", 5, 9)}, "chunk b starts at 5, not after 5"},
		{"overlapping", []catalog.Chunk{chunk("a", 1, 5), chunk("b", 6, 9), chunk("c", 7, 12)}, "chunk c starts at 7, not after 9"},
		{"a long chunk, then disjoint ones", []catalog.Chunk{chunk("a", 1, 50), chunk("b", 51, 52), chunk("c", 53, 60)}, ""},
		{"inside an earlier chunk", []catalog.Chunk{chunk("a", 1, 50), chunk("b", 2, 3)}, "chunk b starts at 2"},
		{"no timestamps", []catalog.Chunk{chunk("a", 1, 5), {ObjectKey: "b"}}, "chunk b has no timestamp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := overlappingChunk(c.chunks)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTableSplitsPeakRSS(t *testing.T) {
	reports := pathReports()
	reports[1].PeakRSSBytes, reports[1].PeakAnonBytes, reports[1].PeakFileBytes = 100<<20, 60<<20, 41<<20
	var buf bytes.Buffer
	printTable(&buf, reports, nil, 64<<20)
	lines := strings.Split(buf.String(), "\n")
	if header := strings.Join(strings.Fields(lines[0]), " "); !strings.Contains(header, "peak RSS MiB anon MiB file MiB out chunks") {
		t.Fatalf("header %q has no anon and file columns after peak RSS", header)
	}
	// Columns: … cpu s/GB peak RSS MiB anon MiB file MiB out chunks sorted metadata
	read, storeopt := strings.Fields(lines[1]), strings.Fields(lines[2])
	if got := strings.Join(read[len(read)-5:len(read)-3], " "); got != "- -" {
		t.Errorf("read row without a split: anon and file cells %q, want dashes (%q)", got, lines[1])
	}
	if got := strings.Join(storeopt[len(storeopt)-6:len(storeopt)-3], " "); got != "100 60 41" {
		t.Errorf("storeopt row: peak, anon and file cells %q, want 100 60 41 (%q)", got, lines[2])
	}
	if want := "storeopt imu: peak RSS 100 MiB (anon 60 MiB, file 41 MiB) with a memory pool of 64 MiB (RSS - pool = 36 MiB)"; !strings.Contains(buf.String(), want) {
		t.Errorf("table notes lack %q:\n%s", want, buf.String())
	}
}

func TestStatusBytes(t *testing.T) {
	status := "Name:\tbench\nVmHWM:\t  118152 kB\nVmRSS:\t  108664 kB\nRssAnon:\t   66656 kB\nRssFile:\t   42008 kB\n"
	for key, want := range map[string]int64{"VmHWM:": 118152 << 10, "RssAnon:": 66656 << 10, "RssFile:": 42008 << 10, "RssShmem:": 0} {
		if got := statusBytes(status, key); got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
	if got := parseVmHWM(status); got != 118152<<10 {
		t.Errorf("parseVmHWM = %d", got)
	}
}

func TestWithoutMemProfiling(t *testing.T) {
	for _, c := range []struct{ env, want []string }{
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=memprofilerate=0"}},
		{[]string{"GODEBUG=gctrace=1", "B=2"}, []string{"GODEBUG=gctrace=1,memprofilerate=0", "B=2"}},
		{[]string{"GODEBUG=memprofilerate=4096"}, []string{"GODEBUG=memprofilerate=4096"}}, // the user's choice stands
	} {
		in := slices.Clone(c.env)
		if got := withoutMemProfiling(c.env); !slices.Equal(got, c.want) {
			t.Errorf("withoutMemProfiling(%q) = %q, want %q", in, got, c.want)
		}
		if !slices.Equal(c.env, in) {
			t.Errorf("withoutMemProfiling modified its argument: %q", c.env)
		}
	}
}
