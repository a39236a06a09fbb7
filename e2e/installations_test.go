package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// TestTwoInstallationsOnOneNamespace: two storeopt installations, each with its own catalog
// database, store and task queue, share one Temporal dev server (one namespace) and hold topics
// with the same locators. While installation A's run has a topic workflow inside Lease for each
// of its topics (a sleep fault in A's worker holds them open), a run of installation B
// optimizes every topic of B, none skipped; then A's run optimizes every topic of A, none
// skipped. A topic workflow ID holds its installation's task queue, so neither run finds the
// other's topic workflow under its own topic's ID.
func TestTwoInstallationsOnOneNamespace(t *testing.T) {
	srv := testenv.StartDevServer(t)
	a := newIsolatedEnv(t, srv, "storeopt-site-a")
	b := newIsolatedEnv(t, srv, "storeopt-site-b")
	ctx := context.Background()
	locators := []string{"site/imu", "site/gps", "site/odom"}
	before := map[*env][]snapshot{}
	for _, e := range []*env{a, b} {
		for _, l := range locators {
			id := makeTopic(t, e.cat, e.b, l, [][]handRow{rowsAt(5, 1, 3), rowsAt(2, 4), rowsAt(6, 0)})
			before[e] = append(before[e], e.snapshot(t, id))
		}
	}
	// Topic workflows (not batches): they are what holds a workflow ID per topic.
	opts := app.PassOptions{BatchTopics: 1}

	// A's worker sleeps after each topic's lease, so A's topic workflows stay open.
	aLog := &procLog{}
	startWorkerProc(t, a, faults.LeaseAfter+"=sleep:45s*3", aLog)
	aRun, err := app.StartPass(ctx, srv.Client, a.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	hit := faults.LogPrefix + faults.LeaseAfter + "="
	for deadline := time.Now().Add(3 * time.Minute); strings.Count(aLog.String(), hit) < len(locators); {
		if time.Now().After(deadline) {
			t.Fatalf("installation A's topics did not all reach their lease; worker log:\n%s", aLog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range locators {
		desc, err := srv.Client.DescribeWorkflowExecution(ctx, workflows.TopicWorkflowID(a.cfg.TaskQueue, l), "")
		if err != nil || desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("installation A's topic workflow of %s is not running: %v, %v", l, desc, err)
		}
	}

	testenv.StartWorker(t, srv.Client, b.cfg)
	_, bRes, err := b.pass(opts)
	if err != nil {
		t.Fatal(err)
	}
	if bRes.Optimized != len(locators) || bRes.Skipped != 0 || bRes.Failed != 0 {
		t.Fatalf("installation B's run, while A's optimizes the same locators: %+v; want %d optimized, none skipped",
			bRes, len(locators))
	}
	aRes, err := app.WaitPass(ctx, aRun)
	if err != nil {
		t.Fatal(err)
	}
	if aRes.Optimized != len(locators) || aRes.Skipped != 0 || aRes.Failed != 0 {
		t.Fatalf("installation A's run: %+v; want %d optimized, none skipped", aRes, len(locators))
	}
	for _, e := range []*env{a, b} {
		for _, s := range before[e] {
			e.checkOptimized(t, s, app.DefaultMaxChunkSizeBytes)
		}
		e.queueEmpty(t)
	}
}
