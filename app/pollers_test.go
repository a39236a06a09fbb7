package app_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// checks records what WatchWorkers reported, in order.
type checks struct {
	mu      sync.Mutex
	polling []bool
}

func (c *checks) report(polling bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.polling = append(c.polling, polling)
}

func (c *checks) get() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.polling)
}

// waitFor polls cond every 20 ms until it holds; the test fails when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchWorkersWarnsWhileNoWorkerPolls: a waiting starter's checks report no worker (the
// starter warns) while its task queue has none, and once a worker polls every later check sees
// it: the test waits for five such checks, so a watcher that stopped checking fails it.
func TestWatchWorkersWarnsWhileNoWorkerPolls(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, storeURL := testenv.NewBucket(t)
	cfg := srv.Config(pgtest.NewDatabase(t), storeURL)
	cfg.TaskQueue = "pollers-test"

	var c checks
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.WatchWorkers(watchCtx, srv.Client, cfg.TaskQueue, 50*time.Millisecond, c.report)
	}()
	waitFor(ctx, t, "a check reports that no worker polls", func() bool { return len(c.get()) > 0 })
	if got := c.get(); slices.Contains(got, true) {
		t.Fatalf("checks %v report a worker before any was started", got)
	}

	testenv.StartWorker(t, srv.Client, cfg)
	const seen = 5
	waitFor(ctx, t, "five checks see the worker", func() bool {
		got := c.get()
		first := slices.Index(got, true)
		return first >= 0 && len(got)-first >= seen
	})
	got := c.get()
	if first := slices.Index(got, true); slices.Contains(got[first:], false) {
		t.Errorf("checks %v: a check found no worker after one had seen it poll (the starter would warn)", got)
	}
	stop()
	<-done
}
