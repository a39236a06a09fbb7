package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// ingestTopics ingests the "test" preset's topics named by index under sequence and snapshots
// them.
func (e *env) ingestTopics(t *testing.T, sequence string, topics ...int) []snapshot {
	t.Helper()
	opts := testPreset(t)
	opts.Sequence = sequence
	var specs []ingest.TopicSpec
	for _, i := range topics {
		specs = append(specs, opts.Topics[i])
	}
	opts.Topics = specs
	ingested, err := ingest.Ingest(context.Background(), e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []snapshot
	for _, it := range ingested {
		out = append(out, e.snapshot(t, it.TopicID))
	}
	return out
}

// startRun starts StoreOptimizerWorkflow as id on e's task queue without waiting for it.
func (e *env) startRun(t *testing.T, id string, heartbeat time.Duration) client.WorkflowRun {
	t.Helper()
	run, err := e.srv.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{MaxChunkSizeBytes: suiteMaxChunk, HeartbeatTimeout: heartbeat})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// waitRun waits for run (at most 5 minutes) and returns its result.
func waitRun(t *testing.T, run client.WorkflowRun) workflows.StoreOptimizerResult {
	t.Helper()
	res, err := runResult(run)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runResult waits for run (5 minutes at most). Unlike waitRun it fails no test, so goroutines
// may call it.
func runResult(run client.WorkflowRun) (workflows.StoreOptimizerResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var res workflows.StoreOptimizerResult
	if err := run.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("run %s: %w", run.GetID(), err)
	}
	return res, nil
}

// waitUntil polls cond every 100 ms until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// objectsUnder counts the objects under "<prefix>/".
func (e *env) objectsUnder(t *testing.T, prefix string) int {
	t.Helper()
	n := 0
	for k := range listKeys(t, e) {
		if strings.HasPrefix(k, prefix+"/") {
			n++
		}
	}
	return n
}

// leaseOf returns the topic's lease, or ok=false when it has none.
func (e *env) leaseOf(t *testing.T, topicID int64) (catalog.Lease, bool) {
	t.Helper()
	l, err := e.cat.LeaseOf(context.Background(), topicID)
	if errors.Is(err, catalog.ErrNotFound) {
		return l, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

// workflowStatus returns the status of the latest run of workflow id.
func (e *env) workflowStatus(t *testing.T, id string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := e.srv.Client.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// TestTerminatedRunReleasesItsTopics terminates a run (the parent) while its topic's WriteChunks
// hangs with output already written. The parent close policy (REQUEST_CANCEL) cancels the child,
// which releases its lease and deletes its partial output on its own: the topic is untouched
// and unqueued, and the next run optimizes it. (The child may end failed with the activity's
// heartbeat timeout rather than canceled: a hung activity learns of the cancel only by timing
// out. Its release is the same.)
func TestTerminatedRunReleasesItsTopics(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	topics := e.ingestTopics(t, "terminate_parent", 0)
	s := topics[0]
	rec := e.recordTopic(t, s.id)
	stored := e.storeContent(t)

	// A hung attempt keeps its activity slot; with a 10 s heartbeat timeout the first attempts are
	// still the only ones when the run is terminated, so the worker has a slot left for Release.
	sup := superviseWorker(t, e, faults.WriteChunksAfterWrite+"=hang")
	run := e.startRun(t, "terminate-parent-1", 10*time.Second)
	var fresh string
	waitUntil(t, time.Minute, "an output object is written", func() bool {
		l, ok := e.leaseOf(t, s.id)
		fresh = l.FreshPrefix
		return ok && sup.log.faultHit(faults.WriteChunksAfterWrite) && e.objectsUnder(t, fresh) > 0
	})
	if err := e.srv.Client.TerminateWorkflow(ctx, run.GetID(), "", "operator terminates the run"); err != nil {
		t.Fatal(err)
	}
	child := workflows.TopicWorkflowID(e.cfg.TaskQueue, s.locator)
	waitUntil(t, time.Minute, "the topic's workflow has closed", func() bool {
		return e.workflowStatus(t, child) != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	// The cancel reaches the hung WriteChunks only through its heartbeat timeout, so the topic
	// workflow may end failed (that timeout) instead of canceled; either way it released.
	st := e.workflowStatus(t, child)
	if st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED && st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Errorf("topic workflow ended %v, want canceled by the parent close policy", st)
	}
	t.Logf("topic workflow ended %v: %v", st, e.srv.Client.GetWorkflow(ctx, child, "").Get(ctx, nil))
	e.checkUntouched(t, rec) // lease released, nothing queued, nothing switched
	if n := e.objectsUnder(t, fresh); n != 0 {
		t.Errorf("%d objects left under the canceled run's prefix %s", n, fresh)
	}
	sup.stop()

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: suiteMaxChunk})
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("next run result %+v, want the topic optimized", res)
	}
	e.checkOptimized(t, s, suiteMaxChunk)
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, []int64{s.id})
}

// TestTerminatedTopicIsTakenOverAndItsZombieCannotCommit terminates a topic's workflow directly
// while its Commit hangs (everything written and staged): no Release runs, so the terminated run
// keeps its lease and partial output. The next run takes the lease over, deleting that output,
// and while it holds the lease a zombie Commit of the terminated run (called directly with the
// old run ID) fails with the lease-lost error and changes nothing; after the next run committed,
// it still fails. The topic has exactly one optimization, the next run's.
func TestTerminatedTopicIsTakenOverAndItsZombieCannotCommit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	topics := e.ingestTopics(t, "terminate_child", 0)
	s := topics[0]
	rec := e.recordTopic(t, s.id)
	stored := e.storeContent(t)
	child := workflows.TopicWorkflowID(e.cfg.TaskQueue, s.locator)

	sup := superviseWorker(t, e, faults.CommitBeforeTx+"=hang")
	run := e.startRun(t, "terminate-child-1", suiteHeartbeat)
	waitUntil(t, time.Minute, "the commit has started", func() bool { return sup.log.faultHit(faults.CommitBeforeTx) })
	old, ok := e.leaseOf(t, s.id)
	if !ok {
		t.Fatal("no lease while the commit runs")
	}
	if err := e.srv.Client.TerminateWorkflow(ctx, child, old.FencingToken, "operator terminates the topic"); err != nil {
		t.Fatal(err)
	}
	res := waitRun(t, run)
	if res.Failed != 1 || res.Optimized != 0 {
		t.Errorf("run result %+v, want the terminated topic failed", res)
	}
	if l, ok := e.leaseOf(t, s.id); !ok || l.FencingToken != old.FencingToken {
		t.Fatalf("lease after termination %+v (held %v), want still the terminated run's", l, ok)
	}
	partial := e.objectsUnder(t, old.FreshPrefix)
	if partial == 0 {
		t.Fatalf("terminated run left no output under %s: nothing to take over", old.FreshPrefix)
	}
	sup.stop()

	// The next run's Commit sleeps, so its lease is held (uncommitted) while the zombie tries.
	sup = superviseWorker(t, e, faults.CommitBeforeTx+"=sleep:10s")
	next := e.startRun(t, "terminate-child-2", suiteHeartbeat)
	waitUntil(t, time.Minute, "the next run's commit has started", func() bool { return sup.log.faultHit(faults.CommitBeforeTx) })
	cur, ok := e.leaseOf(t, s.id)
	if !ok || cur.FencingToken == old.FencingToken {
		t.Fatalf("lease %+v (held %v): the next run did not take it over", cur, ok)
	}
	if n := e.objectsUnder(t, old.FreshPrefix); n != 0 {
		t.Errorf("takeover left %d of %d objects under the terminated run's prefix %s", n, partial, old.FreshPrefix)
	}
	zombie := &activities.Activities{Catalog: e.cat, Bucket: e.b}
	zombieCommit := func(when string) {
		t.Helper()
		_, err := zombie.Commit(activities.WithRun(ctx, old.Owner, old.FencingToken), activities.CommitInput{TopicID: s.id})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeLeaseLost {
			t.Fatalf("zombie commit %s: error %v, want %s", when, err, activities.ErrTypeLeaseLost)
		}
		t.Logf("zombie commit %s: %v", when, err)
	}
	zombieCommit("while the next run holds the lease")
	if l, ok := e.leaseOf(t, s.id); ok && l.FencingToken != cur.FencingToken {
		t.Errorf("zombie commit changed the lease to %+v", l)
	}
	if tp, err := e.cat.Topic(ctx, s.id); err != nil || tp.DataPrefix != rec.topic.DataPrefix {
		t.Errorf("zombie commit switched the topic to %s (err %v)", tp.DataPrefix, err)
	}

	res = waitRun(t, next)
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("next run result %+v, want the topic optimized", res)
	}
	zombieCommit("after the next run committed")
	e.checkOptimized(t, s, suiteMaxChunk)
	recs, err := e.cat.Optimizations(ctx, s.id)
	if err != nil || len(recs) != 1 || recs[0].FencingToken != cur.FencingToken {
		t.Errorf("optimizations %+v (err %v), want one, by run %s", recs, err, cur.FencingToken)
	}
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, []int64{s.id})
}

// TestManualRunWhileRunInFlight starts a run on two worker processes whose WriteChunks are slow,
// and while it is in flight starts a second StoreOptimizerWorkflow by hand (as `temporal workflow
// start` would): every topic is optimized exactly once (one optimization record, catalog rows =
// objects of its prefix), the second run skips the topics the first is optimizing.
func TestManualRunWhileRunInFlight(t *testing.T) {
	e := newEnv(t)
	var topics []snapshot
	for _, seq := range []string{"manual_a", "manual_b"} {
		topics = append(topics, e.ingestTopics(t, seq, 0, 1, 2)...)
	}
	stored := e.storeContent(t)
	slow := faults.WriteChunksBeforeWrite + "=sleep:500ms"
	w1 := superviseWorker(t, e, slow)
	w2 := superviseWorker(t, e, slow)

	first := e.startRun(t, "manual-overlap-1", 10*time.Second)
	waitUntil(t, time.Minute, "the first run writes chunks", func() bool {
		return w1.log.faultHit(faults.WriteChunksBeforeWrite) || w2.log.faultHit(faults.WriteChunksBeforeWrite)
	})
	if st := e.workflowStatus(t, first.GetID()); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("first run is %v before the manual start: no overlap", st)
	}
	manual := e.startRun(t, "manual-overlap-2", 10*time.Second)
	var results [2]workflows.StoreOptimizerResult
	var errs [2]error
	var wg sync.WaitGroup
	for i, r := range []client.WorkflowRun{first, manual} {
		wg.Go(func() { results[i], errs[i] = runResult(r) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("first run %+v", results[0])
	t.Logf("manual run %+v", results[1])
	if got := results[0].Optimized + results[1].Optimized; got != len(topics) || results[0].Failed+results[1].Failed != 0 {
		t.Errorf("%d topics optimized by the two runs (failed %d+%d), want %d", got,
			results[0].Failed, results[1].Failed, len(topics))
	}
	if results[1].Skipped == 0 {
		t.Errorf("manual run skipped nothing: it did not overlap the first run")
	}
	var ids []int64
	for _, s := range topics {
		e.checkOptimized(t, s, suiteMaxChunk) // exactly one optimization record
		tp, err := e.cat.Topic(context.Background(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		checkPrefixChunks(t, e, tp)
		ids = append(ids, s.id)
	}
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, ids)
	for _, w := range []*workerSupervisor{w1, w2} {
		if d := w.restarts(); len(d) != 0 {
			t.Errorf("worker process died: %v", d)
		}
	}
}
