package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"gocloud.dev/blob/memblob"

	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/metrics/metricstest"
	"github.com/storeopt/storeopt/store"
)

var _ metrics.Recorder = metrics.Nop{}
var _ metrics.Recorder = (*metrics.Registry)(nil)

// serve starts a registry with a pool of poolBytes, served on a free port.
func serve(t *testing.T, poolBytes int64) (*metrics.Registry, *metrics.Server, *mempool.Pool) {
	t.Helper()
	reg := metrics.NewRegistry(func(err error) { t.Errorf("register: %v", err) })
	pool := mempool.New(poolBytes)
	reg.WatchPool(pool)
	srv, err := metrics.Listen("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
	})
	return reg, srv, pool
}

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestRegistryRecordsAndServes records one of everything and reads it back over HTTP.
func TestRegistryRecordsAndServes(t *testing.T) {
	reg, srv, pool := serve(t, 64<<20)
	reg.TopicOptimized(metrics.Optimization{Policy: "full", InputChunks: 10, OutputChunks: 2, Rows: 1000, InputBytes: 5000, OutputBytes: 4000})
	reg.TopicOptimized(metrics.Optimization{Policy: "full", InputChunks: 5, OutputChunks: 1, Rows: 500, InputBytes: 2500, OutputBytes: 2000})
	reg.TopicOptimized(metrics.Optimization{Policy: "tiered", InputChunks: 8, OutputChunks: 1, Rows: 80, InputBytes: 800, OutputBytes: 700})
	reg.TopicFailed("leveled", "StoreoptInputError")
	reg.TopicFailed("leveled", metrics.ErrorCanceled)
	reg.TopicSkipped("full", metrics.SkipAlreadyOptimized)
	reg.TopicQuarantined("leveled")
	reg.StepFinished(metrics.StepLease, 30*time.Millisecond, nil)
	reg.StepFinished(metrics.StepWriteChunks, 2*time.Second, nil)
	reg.StepFinished(metrics.StepWriteChunks, 3*time.Second, nil)
	reg.StepFinished(metrics.StepCommit, time.Second, errors.New("verification"))
	reg.CleanupDone(metrics.CleanupPrefixes, 3, 1)
	reg.CleanupDone(metrics.CleanupObjects, 42, 0)
	res, err := pool.Reserve(context.Background(), 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	buf := pool.Allocator().Allocate(1 << 20)
	defer pool.Allocator().Free(buf)

	s := metricstest.Scrape(t, srv.URL())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"storeopt_topics_optimized_total", labels("policy", "full"), 2},
		{"storeopt_topics_optimized_total", labels("policy", "tiered"), 1},
		{"storeopt_topics_optimized_total", labels("policy", "leveled"), 0}, // exists at 0 from the start
		{"storeopt_input_chunks_total", labels("policy", "full"), 15},
		{"storeopt_output_chunks_total", labels("policy", "full"), 3},
		{"storeopt_rows_total", labels("policy", "full"), 1500},
		{"storeopt_input_bytes_total", labels("policy", "full"), 7500},
		{"storeopt_output_bytes_total", labels("policy", "full"), 6000},
		{"storeopt_output_bytes_total", nil, 6700},
		{"storeopt_topics_failed_total", labels("policy", "leveled", "error_type", "StoreoptInputError"), 1},
		{"storeopt_topics_failed_total", labels("error_type", "canceled"), 1},
		{"storeopt_topics_skipped_total", labels("policy", "full", "reason", "already_optimized"), 1},
		{"storeopt_topics_skipped_total", labels("reason", "nothing_to_do"), 0},
		{"storeopt_topics_quarantined_total", labels("policy", "leveled"), 1},
		{"storeopt_step_duration_seconds_count", labels("step", "lease", "outcome", "ok"), 1},
		{"storeopt_step_duration_seconds_count", labels("step", "write-chunks", "outcome", "ok"), 2},
		{"storeopt_step_duration_seconds_sum", labels("step", "write-chunks"), 5},
		{"storeopt_step_duration_seconds_count", labels("step", "commit", "outcome", "error"), 1},
		{"storeopt_step_duration_seconds_count", labels("step", "read-sort"), 0},
		{"storeopt_cleanup_deleted_total", labels("kind", "prefixes"), 3},
		{"storeopt_cleanup_failed_total", labels("kind", "prefixes"), 1},
		{"storeopt_cleanup_deleted_total", labels("kind", "objects"), 42},
		{"storeopt_cleanup_deleted_total", labels("kind", "temp_files"), 0},
		{"storeopt_memory_pool_limit_bytes", nil, 64 << 20},
		{"storeopt_memory_pool_reserved_bytes", nil, 10 << 20},
	} {
		if got := s.Value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := s.Value(t, "storeopt_memory_pool_in_use_bytes", nil); got < 1<<20 {
		t.Errorf("memory pool in use %v bytes with a 1 MiB buffer allocated", got)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if !s.Has(name) {
			t.Errorf("no %s: Go and process collectors missing", name)
		}
	}
	for _, name := range reg.Names() {
		if !s.Has(name) {
			t.Errorf("registered metric %s is not in the scrape", name)
		}
	}
}

// TestStoreByteCounters: the store's process counters are served as they move.
func TestStoreByteCounters(t *testing.T) {
	_, srv, _ := serve(t, 0)
	b := memblob.OpenBucket(nil)
	defer b.Close()
	ctx := context.Background()
	before := metricstest.Scrape(t, srv.URL())
	if err := store.WriteAll(ctx, b, "tp_x/metadata.json", make([]byte, 1234), nil); err != nil {
		t.Fatal(err)
	}
	w, err := store.NewWriter(ctx, b, "tp_x/data/00000.parquet", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 4321)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenObject(ctx, b, "tp_x/data/00000.parquet"); err != nil {
		t.Fatal(err)
	}
	after := metricstest.Scrape(t, srv.URL())
	delta := func(name string) float64 {
		return after.Value(t, name, nil) - before.Value(t, name, nil)
	}
	if got := delta("storeopt_bytes_written_total"); got != 1234+4321 {
		t.Errorf("bytes written grew by %v, want %d", got, 1234+4321)
	}
	if got := delta("storeopt_bytes_read_total"); got != 4321 {
		t.Errorf("bytes read grew by %v, want 4321", got)
	}
}

// TestTemporalSDKMetricsShareTheRegistry: what the SDK reports through TemporalHandler is served
// on the same endpoint, with Prometheus names (counters _total, timers _seconds).
func TestTemporalSDKMetricsShareTheRegistry(t *testing.T) {
	reg, srv, _ := serve(t, 0)
	h := reg.TemporalHandler()
	if reg.TemporalHandler() != h {
		t.Fatal("TemporalHandler returned a second handler")
	}
	tagged := h.WithTags(map[string]string{"activity_type": "WriteChunks"})
	tagged.Counter("temporal_activity_execution_failed").Inc(3)
	tagged.Timer("temporal_activity_execution_latency").Record(1500 * time.Millisecond)
	h.Gauge("temporal_worker_task_slots_available").Update(7)
	deadline := time.Now().Add(10 * metrics.SDKReportInterval)
	for {
		s := metricstest.Scrape(t, srv.URL())
		got, ok := s.Sum("temporal_activity_execution_failed_total", labels("activity_type", "WriteChunks"))
		if ok && got == 3 {
			if n := s.Value(t, "temporal_activity_execution_latency_seconds_count", labels("activity_type", "WriteChunks")); n != 1 {
				t.Errorf("activity latency observations %v, want 1", n)
			}
			if v := s.Value(t, "temporal_worker_task_slots_available", nil); v != 7 {
				t.Errorf("task slots gauge %v, want 7", v)
			}
			if !s.Has("storeopt_topics_optimized_total") {
				t.Error("storeopt metrics missing next to the SDK's")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("SDK counter not served after %s: %v (found %v); families: %v", 10*metrics.SDKReportInterval, got, ok, s.Names())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestListenRefusesABusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = metrics.Listen(ln.Addr().String(), metrics.NewRegistry(nil), nil)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("listen on a busy address: %v, want an error naming it", err)
	}
}

// stepLog is a Recorder that keeps the steps it is told about.
type stepLog struct {
	metrics.Nop
	steps []string
}

func (l *stepLog) StepFinished(step string, d time.Duration, err error) {
	outcome := metrics.OutcomeOK
	if err != nil {
		outcome = metrics.OutcomeError
	}
	l.steps = append(l.steps, step+":"+outcome)
}

type fakeActivities struct{}

type fakeInput struct{ Topic string }

func (*fakeActivities) Lease(_ context.Context, in fakeInput) (string, error) {
	return "leased " + in.Topic, nil
}
func (*fakeActivities) Commit(context.Context) error        { return errors.New("mismatch") }
func (*fakeActivities) EnqueueTopics(context.Context) error { return nil }

// TestInterceptor: the interceptor times the data-path activities by step, errors included,
// leaves the others' durations alone, and hands every activity's input, result and error to the
// outcome.
func TestInterceptor(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	log := &stepLog{}
	var outcomes []string
	outcome := func(_ metrics.Recorder, in, res any, err error) {
		outcomes = append(outcomes, fmt.Sprintf("%v→%v/%v", in, res, err))
	}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{metrics.Interceptor(log, outcome)}})
	env.RegisterActivity(&fakeActivities{})
	if _, err := env.ExecuteActivity("Lease", fakeInput{Topic: "a/b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.ExecuteActivity("EnqueueTopics"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.ExecuteActivity("Commit"); err == nil {
		t.Fatal("Commit: no error")
	}
	if got, want := strings.Join(log.steps, " "), "lease:ok commit:error"; got != want {
		t.Fatalf("steps recorded %q, want %q", got, want)
	}
	if got, want := strings.Join(outcomes, " "), "{a/b}→leased a/b/<nil> <nil>→<nil>/<nil> <nil>→<nil>/mismatch"; got != want {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
}
