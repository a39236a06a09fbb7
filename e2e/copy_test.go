package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/metrics/metricstest"
)

// recordedInOrder are topics whose chunks follow each other in time, each sorted, as a recorder
// that writes its batches in order leaves them: the copy path's case. The IMU topic gets a topic
// workflow, the camera topic (tiny) a batch.
func recordedInOrder() ingest.Options {
	return ingest.Options{Sequence: "ordered_run", Seed: 3, Topics: []ingest.TopicSpec{
		{Path: "sensors/imu", Kind: ingest.IMU, Chunks: 40, RowsPerChunk: 300},
		{Path: "camera/front", Kind: ingest.Camera, Chunks: 12, RowsPerChunk: 4, PayloadBytes: 4096},
	}}
}

// TestCopyPathThroughAWorker optimizes topics recorded in order through a real worker (dev
// server, PostgreSQL, file store): every output chunk is assembled from its inputs' pages (the
// metrics by path count them, none rewritten), every promise of an optimization holds
// (checkOptimized: rows, order, keys, sizes, old chunks kept, metadata.json), and the outputs'
// catalog rows carry the inputs' column statistics merged.
func TestCopyPathThroughAWorker(t *testing.T) {
	e := newEnv(t)
	ingested := e.ingest(t, recordedInOrder())
	var before []snapshot
	for _, it := range ingested {
		before = append(before, e.snapshot(t, it.TopicID))
	}
	url, _ := testenv.StartWorkerWithMetrics(t, e.cfg)
	const maxChunk = 256 << 10
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk})
	if res.Optimized != len(ingested) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(ingested))
	}
	var outChunks int
	for i, s := range before {
		e.checkOptimized(t, s, maxChunk)
		chunks := chunksOf(t, e, ingested[i].TopicID)
		outChunks += len(chunks)
		for _, c := range chunks {
			st, ok := c.ColumnStats["timestamp_ns"]
			if !ok || st.Min == nil || st.Max == nil {
				t.Errorf("topic %s: chunk %s has no column statistics of timestamp_ns: %+v", s.locator, c.ObjectKey, c.ColumnStats)
			}
		}
	}
	if len(before[0].keys) < 2*outChunks/len(before) {
		t.Fatalf("%d output chunks of %d inputs: nothing to compare", outChunks, len(before[0].keys))
	}
	s := metricstest.Scrape(t, url)
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "copy"}); n != float64(outChunks) {
		t.Errorf("%v chunks written by the copy path, %d output chunks", n, outChunks)
	}
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "rewrite"}); n != 0 {
		t.Errorf("%v chunks rewritten, want none", n)
	}
}

// TestCopiedOutputsReadAsTheirInputs optimizes topics recorded in order by the copy path (one of
// them of V2 data pages, copied as V2 pages) and reads inputs and outputs with DuckDB, polars
// (IMU only) and plain arrow-go: each tool reads the outputs exactly as it read the inputs
// (column types and every row).
func TestCopiedOutputsReadAsTheirInputs(t *testing.T) {
	nodePath := interopNodePath(t)
	e := newEnv(t)
	opts := recordedInOrder()
	opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: "sensors/imu_v2", Kind: ingest.IMU, Chunks: 40, RowsPerChunk: 300,
		Compression: "snappy", DataPageV2: true})
	ingested := e.ingest(t, opts)
	inputs := map[int64][][]byte{}
	for _, it := range ingested {
		inputs[it.TopicID] = objects(t, e, chunkKeys(t, e.cat, it.TopicID))
	}
	url, _ := testenv.StartWorkerWithMetrics(t, e.cfg)
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 256 << 10}); res.Optimized != len(ingested) {
		t.Fatalf("run result %+v", res)
	}
	if n := metricstest.Scrape(t, url).Value(t, "storeopt_written_chunks_total", map[string]string{"path": "rewrite"}); n != 0 {
		t.Fatalf("%v chunks rewritten, want all copied", n)
	}
	for _, it := range ingested {
		outputs := objects(t, e, chunkKeys(t, e.cat, it.TopicID))
		// The copied columns keep their V2 pages (the re-encoded ones are written as V1 pages).
		if _, v2 := dataPages(t, inputs[it.TopicID]); v2 > 0 {
			if _, out := dataPages(t, outputs); out == 0 {
				t.Errorf("topic %s: %d V2 pages in the inputs, none in the outputs", it.Locator, v2)
			}
		}
		tools := []string{"duckdb", "polars", "arrow-go"}
		if strings.HasPrefix(it.Locator, "ordered_run/camera") {
			tools = []string{"duckdb", "arrow-go"} // nodejs-polars cannot hand binary columns to JS
		}
		for _, tool := range tools {
			if in, out := toolRead(t, nodePath, tool, inputs[it.TopicID]), toolRead(t, nodePath, tool, outputs); in != out {
				t.Errorf("topic %s: %s reads the outputs otherwise than the inputs:\n%s\nvs\n%s", it.Locator, tool, short(in), short(out))
			}
		}
	}
}

// dataPages counts the V1 and V2 data pages of the Parquet files data.
func dataPages(t *testing.T, data [][]byte) (v1, v2 int) {
	t.Helper()
	for _, d := range data {
		r, err := file.NewParquetReader(bytes.NewReader(d))
		if err != nil {
			t.Fatal(err)
		}
		for rg := range r.NumRowGroups() {
			for col := range r.MetaData().NumColumns() {
				pr, err := r.RowGroup(rg).GetColumnPageReader(col)
				if err != nil {
					t.Fatal(err)
				}
				for pr.Next() {
					switch pr.Page().(type) {
					case *file.DataPageV1:
						v1++
					case *file.DataPageV2:
						v2++
					}
				}
				if err := pr.Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.Close()
	}
	return v1, v2
}

// objects returns the bytes of the objects at keys.
func objects(t *testing.T, e *env, keys []string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, k := range keys {
		data, err := e.b.ReadAll(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// short is s cut to its first 2000 bytes.
func short(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// TestLevelsByCopy compacts topics recorded in order while they are live — tiered, then leveled
// twice as chunks arrive — and rewrites them whole once finalized: every output of every step is
// assembled from its inputs' pages (the metrics by path count none rewritten), each step leaves
// the levels it promises and a valid block index, and the final rows are those of one full
// optimization of the same chunks ingested at once.
func TestLevelsByCopy(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const chunks = 12
	live := func(sequence string) liveTopics {
		opts := recordedInOrder()
		opts.Sequence, opts.NoFinalize = sequence, true
		for i := range opts.Topics {
			opts.Topics[i].Chunks = chunks
		}
		return liveTopics{opts: opts, topics: e.ingest(t, opts)}
	}
	steps, whole := live("steps"), live("whole")
	url, _ := testenv.StartWorkerWithMetrics(t, e.cfg)
	const maxChunk = 128 << 10
	for i, p := range []string{"tiered", "leveled", "leveled"} {
		if i > 0 {
			e.appendChunks(t, steps, chunks+4*(i-1), 4)
		}
		res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: p, Scope: []string{"sequence:steps"}})
		if res.Optimized != len(steps.topics) || res.Failed != 0 {
			t.Fatalf("%s run %+v", p, res)
		}
		for _, tp := range steps.topics {
			lv := e.levels(t, tp.TopicID)
			if p == "leveled" && slices.Contains(lv, "L0") || p == "tiered" && slices.Contains(lv, "L1") {
				t.Fatalf("topic %s after %s: %v", tp.Locator, p, lv)
			}
			checkOrder(t, readTopic(t, e.b, chunkKeys(t, e.cat, tp.TopicID)))
			e.checkBlocks(t, tp.TopicID)
		}
	}
	e.appendChunks(t, steps, chunks+8, 2)
	e.appendChunks(t, whole, chunks, 10)
	for _, seq := range []string{"steps", "whole"} {
		if _, err := ingest.Finalize(ctx, e.cat, seq); err != nil {
			t.Fatal(err)
		}
	}
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 2*len(steps.topics) || res.Failed != 0 {
		t.Fatalf("full run %+v", res)
	}
	for i := range steps.topics {
		a := readTopic(t, e.b, chunkKeys(t, e.cat, steps.topics[i].TopicID))
		b := readTopic(t, e.b, chunkKeys(t, e.cat, whole.topics[i].TopicID))
		checkOrder(t, a)
		if !slices.Equal(a.ordered, b.ordered) || len(a.ordered) == 0 {
			t.Fatalf("topic %s: %d rows after the steps, %d after one full optimization, or rows differ", steps.topics[i].Locator, len(a.ordered), len(b.ordered))
		}
	}
	s := metricstest.Scrape(t, url)
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "rewrite"}); n != 0 {
		t.Errorf("%v chunks rewritten, want every output copied", n)
	}
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "copy"}); n == 0 {
		t.Error("no chunk copied")
	}
}

// TestPassThroughThroughAWorker optimizes a topic through a real worker, queues it again by hand
// and optimizes it again: every chunk of the first pass is kept by the second (the metrics by
// path count them, none rewritten or copied page by page), byte for byte under the second pass's
// fresh prefix, and every promise of an optimization holds after each pass (checkOptimized).
func TestPassThroughThroughAWorker(t *testing.T) {
	e := newEnv(t)
	ingested := e.ingest(t, ingest.Options{Sequence: "again_run", Seed: 4, Topics: []ingest.TopicSpec{
		{Path: "sensors/imu", Kind: ingest.IMU, Chunks: 40, RowsPerChunk: 300, Overlap: 0.1, UnsortedFraction: 0.2}}})
	id := ingested[0].TopicID
	url, _ := testenv.StartWorkerWithMetrics(t, e.cfg)
	const maxChunk = 256 << 10
	first := e.snapshot(t, id)
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 1 {
		t.Fatalf("first run result %+v", res)
	}
	e.checkOptimized(t, first, maxChunk)
	optimized := objects(t, e, chunkKeys(t, e.cat, id))
	if len(optimized) < 2 {
		t.Fatalf("%d output chunks: nothing to keep", len(optimized))
	}
	rewritten := metricstest.Scrape(t, url).Value(t, "storeopt_written_chunks_total", map[string]string{"path": "rewrite"})

	if err := e.cat.Enqueue(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	second := e.snapshot(t, id)
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 1 {
		t.Fatalf("second run result %+v", res)
	}
	e.checkOptimized(t, second, maxChunk)
	if kept := objects(t, e, chunkKeys(t, e.cat, id)); !slices.EqualFunc(kept, optimized, bytes.Equal) {
		t.Errorf("the second pass's %d chunks are not the first pass's %d, byte for byte", len(kept), len(optimized))
	}
	s := metricstest.Scrape(t, url)
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "pass-through"}); n != float64(len(optimized)) {
		t.Errorf("%v chunks kept by the pass-through path, want %d", n, len(optimized))
	}
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "rewrite"}); n != rewritten {
		t.Errorf("%v chunks rewritten by the second pass", n-rewritten)
	}
	if n := s.Value(t, "storeopt_written_chunks_total", map[string]string{"path": "copy"}); n != 0 {
		t.Errorf("%v chunks copied page by page", n)
	}
}
