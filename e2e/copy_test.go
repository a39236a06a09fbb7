package e2e

import (
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
