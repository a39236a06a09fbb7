package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// checkAllOptimized checks every snapshot's topic is optimized, the queue is empty and nothing
// but the new prefixes was added to the store.
func (e *env) checkAllOptimized(t *testing.T, topics []snapshot, stored storeContent) {
	t.Helper()
	var ids []int64
	for _, s := range topics {
		e.checkOptimized(t, s, suiteMaxChunk)
		ids = append(ids, s.id)
	}
	e.queueEmpty(t)
	e.checkStoreAfterRun(t, stored, ids)
}

// TestInfraStoreErrors runs on a worker whose object store fails its first reads and writes (the
// fault store: errors from the store calls themselves): the activities retry with backoff and
// the run optimizes every topic.
func TestInfraStoreErrors(t *testing.T) {
	e := newEnv(t)
	topics := e.ingestTopics(t, "store_errors", 0, 1, 2)
	stored := e.storeContent(t)
	const reads, writes = 4, 3
	sup := superviseWorker(t, e, fmt.Sprintf("%s=fail*%d;%s=fail*%d", faults.StoreRead, reads, faults.StoreWrite, writes))
	res := waitRun(t, e.startRun(t, "store-errors", suiteHeartbeat))
	if res.Optimized != len(topics) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(topics))
	}
	out := sup.log.String()
	if n := strings.Count(out, faults.LogPrefix+faults.StoreRead+"="); n != reads {
		t.Errorf("%d store reads failed, want %d", n, reads)
	}
	if n := strings.Count(out, faults.LogPrefix+faults.StoreWrite+"="); n != writes {
		t.Errorf("%d store writes failed, want %d", n, writes)
	}
	e.checkAllOptimized(t, topics, stored)
}

// TestInfraWorkerSIGTERM stops a worker process with SIGTERM while its WriteChunks activities
// run (slowed down by a sleep before each output): the worker lets them finish and exits cleanly
// (status 0) within its stop timeout, and the run completes on another worker.
func TestInfraWorkerSIGTERM(t *testing.T) {
	e := newEnv(t)
	topics := e.ingestTopics(t, "sigterm", 0, 1)
	stored := e.storeContent(t)
	log := &procLog{}
	w := startWorkerProc(t, e, faults.WriteChunksBeforeWrite+"=sleep:2s", log)
	run := e.startRun(t, "sigterm", 10*time.Second)
	waitUntil(t, time.Minute, "WriteChunks runs", func() bool { return log.faultHit(faults.WriteChunksBeforeWrite) })
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	sent := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(app.WorkerStopTimeout + 15*time.Second):
		t.Fatalf("worker still running %v after SIGTERM (stop timeout %v)", time.Since(sent), app.WorkerStopTimeout)
	}
	if w.err != nil {
		t.Errorf("worker exited with %v after SIGTERM, want status 0\n%s", w.err, log.String())
	}
	t.Logf("worker exited %v after SIGTERM", w.exited.Sub(sent).Round(time.Millisecond))
	res := waitRun(t, run)
	if res.Optimized != len(topics) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(topics))
	}
	e.checkAllOptimized(t, topics, stored)
}

// TestInfraPostgresRestart restarts the catalog's PostgreSQL server while a run writes chunks;
// the activities retry until the server is back and the run completes. The server is the
// test's own (pgtest.StartServer), so the restart disturbs no other test.
func TestInfraPostgresRestart(t *testing.T) {
	pg := pgtest.StartServer(t)
	t.Setenv("STOREOPT_TEST_DATABASE_URL", pg.URL) // newEnv's catalog database lives there
	e := newEnv(t)
	topics := e.ingestTopics(t, "pg_restart", 0, 1, 2)
	stored := e.storeContent(t)
	sup := superviseWorker(t, e, faults.WriteChunksBeforeWrite+"=sleep:1s")
	run := e.startRun(t, "pg-restart", 10*time.Second)
	waitUntil(t, time.Minute, "WriteChunks runs", func() bool { return sup.log.faultHit(faults.WriteChunksBeforeWrite) })
	if err := pg.Restart(); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
	if st := e.workflowStatus(t, run.GetID()); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("run is %v after the restart: the restart did not happen during the run", st)
	}
	t.Logf("PostgreSQL restarted")
	res := waitRun(t, run)
	if res.Optimized != len(topics) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(topics))
	}
	// The test's own pool may still hold connections to the old server process.
	waitUntil(t, 30*time.Second, "the test's catalog connects again", func() bool {
		return e.cat.Pool.Ping(context.Background()) == nil
	})
	e.cat.Pool.Reset()
	e.checkAllOptimized(t, topics, stored)
	if d := sup.restarts(); len(d) != 0 {
		t.Errorf("worker process died: %v", d)
	}
	t.Logf("the worker logged %d activity errors (retried)", strings.Count(sup.log.String(), `msg="Activity error."`))
}
