package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/workflows"
)

// TestSlowTopicDoesNotStallTheRun: one topic of a run is slow (its first output chunk waits ten
// minutes before it is written, as a large topic's long write would) among small one-chunk
// topics listed in pages of 2, one large and two small topics at a time. Every other topic, of
// every later page, is optimized while the slow one is still writing: the catalog has switched
// them all and the run's progress query shows the slow topic as the only one in flight, with
// the run still running. (A run that waited for each page's children before listing the next
// page would hold here with at most one other topic optimized.) Then the worker is killed and
// replaced by one without the fault: the slow topic's write is retried after its heartbeat
// timeout and the run optimizes every topic.
func TestSlowTopicDoesNotStallTheRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const n = 9
	opts := ingest.Options{Sequence: "slow_run", Seed: 3}
	for i := range n {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("t/%d", i), Kind: ingest.IMU,
			Chunks: 1, RowsPerChunk: 50})
	}
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	var topics []snapshot
	for _, it := range ingested {
		topics = append(topics, e.snapshot(t, it.TopicID))
	}
	stored := e.storeContent(t)
	sup := superviseWorker(t, e, faults.WriteChunksBeforeWrite+"=sleep:10m*1")
	run, err := e.srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "slow-topic", TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{MaxChunkSizeBytes: suiteMaxChunk,
			HeartbeatTimeout: suiteHeartbeat, PageSize: 2, MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 2})
	if err != nil {
		t.Fatal(err)
	}
	e.lastRun = run.GetID()
	waitUntil(t, 2*time.Minute, "a topic's first output waits", func() bool { return sup.log.faultHit(faults.WriteChunksBeforeWrite) })

	optimized := func() (done []string, pending []string) {
		for _, s := range topics {
			tp, err := e.cat.Topic(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			if tp.OptimizedAt != nil {
				done = append(done, s.locator)
			} else {
				pending = append(pending, s.locator)
			}
		}
		return done, pending
	}
	waitUntil(t, 3*time.Minute, fmt.Sprintf("%d of the %d topics are optimized while one waits", n-1, n), func() bool {
		done, _ := optimized()
		return len(done) == n-1
	})
	_, pending := optimized()
	// The run learns of a commit when the topic's child completes, a moment after it.
	var p workflows.Progress
	waitUntil(t, time.Minute, "the run counts them", func() bool {
		var err error
		if p, err = app.QueryProgress(ctx, e.srv.Client, run.GetID()); err != nil {
			t.Fatal(err)
		}
		return p.Finished == n-1
	})
	if p.Queued != n || p.Finished != n-1 || p.Done != n-1 || p.InFlight != 1 ||
		len(p.InFlightLocators) != 1 || p.InFlightLocators[0] != pending[0] || p.Ended {
		t.Fatalf("run progress %+v with %v not optimized: want %d of %d finished and only %s in flight",
			p, pending, n-1, n, pending[0])
	}
	if st := e.workflowStatus(t, run.GetID()); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("run is %v while %s still writes", st, pending[0])
	}
	t.Logf("%d topics optimized while %s waited; progress %d of %d finished, in flight %v",
		n-1, pending[0], p.Finished, p.Queued, p.InFlightLocators)

	sup.killCurrent()
	res := waitRun(t, run)
	if res.Optimized != n || res.Failed != 0 || res.Skipped != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, n)
	}
	e.checkAllOptimized(t, topics, stored)
	saveHistory(t, e.srv.Client, run.GetID(), "store-optimizer-slow-topic")
}
