package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// TestPanicInGoroutineFailsOnlyItsActivity panics once inside each kind of goroutine that an
// activity starts (faults.GoroutinePoints: ReadSort's scan, WriteChunks' reader and merger, its
// encoder) in a real worker process that optimizes two topics at once. The panic must fail only
// the activity it happened in: the worker process keeps running (it is never restarted), the
// topic of that activity fails with a non-retryable internal error naming the topic and the
// goroutine and is left exactly as it was, the other topic is optimized by the same process, and
// the stack is in the worker log.
func TestPanicInGoroutineFailsOnlyItsActivity(t *testing.T) {
	srv := testenv.StartDevServer(t)
	if _, err := buildWorker(); err != nil {
		t.Fatalf("build worker: %v", err)
	}
	where := map[string]string{
		faults.ReadSortScan:      "panic in read-sort scan",
		faults.WriteChunksMerge:  "panic in reader and merger of ",
		faults.WriteChunksEncode: "panic in encoder of ",
	}
	for i, point := range faults.GoroutinePoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			e := newIsolatedEnv(t, srv, fmt.Sprintf("panic-%02d", i))
			opts := testPreset(t)
			opts.Sequence = fmt.Sprintf("panic_%02d", i)
			imu := opts.Topics[0]
			other := imu
			other.Path += "_2"
			opts.Topics = []ingest.TopicSpec{imu, other}
			ingested := e.ingest(t, opts)
			snaps := map[string]snapshot{}
			records := map[string]topicRecord{}
			for _, tp := range ingested {
				snaps[tp.Locator] = e.snapshot(t, tp.TopicID)
				records[tp.Locator] = e.recordTopic(t, tp.TopicID)
			}
			stored := e.storeContent(t)

			sup := superviseWorker(t, e, point+"=panic*1")
			res := e.runWithHeartbeat(t, fmt.Sprintf("panic-%02d", i), suiteHeartbeat, workflows.StoreOptimizerInput{})

			if !sup.log.faultHit(point) {
				t.Fatalf("fault %s=panic never acted", point)
			}
			if deaths := sup.restarts(); len(deaths) > 0 {
				t.Fatalf("the panic ended the worker process (%v)", deaths)
			}
			if res.Optimized != 1 || res.Failed != 1 || len(res.Failures) != 1 {
				t.Fatalf("run result %+v, want 1 optimized and 1 failed", res)
			}
			f := res.Failures[0]
			for _, want := range []string{"topic " + f.Locator, "internal error", where[point],
				"injected panic at " + point} {
				if !strings.Contains(f.Error, want) {
					t.Errorf("failure of %s does not say %q: %s", f.Locator, want, f.Error)
				}
			}
			t.Logf("reported: %s", f.Error)
			log := sup.log.String()
			if !strings.Contains(log, "Internal error: a goroutine of the activity panicked") ||
				!strings.Contains(log, "faults.Hit") {
				t.Errorf("worker log has no stack of the panic")
			}
			e.checkUntouched(t, records[f.Locator])
			var good []int64
			for loc, s := range snaps {
				if loc != f.Locator {
					e.checkOptimized(t, s, suiteMaxChunk)
					good = append(good, s.id)
				}
			}
			e.queueEmpty(t)
			e.checkStoreAfterRun(t, stored, good)
		})
	}
}
