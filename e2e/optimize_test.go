package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// env is one test's real parts: dev server, catalog database, file store.
type env struct {
	srv *testenv.DevServer
	cat *catalog.Catalog
	b   *blob.Bucket
	cfg app.Config
	// lastRun is the workflow ID of the last run started by runPass.
	lastRun string
	// procEnv is added to the environment of the worker and starter processes the test starts
	// (after the variables that point them at cfg).
	procEnv []string
}

// testPreset returns the ingest options of the simulator's "test" preset at scale 1 (sequence
// test_run: an IMU, a GPS and a camera topic).
func testPreset(t *testing.T) ingest.Options {
	t.Helper()
	opts, err := ingest.Preset("test", 1)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// ingest ingests opts into the env's catalog and store.
func (e *env) ingest(t *testing.T, opts ingest.Options) []ingest.IngestedTopic {
	t.Helper()
	ingested, err := ingest.Ingest(context.Background(), e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ingested
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b, storeURL := testenv.NewBucket(t)
	return newEnvOn(t, b, storeURL)
}

// newEnvOn is newEnv with the given store (b, opened from storeURL) instead of a file store.
func newEnvOn(t *testing.T, b *blob.Bucket, storeURL string) *env {
	t.Helper()
	srv := testenv.StartDevServer(t)
	dbURL := pgtest.NewDatabase(t)
	cat, err := catalog.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	return &env{srv: srv, cat: cat, b: b, cfg: srv.Config(dbURL, storeURL)}
}

// snapshot is a topic's state before optimization.
type snapshot struct {
	id       int64
	locator  string
	topic    catalog.Topic
	keys     []string
	content  topicContent
	metadata []byte
	// optimizations counts the topic's optimization records (a topic optimized before, queued
	// again).
	optimizations int
}

func (e *env) snapshot(t *testing.T, id int64) snapshot {
	t.Helper()
	tp, err := e.cat.Topic(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	keys := chunkKeys(t, e.cat, id)
	md, err := e.b.ReadAll(context.Background(), tp.DataPrefix+"/metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := e.cat.Optimizations(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{id: id, locator: tp.Locator, topic: tp, keys: keys, content: readTopic(t, e.b, keys), metadata: md,
		optimizations: len(opts)}
}

// checkOptimized asserts everything a finished optimization promises for one topic.
func (e *env) checkOptimized(t *testing.T, before snapshot, maxChunk int64) topicContent {
	t.Helper()
	ctx := context.Background()
	tp, err := e.cat.Topic(ctx, before.id)
	if err != nil {
		t.Fatal(err)
	}
	if tp.DataPrefix == before.topic.DataPrefix || tp.OptimizedAt == nil {
		t.Fatalf("topic %s: catalog not switched (prefix %s, optimized_at %v)", before.locator, tp.DataPrefix, tp.OptimizedAt)
	}
	chunks, err := e.cat.Chunks(ctx, before.id)
	if err != nil {
		t.Fatal(err)
	}
	keys := chunkKeys(t, e.cat, before.id)
	after := readTopic(t, e.b, keys)
	equalRows(t, before.locator, before.content, after)
	checkOrder(t, after)
	for i, c := range chunks {
		if want := fmt.Sprintf("%s/data/%05d.parquet", tp.DataPrefix, i); c.ObjectKey != want {
			t.Errorf("topic %s: chunk %d key %s, want %s", before.locator, i, c.ObjectKey, want)
		}
		if c.RowCount != after.perChunk[i] || c.SizeBytes != after.chunkSize[i] {
			t.Errorf("topic %s: chunk %d catalog says %d rows %d bytes, object has %d rows %d bytes",
				before.locator, i, c.RowCount, c.SizeBytes, after.perChunk[i], after.chunkSize[i])
		}
		if c.SizeBytes > softLimit(maxChunk, c) {
			t.Errorf("topic %s: chunk %d has %d bytes, over the soft limit of %d (max %d)",
				before.locator, i, c.SizeBytes, softLimit(maxChunk, c), maxChunk)
		}
	}
	for _, k := range before.keys {
		if ok, err := e.b.Exists(ctx, k); err != nil || !ok {
			t.Errorf("topic %s: old chunk %s gone (err %v)", before.locator, k, err)
		}
	}
	md, err := e.b.ReadAll(ctx, tp.DataPrefix+"/metadata.json")
	if err != nil || !bytes.Equal(md, before.metadata) {
		t.Errorf("topic %s: metadata.json not copied byte for byte (err %v)", before.locator, err)
	}
	opts, err := e.cat.Optimizations(ctx, before.id)
	if err != nil || len(opts) != before.optimizations+1 {
		t.Errorf("topic %s: %d optimization records (err %v), want %d", before.locator, len(opts), err, before.optimizations+1)
	}
	t.Logf("topic %s: %d chunks (%d bytes) -> %d chunks %v", before.locator, len(before.keys),
		sum(before.content.chunkSize), len(chunks), after.chunkSize)
	return after
}

// softLimit is the documented bound of an output chunk's size: the limit plus one row (a chunk
// that holds a single row larger than the limit is as large as that row) plus 10% for outputs
// that compress worse than their inputs did.
func softLimit(maxChunk int64, c catalog.Chunk) int64 {
	widest := c.ArrowSizeBytes / max(c.RowCount, 1)
	if c.RowCount == 1 {
		widest = c.ArrowSizeBytes
	}
	return maxChunk + maxChunk/10 + widest
}

func sum(v []int64) (s int64) {
	for _, x := range v {
		s += x
	}
	return s
}

func (e *env) queueEmpty(t *testing.T) {
	t.Helper()
	n, err := e.cat.QueueLength(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("queue holds %d topics (err %v), want 0", n, err)
	}
}

func (e *env) runPass(t *testing.T, opts app.PassOptions) workflows.StoreOptimizerResult {
	t.Helper()
	id, res, err := e.pass(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.lastRun = id
	return res
}

// pass starts a run and waits for it (5 minutes at most), returning its workflow ID. Unlike
// runPass it fails no test, so goroutines may call it.
func (e *env) pass(opts app.PassOptions) (string, workflows.StoreOptimizerResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := app.StartPass(ctx, e.srv.Client, e.cfg, opts)
	if err != nil {
		return "", workflows.StoreOptimizerResult{}, fmt.Errorf("start run: %w", err)
	}
	res, err := app.WaitPass(ctx, run)
	if err != nil {
		return run.GetID(), res, fmt.Errorf("run %s: %w", run.GetID(), err)
	}
	return run.GetID(), res, nil
}

// TestOptimizeTopics optimizes simulator topics and hand-made edge cases in one run and checks
// every promise of an optimization on each.
func TestOptimizeTopics(t *testing.T) {
	e := newEnv(t)
	opts := testPreset(t)
	ingested := e.ingest(t, opts)
	var ids []int64
	for _, it := range ingested {
		ids = append(ids, it.TopicID)
	}
	big := make([]handRow, 3000)
	for i := range big {
		big[i] = handRow{ts: ts(int64(i % 1500)), payload: 40}
	}
	binary := make([][]handRow, 4)
	for c := range binary {
		for i := range 5 {
			binary[c] = append(binary[c], handRow{ts: ts(int64(10*i + 3*c)), payload: 20_000 + c*1000})
		}
	}
	ids = append(ids,
		makeTopic(t, e.cat, e.b, "hand/one_chunk", [][]handRow{rowsAt(1, 2, 3)}),
		makeTopic(t, e.cat, e.b, "hand/one_row", [][]handRow{rowsAt(42)}),
		makeTopic(t, e.cat, e.b, "hand/equal_ts", [][]handRow{rowsAt(10, 10, 10), rowsAt(10, 10, 20), rowsAt(5, 10, 10, 20)}),
		makeTopic(t, e.cat, e.b, "hand/null_ts", [][]handRow{
			{{ts: ts(5)}, {ts: nil}, {ts: ts(1)}}, {{ts: nil}, {ts: ts(3)}}, {{ts: nil}, {ts: nil}}}),
		makeTopic(t, e.cat, e.b, "hand/unsorted", [][]handRow{rowsAt(9, 8, 7, 6, 5), rowsAt(1, 7, 3, 7, 2)}),
		makeTopic(t, e.cat, e.b, "hand/big_chunk", [][]handRow{rowsAt(2000, 2001), big, rowsAt(-5, 1499, 1500)}),
		makeTopic(t, e.cat, e.b, "hand/binary", binary),
	)
	var before []snapshot
	for _, id := range ids {
		before = append(before, e.snapshot(t, id))
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	const maxChunk = 32 << 10
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, TopicParallelism: 2})
	if res.Optimized != len(ids) || res.Failed != 0 || res.Skipped != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(ids))
	}
	for _, s := range before {
		e.checkOptimized(t, s, maxChunk)
	}
	e.queueEmpty(t)
	saveHistory(t, e.srv.Client, e.lastRun, "store-optimizer-run")
	saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, "hand/binary"), "optimize-topic-hand-binary")
	saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, "test_run/sensors/imu"), "optimize-topic-imu")

	// A second pass finds nothing to do.
	res = e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk})
	if res.Optimized != 0 || res.Failed != 0 {
		t.Fatalf("second run result %+v, want nothing done", res)
	}
}
