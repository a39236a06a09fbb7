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

// TestSlowTopicDoesNotStallTheRun: one topic of a run is slow — its output chunk, over a MiB,
// waits ten minutes in its upload (fault write-chunks.uploading, which only outputs over a MiB
// reach), as a large topic's long write would — among 8 tiny one-chunk topics, listed in pages
// of 2. Every tiny topic, of every later page, is optimized (in batches) while the slow one is
// still in its first WriteChunks attempt: the catalog has switched them all, the run's progress
// query shows the slow topic as the only one in flight and the run still running. (A run that
// waited for each page's children before listing the next page would hold here with at most one
// other topic optimized.) Then the worker is killed and replaced by one without the fault: the
// slow topic's write is retried after its heartbeat timeout and the run optimizes every topic.
func TestSlowTopicDoesNotStallTheRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const n = 9
	opts := ingest.Options{Sequence: "slow_run", Seed: 3,
		Topics: []ingest.TopicSpec{{Path: "big", Kind: ingest.IMU, Chunks: 1, RowsPerChunk: 40_000}}}
	for i := 1; i < n; i++ {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("t/%d", i), Kind: ingest.IMU,
			Chunks: 1, RowsPerChunk: 50})
	}
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if ingested[0].Bytes <= 2<<20 || ingested[1].Bytes >= workflows.DefaultBatchTopicBytes {
		t.Fatalf("topic sizes %d and %d bytes: want the slow topic over 2 MiB and the others tiny", ingested[0].Bytes, ingested[1].Bytes)
	}
	var topics []snapshot
	for _, it := range ingested {
		topics = append(topics, e.snapshot(t, it.TopicID))
	}
	slow := topics[0].locator
	stored := e.storeContent(t)
	sup := superviseWorker(t, e, faults.WriteChunksUploading+"=sleep:10m*1")
	run, err := e.srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "slow-topic", TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{MaxChunkSizeBytes: 64 << 20,
			HeartbeatTimeout: time.Minute, PageSize: 2, MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 2})
	if err != nil {
		t.Fatal(err)
	}
	e.lastRun = run.GetID()
	waitUntil(t, 2*time.Minute, "the slow topic's upload waits", func() bool { return sup.log.faultHit(faults.WriteChunksUploading) })

	optimized := func() (done, pending []string) {
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
	waitUntil(t, 3*time.Minute, fmt.Sprintf("the %d tiny topics are optimized while %s waits", n-1, slow), func() bool {
		done, _ := optimized()
		return len(done) == n-1
	})
	if _, pending := optimized(); len(pending) != 1 || pending[0] != slow {
		t.Fatalf("topics not optimized: %v, want only %s", pending, slow)
	}
	// The run learns of a commit when the batch (or child) completes, a moment after it.
	var p workflows.Progress
	waitUntil(t, time.Minute, "the run counts them", func() bool {
		var err error
		if p, err = app.QueryProgress(ctx, e.srv.Client, run.GetID()); err != nil {
			t.Fatal(err)
		}
		return p.Finished == n-1
	})
	if p.Queued != n || p.Done != n-1 || p.InFlight != 1 || len(p.InFlightLocators) != 1 ||
		p.InFlightLocators[0] != slow || p.Ended {
		t.Fatalf("run progress %+v: want %d of %d finished and only %s in flight", p, n-1, n, slow)
	}
	if st := e.workflowStatus(t, run.GetID()); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("run is %v while %s still writes", st, slow)
	}
	// Still the first attempt of the slow topic's write: it was writing all along.
	desc, err := e.srv.Client.DescribeWorkflowExecution(ctx, workflows.TopicWorkflowID(e.cfg.TaskQueue, slow), "")
	if err != nil {
		t.Fatal(err)
	}
	pending := desc.GetPendingActivities()
	if len(pending) != 1 || pending[0].GetActivityType().GetName() != "WriteChunks" || pending[0].GetAttempt() != 1 {
		t.Fatalf("pending activities of %s: %v, want its first WriteChunks attempt", slow, pending)
	}
	t.Logf("%d tiny topics optimized while %s waited in its upload; progress %d of %d finished, in flight %v",
		n-1, slow, p.Finished, p.Queued, p.InFlightLocators)

	sup.killCurrent()
	res := waitRun(t, run)
	if res.Optimized != n || res.Failed != 0 || res.Skipped != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, n)
	}
	var ids []int64
	for _, s := range topics {
		e.checkOptimized(t, s, 64<<20)
		ids = append(ids, s.id)
	}
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, ids)
	saveHistory(t, e.srv.Client, run.GetID(), "store-optimizer-slow-topic")
}
