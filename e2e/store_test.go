package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// storeDir is the directory of e's file:// store.
func (e *env) storeDir(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(e.cfg.StoreURL)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("store URL %q is not a file:// URL (%v)", e.cfg.StoreURL, err)
	}
	return u.Path
}

// snapshotAll snapshots every topic of e's catalog.
func (e *env) snapshotAll(t *testing.T) []snapshot {
	t.Helper()
	topics, err := e.cat.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []snapshot
	for _, tp := range topics {
		out = append(out, e.snapshot(t, tp.ID))
	}
	return out
}

// TestStoreOnAnotherFilesystem: with the store on another filesystem than the temporary
// directory (/dev/shm, a tmpfs, while $TMPDIR is on the root disk), the starter ingests, a run
// optimizes every topic and a cleanup pass deletes the old prefixes; no temporary file is left.
// (Before every file:// store wrote its temporary files next to the object, the ingestion failed
// at its first object with "invalid cross-device link".)
func TestStoreOnAnotherFilesystem(t *testing.T) {
	srv := testenv.StartDevServer(t)
	e := newIsolatedEnv(t, srv, "cross-device")
	e.b, e.cfg.StoreURL = testenv.NewCrossDeviceBucket(t)
	t.Logf("store %s, temporary directory %s", e.cfg.StoreURL, os.TempDir())

	out, code := e.starter(t, "ingest", "--preset", "test", "--sequence", "xdev_run")
	if code != 0 {
		t.Fatalf("starter ingest exited %d:\n%s", code, out)
	}
	topics := e.snapshotAll(t)
	if len(topics) != 3 {
		t.Fatalf("%d topics ingested, want 3", len(topics))
	}
	stored := e.storeContent(t)
	testenv.StartWorker(t, srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: suiteMaxChunk})
	if res.Optimized != len(topics) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(topics))
	}
	e.checkAllOptimized(t, topics, stored)

	out, code = e.starter(t, "cleanup", "--retention-duration", "0")
	if code != 0 {
		t.Fatalf("starter cleanup exited %d:\n%s", code, out)
	}
	for _, s := range topics {
		if n := e.objectsUnder(t, s.topic.DataPrefix); n != 0 {
			t.Errorf("topic %s: %d objects left in the old prefix after cleanup", s.locator, n)
		}
		equalRows(t, s.locator, s.content, readTopic(t, e.b, chunkKeys(t, e.cat, s.id)))
	}
	if temps := tempKeys(t, e); len(temps) != 0 {
		t.Errorf("temporary files left in the store: %v", temps)
	}
}

// TestWorkerKilledWhileWritingAChunk kills the worker process in the middle of writing a large
// output chunk (after 60 record batches of it went to the encoder; with a 16 MiB memory pool its
// row groups are small, so part of the chunk is in the file): the killed write leaves its
// temporary file next to the chunk, the retried WriteChunks on a fresh worker writes the chunk
// and the run completes with verified output. No chunk row names a temporary file; the leftover
// (in the topic's current prefix now) survives a cleanup pass within the retention and is
// deleted by one after it.
func TestWorkerKilledWhileWritingAChunk(t *testing.T) {
	srv := testenv.StartDevServer(t)
	if _, err := buildWorker(); err != nil {
		t.Fatalf("build worker: %v", err)
	}
	e := newIsolatedEnv(t, srv, "kill-mid-write")
	ctx := context.Background()
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, ingest.Options{Sequence: "mid_write", Seed: 3,
		Topics: []ingest.TopicSpec{{Path: "sensors/imu", Kind: ingest.IMU, Chunks: 100, RowsPerChunk: 2000,
			Overlap: 0.05, UnsortedFraction: 0.1, NullTimestamps: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t, ingested[0].TopicID)
	t.Setenv(app.EnvMemoryPoolSize, strconv.Itoa(16<<20))
	sup := superviseWorker(t, e, faults.WriteChunksEncode+"=kill@60*1")
	run, err := srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "kill-mid-write", TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{HeartbeatTimeout: suiteHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, run)
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run result %+v, want the topic optimized", res)
	}
	if deaths := sup.restarts(); len(deaths) != 1 || !strings.Contains(deaths[0], "killed") {
		t.Fatalf("worker deaths %v, want one kill at %s", deaths, faults.WriteChunksEncode)
	}
	e.checkOptimized(t, before, workflows.DefaultMaxChunkSizeBytes)
	tp, err := e.cat.Topic(ctx, before.id)
	if err != nil {
		t.Fatal(err)
	}
	checkPrefixChunks(t, e, tp)
	chunks, err := e.cat.Chunks(ctx, before.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if store.IsTempKey(c.ObjectKey) {
			t.Errorf("the catalog names a temporary file as chunk: %s", c.ObjectKey)
		}
	}
	temps := tempKeys(t, e)
	if len(temps) != 1 {
		t.Fatalf("temporary files in the store: %v, want the killed write's one", temps)
	}
	var leftover string
	for k := range temps {
		leftover = k
	}
	if !strings.HasPrefix(leftover, chunks[0].ObjectKey+".") {
		t.Errorf("leftover %s is not the temporary file of chunk %s", leftover, chunks[0].ObjectKey)
	}
	attrs, err := e.b.Attributes(ctx, leftover)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("output chunk %s: %d bytes; the killed write left %s with %d bytes", chunks[0].ObjectKey,
		chunks[0].SizeBytes, leftover, attrs.Size)
	if attrs.Size == 0 || attrs.Size >= chunks[0].SizeBytes {
		t.Errorf("leftover has %d bytes, want part of the %d-byte chunk: the kill was not in the middle of the write",
			attrs.Size, chunks[0].SizeBytes)
	}

	sup.stop()
	testenv.StartWorker(t, srv.Client, e.cfg)
	clean := e.runCleanup(t, time.Hour)
	if clean.TempFiles != 1 || clean.TempFilesDeleted != 0 || clean.TempFilesFailed != 0 {
		t.Errorf("cleanup within the retention: %+v, want the leftover found and kept", clean)
	}
	if !tempKeys(t, e)[leftover] {
		t.Fatalf("cleanup deleted %s within the retention", leftover)
	}
	// An hour and more later, as far as the leftover's modification time says.
	path := filepath.Join(e.storeDir(t), filepath.FromSlash(leftover))
	past := time.Now().Add(-time.Hour - time.Minute)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	clean = e.runCleanup(t, time.Hour)
	if clean.TempFiles != 1 || clean.TempFilesDeleted != 1 || clean.TempFilesFailed != 0 {
		t.Errorf("cleanup after the retention: %+v, want the leftover deleted", clean)
	}
	if temps := tempKeys(t, e); len(temps) != 0 {
		t.Errorf("temporary files left after the retention: %v", temps)
	}
	saveHistory(t, srv.Client, e.lastRun, "cleanup-pass-temp-files")
	equalRows(t, before.locator, before.content, readTopic(t, e.b, chunkKeys(t, e.cat, before.id)))
	checkPrefixChunks(t, e, tp)
}

// storeFaultTopics is how many topics the store-fault runs are given.
const storeFaultTopics = 8

// ingestSmallTopics ingests n small IMU topics into e and returns their IDs.
func (e *env) ingestSmallTopics(t *testing.T, sequence string, n int) []int64 {
	t.Helper()
	opts := ingest.Options{Sequence: sequence, Seed: 5}
	for i := range n {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("sensors/imu%d", i), Kind: ingest.IMU,
			Chunks: 3, RowsPerChunk: 50})
	}
	ingested, err := ingest.Ingest(context.Background(), e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, it := range ingested {
		ids = append(ids, it.TopicID)
	}
	return ids
}

// checkStoreFaultRun checks the result of a run whose every topic hits the same store fault: the
// run stopped early and says why once (naming the store, the cause and the remedy, no secret),
// every topic it started failed with that cause, the others stay queued, nothing is quarantined
// or changed.
func (e *env) checkStoreFaultRun(t *testing.T, res workflows.StoreOptimizerResult, ids []int64, storeURL, cause, secret string) {
	t.Helper()
	ctx := context.Background()
	if res.StoreFault == "" || !strings.HasPrefix(res.StoreFault, "store "+storeURL) ||
		!strings.Contains(res.StoreFault, cause) || !strings.Contains(res.StoreFault, "--store-url") {
		t.Errorf("StoreFault %q: want it to name the store %s, the cause %q and what to change", res.StoreFault, storeURL, cause)
	}
	if res.Optimized != 0 || res.Failed < workflows.StoreFaultLimit || res.Failed+res.NotAttempted != len(ids) {
		t.Errorf("run result %+v: want %d topics failed or not attempted, at least %d failed", res, len(ids), workflows.StoreFaultLimit)
	}
	for _, f := range res.Failures {
		if !strings.Contains(f.Error, cause) {
			t.Errorf("topic %s failed with %q, want %q", f.Locator, f.Error, cause)
		}
	}
	for _, s := range append([]string{res.StoreFault}, failureMessages(res)...) {
		if secret != "" && strings.Contains(s, secret) {
			t.Errorf("the run's result shows a secret of the store URL: %s", s)
		}
	}
	if n, err := e.cat.QueueLength(ctx); err != nil || n != res.NotAttempted {
		t.Errorf("queue holds %d topics (err %v), want the %d not attempted", n, err, res.NotAttempted)
	}
	for _, id := range ids {
		if rec, err := e.cat.FailureOf(ctx, id); err == nil && rec.Failures > 0 {
			t.Errorf("topic %d: %d failures counted toward quarantine: %+v", id, rec.Failures, rec)
		} else if err != nil && !errors.Is(err, catalog.ErrNotFound) {
			t.Fatal(err)
		}
		if tp, err := e.cat.Topic(ctx, id); err != nil || tp.OptimizedAt != nil {
			t.Errorf("topic %d changed: %+v (err %v)", id, tp, err)
		}
	}
}

func failureMessages(res workflows.StoreOptimizerResult) []string {
	var out []string
	for _, f := range res.Failures {
		out = append(out, f.Error)
	}
	return out
}

// TestStoreFaultsEndRunsEarly: a run whose store can never be written (read-only: a read-only
// bind mount as root) and one whose worker's store holds none of the topics' objects both end
// with the topics failed or left queued and one message that says why, without retries: the
// store faults are non-retryable and after StoreFaultLimit topics in a row the run starts no
// more. The durations are logged (not asserted: the machine is shared).
func TestStoreFaultsEndRunsEarly(t *testing.T) {
	srv := testenv.StartDevServer(t)

	t.Run("read-only store", func(t *testing.T) {
		e := newIsolatedEnv(t, srv, "read-only-store")
		ids := e.ingestSmallTopics(t, "read_only", storeFaultTopics)
		dir := e.storeDir(t)
		errno := testenv.ReadOnlyDir(t, dir)
		// A credential in the store URL (fileblob's URL-signing key path) must not show.
		secret := "sk-" + randomHex(t, 8)
		storeURL := e.cfg.StoreURL
		e.cfg.StoreURL += "?base_url=/sign&secret_key_path=" + url.QueryEscape(secretKeyFile(t, secret, "key-"+secret))
		testenv.StartWorker(t, srv.Client, e.cfg)
		start := time.Now()
		res := e.runPass(t, app.PassOptions{})
		t.Logf("run on a read-only store (%v) ended in %v: %d failed, %d not attempted; %s",
			errno, time.Since(start).Round(time.Millisecond), res.Failed, res.NotAttempted, res.StoreFault)
		e.checkStoreFaultRun(t, res, ids, storeURL+"?base_url=%2Fsign&secret_key_path=xxxxx", errno.Error(), secret)
	})

	t.Run("store without the topics", func(t *testing.T) {
		e := newIsolatedEnv(t, srv, "wrong-store")
		ids := e.ingestSmallTopics(t, "wrong_store", storeFaultTopics)
		worker := e.cfg
		_, worker.StoreURL = testenv.NewBucket(t)
		testenv.StartWorker(t, srv.Client, worker)
		if _, err := buildStarter(); err != nil { // not timed
			t.Fatalf("build starter: %v", err)
		}
		start := time.Now()
		args := []string{"store-optimizer"}
		if n := historyBatchTopics(); n > 0 {
			args = append(args, "--batch-topics", strconv.Itoa(n))
		}
		out, code := e.starter(t, args...)
		elapsed := time.Since(start)
		if code != 1 {
			t.Errorf("starter store-optimizer exited %d, want 1 (topics failed):\n%s", code, out)
		}
		t.Logf("run on a store without the topics' objects ended in %v; the starter printed:\n%s", elapsed.Round(time.Millisecond), out)
		if n := strings.Count(out, "none of the topic's objects is in the store"); n != 1 || !strings.Contains(out, "store fault: ") {
			t.Errorf("the summary says the store fault %d times, want once", n)
		}
		var res workflows.StoreOptimizerResult
		id := reportedID(t, out, "run")
		if err := srv.Client.GetWorkflow(context.Background(), id, "").Get(context.Background(), &res); err != nil {
			t.Fatal(err)
		}
		saveHistory(t, srv.Client, id, "store-optimizer-store-fault")
		saveHistory(t, srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, res.Failures[0].Locator), "optimize-topic-store-fault")
		e.checkStoreFaultRun(t, res, ids, worker.StoreURL, "none of the topic's objects is in the store", "")
	})
}
