package e2e

import (
	"context"
	"strings"
	"testing"

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

// TestCopiedOutputsReadAsTheirInputs optimizes topics recorded in order by the copy path and
// reads inputs and outputs with DuckDB, polars (IMU only) and plain arrow-go: each tool reads the outputs
// exactly as it read the inputs (column types and every row).
func TestCopiedOutputsReadAsTheirInputs(t *testing.T) {
	nodePath := interopNodePath(t)
	e := newEnv(t)
	ingested := e.ingest(t, recordedInOrder())
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
