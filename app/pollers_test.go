package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// TestWatchWorkersWarnsWhileNoWorkerPolls: a waiting starter warns while its task queue has no
// worker, and stops warning once one polls.
func TestWatchWorkersWarnsWhileNoWorkerPolls(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, storeURL := testenv.NewBucket(t)
	cfg := srv.Config(pgtest.NewDatabase(t), storeURL)
	cfg.TaskQueue = "pollers-test"

	var warnings atomic.Int64
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.WatchWorkers(watchCtx, srv.Client, cfg.TaskQueue, 50*time.Millisecond, func() { warnings.Add(1) })
	}()
	for warnings.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("no warning while no worker polls")
		}
		time.Sleep(20 * time.Millisecond)
	}

	testenv.StartWorker(t, srv.Client, cfg)
	for {
		ok, err := app.HasWorkers(ctx, srv.Client, cfg.TaskQueue)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the server never saw the worker poll")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a check that began before the worker polled has ended
	before := warnings.Load()
	time.Sleep(500 * time.Millisecond) // ten checks
	if after := warnings.Load(); after != before {
		t.Errorf("%d warnings while a worker polls", after-before)
	}
	stop()
	<-done
}
