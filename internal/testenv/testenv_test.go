package testenv_test

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/metrics/metricstest"
	"github.com/storeopt/storeopt/workflows"
)

// TestDevServerAndWorker proves the helpers against the real parts: the dev server registers the
// topic-locator search attribute, and a worker on a real catalog and file store polls the task
// queue and stops cleanly when asked.
func TestDevServerAndWorker(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	attrs, err := srv.Client.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatalf("list search attributes: %v", err)
	}
	if got := attrs.GetCustomAttributes()[workflows.TopicLocatorSearchAttribute]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute %s: type %v, want Keyword", workflows.TopicLocatorSearchAttribute, got)
	}

	_, storeURL := testenv.NewBucket(t)
	cfg := srv.Config(pgtest.NewDatabase(t), storeURL)
	stop := testenv.StartWorker(t, srv.Client, cfg)

	waitForPoller(ctx, t, srv.Client, cfg.TaskQueue)
	if err := stop(); err != nil {
		t.Fatalf("worker stopped with error: %v", err)
	}
}

// waitForPoller waits until the task queue has a workflow poller (the worker is running).
func waitForPoller(ctx context.Context, t *testing.T, c client.Client, queue string) {
	t.Helper()
	for {
		resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(resp.GetPollers()) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no worker polls task queue %s (last error: %v)", queue, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestWorkerWithMetrics: a worker started with metrics serves storeopt's metrics (the memory
// pool's limit is the configured pool) and the Temporal SDK's (its pollers) on one endpoint, and
// the endpoint closes with the worker.
func TestWorkerWithMetrics(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, storeURL := testenv.NewBucket(t)
	cfg := srv.Config(pgtest.NewDatabase(t), storeURL)
	cfg.MemoryPoolBytes = 64 << 20
	url, stop := testenv.StartWorkerWithMetrics(t, cfg)
	waitForPoller(ctx, t, srv.Client, cfg.TaskQueue)

	for {
		s := metricstest.Scrape(t, url)
		if got := s.Value(t, "storeopt_memory_pool_limit_bytes", nil); got != 64<<20 {
			t.Fatalf("memory pool limit %v, want %d", got, 64<<20)
		}
		pollers, ok := s.Sum("temporal_num_pollers", map[string]string{"task_queue": cfg.TaskQueue})
		if ok && pollers > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no temporal_num_pollers for task queue %s in the metrics; families: %v", cfg.TaskQueue, s.Names())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("worker stopped with error: %v", err)
	}
}
