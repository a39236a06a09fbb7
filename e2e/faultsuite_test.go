package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// Fault actions the suite tries at every point (see package faults).
const (
	actionFail = "fail" // a retryable error, twice; the third attempt succeeds
	actionKill = "kill" // SIGKILL of the worker process; the supervisor starts a clean one
	actionHang = "hang" // the first hit blocks until its activity's context ends
)

// suiteMaxChunk is the output chunk size limit of the suite's runs (several output groups).
const suiteMaxChunk = 32 << 10

// policyMaxChunk is the output chunk size limit of the tiered and leveled scenarios.
const policyMaxChunk = 96 << 10

// suiteHeartbeat is the heartbeat timeout of ReadSort and WriteChunks in the suite's runs: a
// killed or hung data activity is retried this long after its last heartbeat.
const suiteHeartbeat = 3 * time.Second

// faultScenario is one fault at one point, in a run of the full policy or (policy set) of a
// tiered or leveled compaction of a live topic.
type faultScenario struct {
	point, action string
	policy        string
	// batch: the fault acts in a batch of tiny topics (runBatchFaultScenario).
	batch bool
	// path is the path the topic's outputs take, by how it is recorded: "" the rewrite (chunks
	// that overlap), metrics.PathCopy (recorded in order), metrics.PathPassThrough (recorded in
	// order with a page index, chunks of about the size limit).
	path string
}

func (s faultScenario) name() string {
	suffix := map[string]string{metrics.PathCopy: "/copied", metrics.PathPassThrough: "/passed"}[s.path]
	if s.batch {
		return "batch-" + s.action + "@" + s.point + suffix
	}
	if s.policy != "" {
		return s.action + "@" + s.point + "/" + s.policy
	}
	return s.action + "@" + s.point + suffix
}

// spec is the scenario's STOREOPT_FAULTS.
func (s faultScenario) spec() string {
	switch {
	case s.batch && s.action == actionFail:
		return s.point + "=fail*1" // one topic of the batch
	}
	switch s.action {
	case actionFail:
		return s.point + "=fail*2"
	case actionHang:
		return s.point + "=hang*1"
	}
	return s.point + "=" + s.action
}

// slow reports whether the fault is noticed only by a start-to-close timeout: a killed or hung
// catalog activity (Lease, Commit: 2 minutes; Release, where the store.list and store.delete
// points act: 1 minute) has no heartbeat.
func (s faultScenario) slow() bool {
	if s.action == actionFail || s.batch { // a batch heartbeats through its commits too
		return false
	}
	switch s.point {
	case faults.LeaseAfter, faults.CommitBeforeTx, faults.CommitAfterTx:
		return true
	}
	return s.needsFailingTopic()
}

// needsFailingTopic reports whether the point is reached only by a failing topic: Release and
// the deletion of its partial output.
func (s faultScenario) needsFailingTopic() bool {
	switch s.point {
	case faults.ReleaseBefore, faults.StoreList, faults.StoreDelete:
		return true
	}
	return false
}

// faultScenarios lists every point with every action; with short, one scenario per action.
func faultScenarios(short bool) []faultScenario {
	if short {
		return []faultScenario{
			{point: faults.CommitAfterTx, action: actionFail},
			{point: faults.ReadSortStart, action: actionKill},
			{point: faults.WriteChunksAfterWrite, action: actionHang},
			{point: faults.WriteChunksAfterWrite, action: actionKill, policy: "tiered"},
			{point: faults.WriteChunksAfterWrite, action: actionKill, path: metrics.PathCopy},
			{point: faults.WriteChunksAfterWrite, action: actionKill, path: metrics.PathPassThrough},
			{point: faults.WriteChunksBeforeWrite, action: actionFail, batch: true},
			{point: faults.BatchTopicStart, action: actionFail, batch: true},
		}
	}
	var out []faultScenario
	for _, action := range []string{actionFail, actionKill, actionHang} {
		for _, p := range faults.Points {
			out = append(out, faultScenario{point: p, action: action})
		}
	}
	// The steps the policies change: a worker killed while writing, and around the commit.
	for _, pol := range []string{"tiered", "leveled"} {
		for _, p := range []string{faults.WriteChunksAfterWrite, faults.CommitBeforeTx, faults.CommitAfterTx} {
			out = append(out, faultScenario{point: p, action: actionKill, policy: pol})
		}
	}
	// The copy and pass-through paths: a worker killed around an output it assembles or keeps, a
	// retried and a hung write; the store's copy of a kept chunk failing.
	for _, path := range []string{metrics.PathCopy, metrics.PathPassThrough} {
		for _, p := range []string{faults.WriteChunksBeforeWrite, faults.WriteChunksAfterWrite, faults.WriteChunksAfterStage} {
			out = append(out, faultScenario{point: p, action: actionKill, path: path})
		}
		out = append(out, faultScenario{point: faults.WriteChunksAfterWrite, action: actionFail, path: path},
			faultScenario{point: faults.WriteChunksBeforeWrite, action: actionHang, path: path})
	}
	out = append(out, faultScenario{point: faults.StoreWrite, action: actionFail, path: metrics.PathPassThrough})
	return append(out, batchFaultScenarios...)
}

// TestFaultSuite runs one optimization per scenario with a fault at a point (faults.Points) of a
// worker process: a retryable error, a SIGKILL of the process (a supervisor starts a new worker
// without the fault, as systemd would) or a hang (timed out by the heartbeat timeout, or by the
// start-to-close timeout of catalog activities). Every scenario has its own catalog database,
// store directory and task queue on one shared dev server. After each run: the topic is either
// fully optimized or fully as it was (catalog rows = objects under its prefix, rows equal to the
// original multiset, nothing left behind in the store), the queue holds no stale lease, a commit
// retried after its transaction found it already committed (one optimization record), and a
// topic the run failed is optimized by a later run. The batch scenarios do the same for a batch
// of tiny topics (runBatchFaultScenario). Slow scenarios (waiting for a catalog
// activity's start-to-close timeout) all run side by side, the others three at a time. Prints
// "fault-suite: N passed, M failed".
func TestFaultSuite(t *testing.T) {
	srv := testenv.StartDevServer(t)
	if _, err := buildWorker(); err != nil {
		t.Fatalf("build worker: %v", err)
	}
	scenarios := faultScenarios(testing.Short())
	var (
		mu      sync.Mutex
		passed  int
		summary []string
		wg      sync.WaitGroup
	)
	run := func(i int, sc faultScenario) {
		start := time.Now()
		var note string
		ok := t.Run(sc.name(), func(t *testing.T) { note = runFaultScenario(t, srv, i, sc) })
		mu.Lock()
		defer mu.Unlock()
		if ok {
			passed++
		}
		summary = append(summary, fmt.Sprintf("%-34s %-4s %6.1fs  %s", sc.name(), map[bool]string{true: "ok", false: "FAIL"}[ok],
			time.Since(start).Seconds(), note))
	}
	// Slow scenarios mostly wait for a timeout: all of them run at once. The others take turns,
	// a few at a time (2 cores).
	fastSlots := make(chan struct{}, 3)
	for i, sc := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sc.slow() {
				fastSlots <- struct{}{}
				defer func() { <-fastSlots }()
			}
			run(i, sc)
		}()
	}
	wg.Wait()
	slices.Sort(summary)
	t.Logf("fault suite scenarios:\n%s", strings.Join(summary, "\n"))
	failed := len(scenarios) - passed
	line := fmt.Sprintf("fault-suite: %d passed, %d failed\n", passed, failed)
	fmt.Print(line)
	// go test shows a passing package's output only with -v: scripts/test.sh names a file here
	// and prints the line after the whole run.
	if report := os.Getenv("STOREOPT_FAULT_SUITE_REPORT"); report != "" {
		if err := os.WriteFile(report, []byte(line), 0o644); err != nil {
			t.Errorf("write %s: %v", report, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d fault scenarios failed", failed, len(scenarios))
	}
}

// runFaultScenario runs scenario i and checks everything; it returns a note on what happened.
func runFaultScenario(t *testing.T, srv *testenv.DevServer, i int, sc faultScenario) string {
	e := newIsolatedEnv(t, srv, fmt.Sprintf("fault-suite-%02d", i))
	if sc.batch {
		return runBatchFaultScenario(t, e, i, sc)
	}
	if sc.policy != "" {
		return runPolicyFaultScenario(t, e, i, sc)
	}
	opts := testPreset(t)
	opts.Sequence = fmt.Sprintf("fault_%02d", i)
	// The IMU topic is optimized. Release runs only for a failing topic, so scenarios at points
	// of Release get a second IMU topic whose last chunk has a corrupt data page: it fails in
	// WriteChunks after other groups have written output, which Release must delete.
	imu := opts.Topics[0]
	if sc.path != "" {
		imu.Overlap, imu.UnsortedFraction, imu.EqualTimestamps, imu.NullTimestamps = 0, 0, false, 0
	}
	switch sc.path {
	case metrics.PathCopy:
		// Chunks of a third of an output, so that outputs join several inputs.
		imu.Chunks, imu.RowsPerChunk = 20, 100
	case metrics.PathPassThrough:
		// Chunks of most of an output each, with a page index.
		imu.Chunks, imu.RowsPerChunk, imu.PageIndex, imu.RowGroupRows = 8, 200, true, 50
	}
	opts.Topics = []ingest.TopicSpec{imu}
	if sc.needsFailingTopic() {
		bad := imu
		bad.Path += "_bad"
		opts.Topics = append(opts.Topics, bad)
	}
	ingested := e.ingest(t, opts)
	good := e.snapshot(t, ingested[0].TopicID)
	var bad *corruptTopic
	if len(ingested) > 1 {
		bad = e.corruptPage(t, ingested[1].TopicID)
	}
	stored := e.storeContent(t)

	sup := superviseWorker(t, e, sc.spec())
	res := e.runWithHeartbeat(t, fmt.Sprintf("fault-suite-%02d", i), suiteHeartbeat, workflows.StoreOptimizerInput{})

	if !sup.log.faultHit(sc.point) {
		t.Errorf("fault %s never acted", sc.spec())
	}
	deaths := sup.restarts()
	if sc.action == actionKill && len(deaths) == 0 {
		t.Errorf("worker was not killed at %s", sc.point)
	}
	for _, d := range deaths {
		if !strings.Contains(d, "killed") {
			t.Errorf("worker process died otherwise than by the injected kill: %s", d)
		}
	}
	wantFailed := len(ingested) - 1
	if res.Optimized != 1 || res.Failed != wantFailed || res.Skipped != 0 {
		t.Errorf("run result %+v, want 1 optimized and %d failed", res, wantFailed)
	}
	e.checkOptimized(t, good, suiteMaxChunk)
	if got := pagesCopied(t, e, good.id, imu.RowsPerChunk); got != (sc.path == metrics.PathCopy) {
		t.Errorf("outputs copied from their inputs' pages: %v, want %v", got, sc.path == metrics.PathCopy)
	}
	if got := chunksKept(t, e, good); got != (sc.path == metrics.PathPassThrough) {
		t.Errorf("outputs are their input chunks' bytes: %v, want %v", got, sc.path == metrics.PathPassThrough)
	}
	checkPrefixChunks(t, e, good.topic)
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, []int64{good.id})
	child := e.topicResult(t, good.locator)
	if sc.point == faults.CommitAfterTx && !child.AlreadyCommitted {
		t.Errorf("commit retried after its transaction did not report AlreadyCommitted: %+v", child)
	}
	note := fmt.Sprintf("optimized %d chunks -> %d", child.InputChunks, child.OutputChunks)
	if len(deaths) > 0 {
		note += fmt.Sprintf(", worker killed %d× and restarted", len(deaths))
	}
	if child.AlreadyCommitted {
		note += ", retried commit found it AlreadyCommitted"
	}
	if bad == nil {
		return note
	}
	sup.stop()
	e.checkFailedThenOptimized(t, bad, res)
	return note + ", corrupt topic failed and released, then optimized by the next run"
}

// corruptTopic is a topic one of whose chunks was corrupted.
type corruptTopic struct {
	snapshot
	record   topicRecord
	key      string
	original []byte
}

// corruptPage snapshots topic id, then corrupts a data page of the last column of its last
// chunk (see corruptColumn): the chunk passes ReadSort and fails in WriteChunks.
func (e *env) corruptPage(t *testing.T, id int64) *corruptTopic {
	t.Helper()
	ctx := context.Background()
	c := &corruptTopic{snapshot: e.snapshot(t, id), record: e.recordTopic(t, id)}
	c.key = c.keys[len(c.keys)-1]
	var err error
	if c.original, err = e.b.ReadAll(ctx, c.key); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(c.original))
	if err != nil {
		t.Fatal(err)
	}
	leaf := pf.MetaData().Schema.NumColumns() - 1
	if name := pf.MetaData().Schema.Column(leaf).Name(); name == "timestamp_ns" {
		t.Fatalf("chunk %s: last column is %s", c.key, name)
	}
	_ = pf.Close()
	if err := e.b.WriteAll(ctx, c.key, corruptColumn(t, rawChunk{data: c.original}, leaf).data, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkFailedThenOptimized checks that run res failed the corrupt topic naming its chunk and left
// it untouched, then repairs the chunk and checks that the next run (on a worker without faults)
// optimizes it.
func (e *env) checkFailedThenOptimized(t *testing.T, c *corruptTopic, res workflows.StoreOptimizerResult) {
	t.Helper()
	ctx := context.Background()
	if msg, ok := failuresByLocator(t, res)[c.locator]; !ok || !strings.Contains(msg, c.key) {
		t.Errorf("failures %+v do not report topic %s with chunk %s", res.Failures, c.locator, c.key)
	}
	e.checkUntouched(t, c.record)
	if err := e.b.WriteAll(ctx, c.key, c.original, nil); err != nil {
		t.Fatal(err)
	}
	equalRows(t, c.locator, c.content, readTopic(t, e.b, c.keys))
	stop := testenv.StartWorker(t, e.srv.Client, e.cfg)
	defer func() { _ = stop() }()
	res2 := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: suiteMaxChunk})
	if res2.Optimized != 1 || res2.Failed != 0 {
		t.Errorf("next run result %+v, want the repaired topic optimized", res2)
	}
	e.checkOptimized(t, c.snapshot, suiteMaxChunk)
	e.queueEmpty(t)
}

// runWithHeartbeat runs StoreOptimizerWorkflow as id with input in (MaxChunkSizeBytes 0:
// suiteMaxChunk) on e's task queue with the given heartbeat timeout for the data activities, and
// waits for it (at most 5 minutes).
func (e *env) runWithHeartbeat(t *testing.T, id string, heartbeat time.Duration, in workflows.StoreOptimizerInput) workflows.StoreOptimizerResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if in.MaxChunkSizeBytes == 0 {
		in.MaxChunkSizeBytes = suiteMaxChunk
	}
	in.HeartbeatTimeout = heartbeat
	run, err := e.srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, in)
	if err != nil {
		t.Fatal(err)
	}
	e.lastRun = id
	var res workflows.StoreOptimizerResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return res
}

// topicResult returns the result of the latest OptimizeTopicWorkflow of locator.
func (e *env) topicResult(t *testing.T, locator string) workflows.OptimizeTopicResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res workflows.OptimizeTopicResult
	if err := e.srv.Client.GetWorkflow(ctx, workflows.TopicWorkflowID(e.cfg.TaskQueue, locator), "").Get(ctx, &res); err != nil {
		t.Fatalf("topic %s: optimization workflow: %v", locator, err)
	}
	return res
}

// runPolicyFaultScenario runs a tiered or leveled compaction of a live IMU topic (a leveled one on
// a topic whose first chunks are an L1 run already) with the fault, then checks that the topic
// holds exactly its rows once (L0 chunks joined for tiered; one sorted L1 run for leveled), that
// every chunk row's object is there with its size, that one optimization of the policy was
// recorded and the queue is empty.
func runPolicyFaultScenario(t *testing.T, e *env, i int, sc faultScenario) string {
	ctx := context.Background()
	opts := testPreset(t)
	opts.Sequence, opts.NoFinalize = fmt.Sprintf("fault_%02d", i), true
	opts.Topics = opts.Topics[:1]
	ingested := e.ingest(t, opts)
	id := ingested[0].TopicID
	records := 0
	if sc.policy == "leveled" {
		// A first leveled compaction without faults makes an L1 run; new chunks then overlap it.
		stop := testenv.StartWorker(t, e.srv.Client, e.cfg)
		if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: policyMaxChunk, Policy: "leveled"}); res.Leveled != 1 {
			t.Fatalf("first leveled run %+v", res)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if err := ingest.Append(ctx, e.cat, e.b, opts, ingested, opts.Topics[0].Chunks, 5); err != nil {
			t.Fatal(err)
		}
		records = 1
	}
	keys := chunkKeys(t, e.cat, id)
	before := readTopic(t, e.b, keys)

	sup := superviseWorker(t, e, sc.spec())
	// Tiered joins chunks smaller than half the chunk size: the test IMU chunks are about 22 KB.
	res := e.runWithHeartbeat(t, fmt.Sprintf("fault-suite-%02d", i), suiteHeartbeat,
		workflows.StoreOptimizerInput{MaxChunkSizeBytes: policyMaxChunk, Policy: sc.policy})
	if !sup.log.faultHit(sc.point) {
		t.Errorf("fault %s never acted", sc.spec())
	}
	deaths := sup.restarts()
	if len(deaths) == 0 {
		t.Errorf("worker was not killed at %s", sc.point)
	}
	if res.Optimized != 1 || res.Failed != 0 || res.Tiered+res.Leveled != 1 {
		t.Errorf("run result %+v, want one %s compaction", res, sc.policy)
	}
	chunks, err := e.cat.Chunks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	after := readTopic(t, e.b, chunkKeys(t, e.cat, id))
	equalRows(t, ingested[0].Locator, before, after)
	for k, c := range chunks {
		if c.RowCount != after.perChunk[k] || c.SizeBytes != after.chunkSize[k] {
			t.Errorf("chunk %s: catalog says %d rows %d bytes, object has %d rows %d bytes",
				c.ObjectKey, c.RowCount, c.SizeBytes, after.perChunk[k], after.chunkSize[k])
		}
		if want := map[string]string{"tiered": "L0", "leveled": "L1"}[sc.policy]; c.Level.String() != want {
			t.Errorf("chunk %s is %s after a %s compaction", c.ObjectKey, c.Level, sc.policy)
		}
	}
	if len(chunks) >= len(keys) {
		t.Errorf("%d chunks before, %d after the %s compaction", len(keys), len(chunks), sc.policy)
	}
	if sc.policy == "leveled" {
		checkOrder(t, after)
	}
	optims, err := e.cat.Optimizations(ctx, id)
	if err != nil || len(optims) != records+1 || string(optims[len(optims)-1].Policy) != sc.policy {
		t.Errorf("optimization records %+v (err %v), want %d, the last %s", optims, err, records+1, sc.policy)
	}
	e.queueEmpty(t)
	return fmt.Sprintf("%s: %d chunks -> %d, worker killed %d× and restarted", sc.policy, len(keys), len(chunks), len(deaths))
}

// pagesCopied says whether the first output chunk of topic id holds its inputs' pages (the copy
// path): the second page of its last column starts at the inputs' rowsPerChunk rows, where a
// rewrite's pages hold parquetio.DataPageRows rows.
// chunksKept reports whether every chunk of the optimized topic (snapshotted before as before)
// holds the bytes of one of its chunks before: every output passed through.
func chunksKept(t *testing.T, e *env, before snapshot) bool {
	t.Helper()
	ctx := context.Background()
	originals := map[string]bool{}
	for _, k := range before.keys {
		data, err := e.b.ReadAll(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		originals[string(data)] = true
	}
	for _, c := range chunksOf(t, e, before.id) {
		data, err := e.b.ReadAll(ctx, c.ObjectKey)
		if err != nil {
			t.Fatal(err)
		}
		if !originals[string(data)] {
			return false
		}
	}
	return true
}

func pagesCopied(t *testing.T, e *env, id int64, rowsPerChunk int) bool {
	t.Helper()
	chunks := chunksOf(t, e, id)
	data, err := e.b.ReadAll(context.Background(), chunks[0].ObjectKey)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pir, err := pf.GetPageIndexReader().RowGroup(0)
	if err != nil || pir == nil {
		t.Fatalf("chunk %s: no page index: %v", chunks[0].ObjectKey, err)
	}
	oi, err := pir.GetOffsetIndex(pf.MetaData().NumColumns() - 1)
	if err != nil {
		t.Fatal(err)
	}
	pages := oi.GetPageLocations()
	return len(pages) > 1 && pages[1].FirstRowIndex == int64(rowsPerChunk)
}
