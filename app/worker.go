package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/uploads"
	"github.com/storeopt/storeopt/workflows"
)

// WorkerStopTimeout is how long a stopping worker waits for its running activities to finish
// before it abandons them; abandoned activities time out on the server and are retried on
// another worker (heartbeat timeouts make that quick).
const WorkerStopTimeout = 30 * time.Second

// RunWorker runs a storeopt worker until ctx is cancelled: it migrates and opens the catalog at
// cfg.DatabaseURL, opens the store at cfg.StoreURL, makes sure the StoreoptTopicLocator search
// attribute is registered in cfg.Namespace, registers StoreOptimizerWorkflow,
// OptimizeTopicWorkflow, CleanupWorkflow and the activities on cfg.TaskQueue and polls. On cancellation it stops
// the worker gracefully (WorkerStopTimeout) and closes the catalog and the store. It returns nil
// after a cancellation, or the first setup error or fatal worker error (URLs redacted).
// WithMetrics makes the activities record storeopt's metrics (topics, steps, cleanup) and the
// memory pool's gauges into the given metrics (whose registry c should report to: Dial with the
// same option).
func RunWorker(ctx context.Context, cfg Config, c client.Client, logger *slog.Logger, options ...Option) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("task_queue", cfg.TaskQueue, "namespace", cfg.Namespace)

	if err := catalog.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("migrate catalog: %w", err)
	}
	cat, err := catalog.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer cat.Close()
	if err := cat.SetWriteThresholds(ctx, cfg.writeSignal()); err != nil {
		return err
	}
	if err := CheckStoreExists(cfg.StoreURL); err != nil {
		return err
	}
	bucket, err := OpenStore(ctx, cfg.StoreURL)
	if err != nil {
		return err
	}
	defer func() {
		if err := bucket.Close(); err != nil {
			logger.Warn("close store", "store", RedactURL(cfg.StoreURL), "error", err)
		}
	}()
	if err := checkStoreReachable(ctx, bucket, cfg.StoreURL); err != nil {
		return err
	}
	unfinished, err := uploads.Open(bucket, cfg.StoreURL)
	if err != nil {
		return err
	}
	if err := EnsureSearchAttributes(ctx, c, cfg.Namespace); err != nil {
		return err
	}

	opts := applyOptions(options)
	pool := mempool.New(cfg.MemoryPoolBytes)
	var interceptors []interceptor.WorkerInterceptor
	if opts.metrics != nil {
		opts.metrics.Registry.WatchPool(pool)
		opts.metrics.Registry.WatchDebt(cat.DebtTotals, func(err error) {
			logger.Warn("Compaction debt not measured", "error", err)
		})
		interceptors = append(interceptors, metrics.Interceptor(opts.recorder(), activities.RecordOutcome))
	}

	fatal := make(chan error, 1)
	w := worker.New(c, cfg.TaskQueue, worker.Options{
		Interceptors:                       interceptors,
		MaxConcurrentActivityExecutionSize: cfg.MaxConcurrentActivities,
		WorkerStopTimeout:                  WorkerStopTimeout,
		OnFatalError: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
	})
	w.RegisterWorkflow(workflows.StoreOptimizerWorkflow)
	w.RegisterWorkflow(workflows.OptimizeTopicWorkflow)
	w.RegisterWorkflow(workflows.CleanupWorkflow)
	w.RegisterActivity(&activities.Activities{
		Catalog:         cat,
		Bucket:          bucket,
		StoreURL:        cfg.StoreURL,
		Uploads:         unfinished,
		MemoryPoolBytes: cfg.MemoryPoolBytes,
		MemoryPool:      pool,
		QuarantineAfter: cfg.QuarantineAfter,
		Metrics:         opts.recorder(),
		Runs:            TemporalRuns{Client: c},
	})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %s: %w", cfg.TaskQueue, err)
	}
	logger.Info("worker started", "temporal", cfg.TemporalAddress, "temporal_connection", cfg.temporalTLS(),
		"database", RedactURL(cfg.DatabaseURL), "store", RedactURL(cfg.StoreURL),
		"memory_pool_bytes", cfg.MemoryPoolBytes, "max_concurrent_activities", cfg.MaxConcurrentActivities,
		"quarantine_after", cmp.Or(cfg.QuarantineAfter, catalog.DefaultQuarantineAfter),
		"metrics", opts.metrics.URL())

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("stopping worker: running activities get up to "+WorkerStopTimeout.String()+" to finish",
			"cause", context.Cause(ctx))
	case runErr = <-fatal:
		runErr = fmt.Errorf("worker on task queue %s stopped: %w", cfg.TaskQueue, runErr)
	}
	w.Stop()
	logger.Info("worker stopped")
	return runErr
}

// EnsureSearchAttributes registers workflows.TopicLocatorSearchAttribute (Keyword) in namespace
// when it is missing. A server that refuses the registration (no permission, or the name taken
// with another type) gives an error that says how to register it by hand.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	name := workflows.TopicLocatorSearchAttribute
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	if t, ok := list.GetCustomAttributes()[name]; ok {
		if t != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			return fmt.Errorf("search attribute %s is registered as %s, storeopt needs Keyword", name, t)
		}
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: map[string]enumspb.IndexedValueType{name: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	if err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("register search attribute %s (Keyword) in namespace %s: %w; register it by hand: "+
			"temporal operator search-attribute create --namespace %s --name %s --type Keyword",
			name, namespace, err, namespace, name)
	}
	return nil
}

func isAlreadyExists(err error) bool {
	var ae *serviceerror.AlreadyExists
	return errors.As(err, &ae)
}
