package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/metrics/metricstest"
	"github.com/storeopt/storeopt/workflows"
)

// batchFaultScenarios are the fault suite's scenarios in a batch of tiny topics: the worker
// killed while the batch writes and around its commits, one topic's write failing retryably
// once, and the batch failing as a whole (faults.BatchTopicStart: see runBatchFaultScenario).
var batchFaultScenarios = []faultScenario{
	{point: faults.WriteChunksAfterWrite, action: actionKill, batch: true},
	{point: faults.CommitBeforeTx, action: actionKill, batch: true},
	{point: faults.CommitAfterTx, action: actionKill, batch: true},
	{point: faults.WriteChunksBeforeWrite, action: actionFail, batch: true},
	{point: faults.BatchTopicStart, action: actionFail, batch: true},
	{point: faults.WriteChunksAfterWrite, action: actionKill, batch: true, path: metrics.PathPassThrough},
}

// batchMaxChunk is the output chunk size limit of the batch scenarios: their topics are tiny
// (each at most this and workflows.DefaultBatchTopicBytes), so one batch optimizes them all.
const batchMaxChunk = 256 << 10

// tinyTopics are three tiny IMU topics whose outputs take path (metrics.PathPassThrough: one
// chunk each, recorded with a page index, which its topic's one output keeps; else four
// overlapping chunks each, rewritten).
func tinyTopics(path string) []ingest.TopicSpec {
	var out []ingest.TopicSpec
	for k := range 3 {
		spec := ingest.TopicSpec{Path: fmt.Sprintf("tiny/%d", k), Kind: ingest.IMU, Chunks: 4, RowsPerChunk: 30}
		if path == metrics.PathPassThrough {
			spec.Chunks, spec.RowsPerChunk, spec.PageIndex, spec.RowGroupRows = 1, 120, true, 40
		}
		out = append(out, spec)
	}
	return out
}

// runBatchFaultScenario runs one batch of three tiny topics with the fault and checks:
//   - kill: every topic optimized and verified by the batch (retried after the worker died,
//     none through a topic workflow of its own), one optimization record each, nothing left
//     behind in the store, the queue empty;
//   - fail (one topic's write, once): the same, with the failing topic given back and optimized
//     by a topic workflow of its own while its batch mates were optimized in the batch's first
//     attempt;
//   - the batch failing as a whole: the worker is killed in the second topic's write (after the
//     first was committed) and the retried batch fails for good at once (faults.BatchTopicStart):
//     the first topic is reported optimized, the other two failed with the batch's error, no
//     lease is left, the second topic's partial output is deleted, both are as they were (the
//     third still queued), and the next run optimizes them.
func runBatchFaultScenario(t *testing.T, e *env, i int, sc faultScenario) string {
	ctx := context.Background()
	opts := ingest.Options{Sequence: fmt.Sprintf("fault_%02d", i), Seed: int64(i + 1), Topics: tinyTopics(sc.path)}
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	var before []snapshot
	var records []topicRecord
	var ids []int64
	for _, it := range ingested {
		if it.Bytes > batchMaxChunk {
			t.Fatalf("topic %s has %d bytes: not tiny", it.Locator, it.Bytes)
		}
		before = append(before, e.snapshot(t, it.TopicID))
		records = append(records, e.recordTopic(t, it.TopicID))
		ids = append(ids, it.TopicID)
	}
	stored := e.storeContent(t)
	whole := sc.point == faults.BatchTopicStart
	spec := sc.spec()
	if whole {
		spec = faults.WriteChunksAfterWrite + "=kill@2"
	}
	sup := superviseWorker(t, e, spec)
	if whole {
		sup.setRestartFaults(faults.BatchTopicStart + "=fail*1")
	}
	id := fmt.Sprintf("fault-suite-%02d", i)
	res := e.runWithHeartbeat(t, id, suiteHeartbeat, workflows.StoreOptimizerInput{MaxChunkSizeBytes: batchMaxChunk})

	if !sup.log.faultHit(sc.point) {
		t.Errorf("fault %s never acted", sc.point)
	}
	deaths := sup.restarts()
	if (sc.action == actionKill || whole) && len(deaths) == 0 {
		t.Errorf("worker was not killed")
	}
	for _, d := range deaths {
		if !strings.Contains(d, "killed") {
			t.Errorf("worker process died otherwise than by the injected kill: %s", d)
		}
	}
	if whole {
		checkBatchReleased(t, e, sup, before, records, stored, res)
		saveHistory(t, e.srv.Client, id, "store-optimizer-batch-released")
		return "batch failed as a whole: 1 optimized before, 2 released and failed, then optimized by the next run"
	}
	if res.Optimized != 3 || res.Failed != 0 || res.Skipped != 0 {
		t.Errorf("run result %+v, want 3 optimized", res)
	}
	for _, s := range before {
		e.checkOptimized(t, s, batchMaxChunk)
		checkPrefixChunks(t, e, s.topic)
		if kept := chunksKept(t, e, s); kept != (sc.path == metrics.PathPassThrough) {
			t.Errorf("topic %s: outputs are their input chunks' bytes: %v, want %v", s.locator, kept, sc.path == metrics.PathPassThrough)
		}
	}
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, ids)
	own := e.topicWorkflows(t, before)
	attempts := batchAttempts(t, e, id)
	if len(attempts) != 1 {
		t.Fatalf("the run ran %d batches (attempts %v), want 1", len(attempts), attempts)
	}
	if sc.action == actionFail {
		if len(own) != 1 {
			t.Errorf("topics optimized by a topic workflow of their own: %v, want exactly the one whose write failed", own)
		}
		if attempts[0] != 1 {
			t.Errorf("the batch took %d attempts: one topic's retryable error retried its batch mates", attempts[0])
		}
		saveHistory(t, e.srv.Client, id, "store-optimizer-batch-given-back")
		return fmt.Sprintf("%s given back and optimized by its own topic workflow, its batch mates in the batch's first attempt", own)
	}
	if len(own) != 0 {
		t.Errorf("topics optimized by a topic workflow of their own: %v, want none (the batch retried)", own)
	}
	if attempts[0] < 2 {
		t.Errorf("the batch took %d attempts, want a retry after the worker was killed", attempts[0])
	}
	return fmt.Sprintf("3 topics optimized by one batch in %d attempts, worker killed %d× and restarted", attempts[0], len(deaths))
}

// checkBatchReleased checks the run of a batch that failed as a whole (runBatchFaultScenario),
// then that the next run, on a worker without faults, optimizes the topics it failed.
func checkBatchReleased(t *testing.T, e *env, sup *workerSupervisor, before []snapshot, records []topicRecord,
	stored storeContent, res workflows.StoreOptimizerResult) {
	t.Helper()
	ctx := context.Background()
	if !sup.log.faultHit(faults.WriteChunksAfterWrite) {
		t.Errorf("the worker was not killed in the batch's write")
	}
	if res.Optimized != 1 || res.Failed != 2 {
		t.Errorf("run result %+v, want the topic committed before the failure optimized and the 2 others failed", res)
	}
	failures := failuresByLocator(t, res)
	for _, s := range before[1:] {
		if msg := failures[s.locator]; !strings.Contains(msg, "batch: ") || !strings.Contains(msg, faults.BatchTopicStart) {
			t.Errorf("topic %s: failure %q, want the batch's error", s.locator, msg)
		}
	}
	for _, s := range before {
		if l, err := e.cat.LeaseOf(ctx, s.id); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("topic %s: lease %+v left behind (err %v)", s.locator, l, err)
		}
	}
	e.checkOptimized(t, before[0], batchMaxChunk)
	e.checkUntouched(t, records[1])
	// The third topic, which the batch never reached, stays queued without a lease (Release drops
	// only a queue row the run leased): the next run lists it again.
	e.checkRowsUntouched(t, records[2], "plans", "staged_chunks", "optimizations")
	e.checkStoreAfterRun(t, stored, []int64{before[0].id})
	sup.stop()
	stop := testenv.StartWorker(t, e.srv.Client, e.cfg)
	defer func() { _ = stop() }()
	res2 := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: batchMaxChunk})
	if res2.Optimized != 2 || res2.Failed != 0 {
		t.Errorf("next run result %+v, want the 2 failed topics optimized", res2)
	}
	for _, s := range before[1:] {
		e.checkOptimized(t, s, batchMaxChunk)
	}
	e.queueEmpty(t)
}

// topicWorkflows returns the locators of the topics that have an OptimizeTopicWorkflow.
func (e *env) topicWorkflows(t *testing.T, topics []snapshot) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	for _, s := range topics {
		_, err := e.srv.Client.DescribeWorkflowExecution(ctx, workflows.TopicWorkflowID(e.cfg.TaskQueue, s.locator), "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, s.locator)
		}
	}
	return out
}

// batchAttempts returns, for each OptimizeSmallTopics activity of run id (latest execution), the
// attempt that ended it.
func batchAttempts(t *testing.T, e *env, id string) []int32 {
	t.Helper()
	it := e.srv.Client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	batches := map[int64]bool{}
	var out []int32
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "OptimizeSmallTopics" {
			batches[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && batches[a.GetScheduledEventId()] {
			out = append(out, a.GetAttempt())
		}
	}
	return out
}

// TestMetricsOfAFailedBatch: a batch of three tiny topics fails for good before its second topic
// (faults.BatchTopicStart, in the in-process worker): the topic committed before the failure is
// counted optimized and the two others failed (storeopt_topics_failed_total, as the run reports
// them), none given back or retried in a topic workflow.
func TestMetricsOfAFailedBatch(t *testing.T) {
	e := newEnv(t)
	opts := ingest.Options{Sequence: "failed_batch", Seed: 5, Topics: tinyTopics("")}
	if _, err := ingest.Ingest(context.Background(), e.cat, e.b, opts); err != nil {
		t.Fatal(err)
	}
	t.Setenv(faults.EnvVar, faults.BatchTopicStart+"=fail@2*1")
	url, _ := testenv.StartWorkerWithMetrics(t, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: batchMaxChunk})
	if res.Optimized != 1 || res.Failed != 2 {
		t.Fatalf("run result %+v, want 1 optimized and 2 failed", res)
	}
	s := metricstest.Scrape(t, url)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"storeopt_topics_optimized_total", nil, 1},
		{"storeopt_topics_failed_total", map[string]string{"policy": "full", "error_type": metrics.ErrorOther}, 2},
		{"storeopt_topics_failed_total", nil, 2},
		{"storeopt_topics_quarantined_total", nil, 0},
	} {
		if got := s.Value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
