package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/parquetio"
)

// interopDir holds the fixture topics of real writers and the scripts that made them.
var interopDir = filepath.Join("testdata", "interop")

// interopTopic says how one fixture topic (a folder of interopDir/topics) is checked.
type interopTopic struct {
	writer string
	// tools read the inputs and the outputs; their reads must agree (types and values).
	// "arrow-go" is plain pqarrow.
	tools []string
	// refused: the optimization must fail with a message containing this (schema drift).
	refused string
	// perFile: the chunks' footers differ in per-file values; outputs keep the first chunk's.
	perFile bool
}

var interopTopics = map[string]interopTopic{
	"polars":                 {writer: "nodejs-polars 0.25.2", tools: []string{"polars", "arrow-go"}},
	"duckdb":                 {writer: "DuckDB 1.5.6 (node-api)", tools: []string{"duckdb", "arrow-go"}},
	"arrowgo":                {writer: "arrow-go v18.8.0", tools: []string{"arrow-go"}},
	"arrowgo_json":           {writer: "arrow-go v18.8.0 (arrow.json)", tools: []string{"storeopt"}},
	"parquetgo":              {writer: "parquet-go v0.32.0 (no Arrow)", tools: []string{"duckdb", "arrow-go"}},
	"bug_polars_null_column": {writer: "nodejs-polars 0.25.2", tools: []string{"polars", "arrow-go"}},
	"bug_duckdb_timetz":      {writer: "DuckDB 1.5.6 (node-api)", tools: []string{"duckdb", "arrow-go"}},
	"bug_duckdb_nested":      {writer: "DuckDB 1.5.6 (node-api)", tools: []string{"duckdb", "polars", "arrow-go"}},
	"bug_int96_timestamps":   {writer: "arrow-go v18.8.0 (INT96)", tools: []string{"duckdb", "arrow-go"}},
	"per_file_values":        {writer: "arrow-go v18.8.0 (pandas-like)", tools: []string{"duckdb", "arrow-go"}, perFile: true},
	"drift_added_column": {writer: "nodejs-polars 0.25.2",
		refused: `footer differs from chunk %s: Parquet schema has 4 elements vs 5 (first extra element "c"`},
	"drift_nullability": {writer: "arrow-go v18.8.0",
		refused: `footer differs from chunk %s: Parquet schema element 2 differs: "value"{type=5,repetition_type=0,name="value"} vs "value"{type=5,repetition_type=1,name="value"}`},
}

// interopNodePath returns the node_modules folder of the interop tools (scripts/interop-deps.sh,
// exported by scripts/test.sh), skipping the test without it (failing it under CI).
func interopNodePath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("STOREOPT_INTEROP_NODE_PATH")
	if st, err := os.Stat(p); p != "" && err == nil && st.IsDir() {
		return p
	}
	testenv.Missing(t, "interop tools not installed (run scripts/interop-deps.sh and set STOREOPT_INTEROP_NODE_PATH to what it prints)")
	return ""
}

// toolRead reads the Parquet files data with tool and returns what it reports: column names and
// types and every row, sorted, rendered by the tool.
func toolRead(t *testing.T, nodePath, tool string, data [][]byte) string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i, d := range data {
		f := filepath.Join(dir, fmt.Sprintf("%05d.parquet", i))
		if err := os.WriteFile(f, d, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	switch tool {
	case "arrow-go":
		return plainRows(t, data, false)
	case "storeopt":
		return plainRows(t, data, true)
	}
	script, err := filepath.Abs(filepath.Join(interopDir, "read.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script, tool}, files...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s cannot read %d files: %v\n%s", tool, len(files), err, stderr.String())
	}
	return string(out)
}

// plainRows reads every file with plain pqarrow (or, storage, with storeopt's reader, in the
// types pqarrow maps the Parquet columns to) and renders its schema and its rows, sorted.
func plainRows(t *testing.T, data [][]byte, storage bool) string {
	t.Helper()
	var schema string
	var rows []string
	for _, d := range data {
		var recs []arrow.RecordBatch
		if storage {
			c, err := parquetio.Open(bytes.NewReader(d), nil)
			if err != nil {
				t.Fatal(err)
			}
			br, err := c.Batches(context.Background(), 1024)
			if err != nil {
				t.Fatal(err)
			}
			for rec := br.Next(); rec != nil; rec = br.Next() {
				rec.Retain()
				recs = append(recs, rec)
			}
			if err := br.Err(); err != nil {
				t.Fatal(err)
			}
			br.Release()
			c.Close()
		} else {
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(d), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("arrow-go cannot read: %v", err)
			}
			tr := array.NewTableReader(tbl, 0)
			for tr.Next() {
				tr.RecordBatch().Retain()
				recs = append(recs, tr.RecordBatch())
			}
			tr.Release()
			tbl.Release()
		}
		for _, rec := range recs {
			var types []string
			for _, f := range rec.Schema().Fields() {
				types = append(types, f.Name+" "+f.Type.String())
			}
			schema = strings.Join(types, ", ")
			for i := range int(rec.NumRows()) {
				var parts []string
				for _, col := range rec.Columns() {
					parts = append(parts, col.ValueStr(i))
				}
				rows = append(rows, strings.Join(parts, "|"))
			}
			rec.Release()
		}
	}
	sort.Strings(rows)
	return schema + "\n" + strings.Join(rows, "\n")
}

// TestInteropFixtures optimizes the fixture topics of real writers (e2e/testdata/interop:
// nodejs-polars, DuckDB, arrow-go, parquet-go, and topics shaped after public bug reports)
// through the product in one run, and reads the inputs and the outputs back with the tool that
// wrote them (polars reads polars' topics, DuckDB DuckDB's; topics of writers without a reader
// here are read by DuckDB, polars and arrow-go): types and values must be the same. Every output
// footer equals the inputs' (Commit verified it; checked again here). The two topics with real
// schema drift are refused naming the chunk and the difference, and left as they were.
func TestInteropFixtures(t *testing.T) {
	nodePath := interopNodePath(t)
	entries, err := os.ReadDir(filepath.Join(interopDir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	type fixture struct {
		name   string
		spec   interopTopic
		id     int64
		inputs [][]byte
		keys   []string
		before topicRecord
		reads  map[string]string
	}
	var fixtures []*fixture
	for _, de := range entries {
		spec, ok := interopTopics[de.Name()]
		if !ok {
			t.Fatalf("fixture topic %s has no expectations in interopTopics", de.Name())
		}
		files, _ := filepath.Glob(filepath.Join(interopDir, "topics", de.Name(), "*.parquet"))
		sort.Strings(files)
		f := &fixture{name: de.Name(), spec: spec, reads: map[string]string{}}
		var chunks []rawChunk
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f.inputs = append(f.inputs, data)
			chunks = append(chunks, rawChunk{data: data, rows: footerRows(data)})
		}
		f.id, _ = e.putTopic(t, rawTopic{sequence: "interop", locator: "interop/" + f.name, chunks: chunks})
		f.keys = chunkKeys(t, e.cat, f.id)
		f.before = e.recordTopic(t, f.id)
		for _, tool := range spec.tools {
			f.reads[tool] = toolRead(t, nodePath, tool, f.inputs)
		}
		fixtures = append(fixtures, f)
	}
	if len(fixtures) != len(interopTopics) {
		t.Fatalf("%d fixture topics, %d expected", len(fixtures), len(interopTopics))
	}

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 48 << 10, MaxConcurrentTopics: 4})
	failures := failuresByLocator(t, res)
	var table strings.Builder
	for _, f := range fixtures {
		loc := "interop/" + f.name
		msg, failed := failures[loc]
		if f.spec.refused != "" {
			want := fmt.Sprintf(f.spec.refused, f.keys[0])
			if !failed || !strings.Contains(msg, "chunk "+f.keys[1]+": "+want) {
				t.Errorf("topic %s: failure %q, want it to name chunk %s and say %q", loc, msg, f.keys[1], want)
			}
			e.checkUntouched(t, f.before)
			fmt.Fprintf(&table, "%-24s %-32s refused: %s\n", f.name, f.spec.writer, firstLine(strings.TrimPrefix(msg, "topic "+loc+": read-sort: ")))
			continue
		}
		if failed {
			t.Errorf("topic %s failed: %s", loc, msg)
			continue
		}
		tp, err := e.cat.Topic(context.Background(), f.id)
		if err != nil {
			t.Fatal(err)
		}
		if tp.OptimizedAt == nil || tp.DataPrefix == f.before.topic.DataPrefix {
			t.Errorf("topic %s: not switched", loc)
			continue
		}
		keys := chunkKeys(t, e.cat, f.id)
		var outputs [][]byte
		for _, k := range keys {
			data, err := e.b.ReadAll(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			outputs = append(outputs, data)
		}
		first := footerOf(t, f.inputs[0])
		for i, out := range outputs {
			if d := parquetio.FirstFooterDifference(first, footerOf(t, out)); d != "" {
				t.Errorf("topic %s: output %d footer differs from the first input's: %s", loc, i, d)
			}
		}
		if f.spec.perFile && parquetio.FirstFooterDifference(first, footerOf(t, f.inputs[1])) == "" {
			t.Errorf("topic %s: its chunks' footers are equal; the fixture does not test per-file values", loc)
		}
		var agreed []string
		for _, tool := range f.spec.tools {
			after := toolRead(t, nodePath, tool, outputs)
			if after != f.reads[tool] {
				t.Errorf("topic %s: %s reads the output differently from the inputs:\ninputs  %.600s\noutputs %.600s", loc, tool, f.reads[tool], after)
				continue
			}
			agreed = append(agreed, tool)
		}
		fmt.Fprintf(&table, "%-24s %-32s %d chunks -> %d, footer verbatim, read back identically by %s\n",
			f.name, f.spec.writer, len(f.inputs), len(outputs), strings.Join(agreed, ", "))
	}
	t.Logf("interop fixtures:\n%s", table.String())
	refused := 0
	for _, f := range fixtures {
		if f.spec.refused != "" {
			refused++
		}
	}
	if res.Optimized != len(fixtures)-refused || res.Failed != refused {
		t.Errorf("run: %d optimized, %d failed; want %d and %d", res.Optimized, res.Failed, len(fixtures)-refused, refused)
	}
}

func footerOf(t *testing.T, data []byte) *parquetio.Footer {
	t.Helper()
	f, err := parquetio.ReadFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
