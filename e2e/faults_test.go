package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// buildWorker builds the worker command with fault injection compiled in, once per test binary.
var buildWorker = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "storeopt-worker-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "worker")
	cmd := exec.Command("go", "build", "-tags", "storeopt_faults", "-o", bin, "./worker")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// startWorkerProcess runs the worker command against e with the given STOREOPT_FAULTS.
func (e *env) startWorkerProcess(t *testing.T, faultSpec string) *exec.Cmd {
	t.Helper()
	bin, err := buildWorker()
	if err != nil {
		t.Fatalf("build worker: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		app.EnvTemporalAddress+"="+e.cfg.TemporalAddress,
		app.EnvDatabaseURL+"="+e.cfg.DatabaseURL,
		app.EnvStoreURL+"="+e.cfg.StoreURL,
		app.EnvLogLevel+"=warn",
		faults.EnvVar+"="+faultSpec)
	log := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) { mu.Lock(); log.Write(p); mu.Unlock() })
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("worker process output:\n%s", log.String())
			mu.Unlock()
		}
	})
	return cmd
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// TestWorkerKilledDuringWriteChunks kills the worker process right after it uploads an output
// chunk (before staging it); a new worker takes over once the heartbeat times out and the run
// completes with correct output.
func TestWorkerKilledDuringWriteChunks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts, err := ingest.Preset("test", 2)
	if err != nil {
		t.Fatal(err)
	}
	opts.Topics = opts.Topics[:1] // IMU: 20 chunks
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t, ingested[0].TopicID)

	worker := e.startWorkerProcess(t, faults.WriteChunksAfterWrite+"=kill")
	const maxChunk = 32 << 10
	run, err := e.srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "storeopt-run-kill", TaskQueue: workflows.TaskQueue,
	}, workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{
		MaxChunkSizeBytes: maxChunk, HeartbeatTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("worker exited with %v, want killed by the injected fault", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("worker was not killed at write-chunks.after-object")
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var res workflows.StoreOptimizerResult
	if err := run.Get(wctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run result %+v, want 1 optimized", res)
	}
	e.checkOptimized(t, before, maxChunk)
	e.queueEmpty(t)
}

// TestBoundaryFaultFailsTheTopic runs a pass with an off-by-one injected at a key range boundary
// of the merge (faults.MergeShiftRange, acting in the in-process worker): one output takes its
// range one row early from one input chunk, so a row is written twice and another not at all
// while every row count and per-output digest agrees. The commit refuses it: the run reports
// the topic failed with the input chunk the fault acted on, the topic is left exactly as it was
// and the run left nothing in the store.
func TestBoundaryFaultFailsTheTopic(t *testing.T) {
	e := newEnv(t)
	s := e.ingestTopics(t, "boundary", 0)[0]
	before := e.recordTopic(t, s.id)
	stored := e.storeContent(t)
	keyOf := map[string]string{}
	for _, c := range before.chunks {
		keyOf[fmt.Sprint(c.ID)] = c.ObjectKey
	}
	t.Setenv(faults.EnvVar, faults.MergeShiftRange+"=on*1")
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 8 << 10})
	acted := faults.ActedOn(faults.MergeShiftRange)
	if len(acted) != 1 {
		t.Fatalf("fault %s acted on chunks %v, want exactly one", faults.MergeShiftRange, acted)
	}
	failures := failuresByLocator(t, res)
	msg, failed := failures[s.locator]
	if res.Optimized != 0 || res.Failed != 1 || !failed {
		t.Fatalf("run result %+v, want topic %s failed", res, s.locator)
	}
	want := "verification failed: input chunk " + keyOf[acted[0]] + ": "
	if !strings.Contains(msg, want) || !strings.Contains(msg, "not each of its rows") {
		t.Fatalf("failure %q does not say %q and which rows", msg, want)
	}
	t.Logf("reported: %s", msg)
	e.checkUntouched(t, before)
	e.checkStoreAfterRun(t, stored, nil)
}
