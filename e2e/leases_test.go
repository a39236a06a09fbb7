package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/workflows"
)

// Log lines of Lease (activities): a live holder's topic skipped, and a closed holder's output
// deleted after its lease was taken over.
const (
	logLeasedByLiveRun = "Topic skipped: leased by a live run"
	logDeletedPartial  = "Deleted partial output of an earlier run"
)

// TestOverlappingRunsNeverTakeOverALiveLease runs two, then three StoreOptimizerWorkflow runs
// at once with default options (tiny topics go in batches, leased under the run's own workflow
// ID) beside a topic workflow started by hand, over 200 tiny topics and two larger ones per
// round, on two worker processes. Nothing is terminated, so every holder of a lease is alive:
// no lease is taken over (no partial output deleted), no topic fails, every topic is optimized
// exactly once with its rows intact, every catalog chunk's object is in the store with its size,
// and nothing is left behind. The runs did overlap: some Lease found a topic held by a live run.
func TestOverlappingRunsNeverTakeOverALiveLease(t *testing.T) {
	e := newEnv(t)
	e.procEnv = []string{app.EnvLogLevel + "=info"} // Lease logs its skips and takeovers at info
	logs := &procLog{}
	startWorkerProc(t, e, "", logs)
	startWorkerProc(t, e, "", logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker processes' output:\n%s", logs.String())
		}
	})

	for round, runs := range []int{2, 3} {
		sequence := fmt.Sprintf("overlap_%d", round)
		topics := ingestOverlapTopics(t, e, sequence)
		stored := e.storeContent(t)
		before := map[int64]snapshot{}
		for _, it := range topics {
			before[it.TopicID] = e.snapshot(t, it.TopicID)
		}

		// The topic workflow started by hand holds the first larger topic's lease while the runs
		// start: the runs must skip it, not take it over.
		large := topics[len(topics)-1]
		byHand, err := e.srv.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID: "by-hand-" + sequence, TaskQueue: e.cfg.TaskQueue,
		}, workflows.OptimizeTopicWorkflow, workflows.OptimizeTopicInput{TopicID: large.TopicID, Locator: large.Locator})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, time.Minute, "the topic workflow started by hand holds its lease", func() bool {
			l, ok := e.leaseOf(t, large.TopicID)
			if ok {
				return l.Owner == byHand.GetID()
			}
			tp, err := e.cat.Topic(context.Background(), large.TopicID)
			return err == nil && tp.OptimizedAt != nil // already done: the runs will find nothing to do
		})

		results := make([]workflows.StoreOptimizerResult, runs)
		errs := make([]error, runs+1)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() { _, results[i], errs[i] = e.pass(app.PassOptions{}) })
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var res workflows.OptimizeTopicResult
			if err := byHand.Get(ctx, &res); err != nil {
				errs[runs] = fmt.Errorf("topic workflow started by hand: %w", err)
			}
			t.Logf("round %d: topic workflow started by hand: %+v", round, res)
		})
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		optimized, skipped := 0, 0
		for i, r := range results {
			t.Logf("round %d: run %d: optimized %d, skipped %d, failed %d", round, i+1, r.Optimized, r.Skipped, r.Failed)
			if r.Failed != 0 {
				t.Errorf("round %d: run %d failed %d topics: %+v", round, i+1, r.Failed, r.Failures)
			}
			optimized += r.Optimized
			skipped += r.Skipped
		}
		if skipped == 0 {
			t.Errorf("round %d: no run skipped a topic: the runs did not overlap, so this round proved nothing", round)
		}

		var ids []int64
		for _, it := range topics {
			s := before[it.TopicID]
			recs, err := e.cat.Optimizations(context.Background(), it.TopicID)
			if err != nil || len(recs) != 1 {
				t.Errorf("topic %s: %d optimizations (err %v), want exactly 1", it.Locator, len(recs), err)
				continue
			}
			e.checkOptimized(t, s, workflows.DefaultMaxChunkSizeBytes)
			ids = append(ids, it.TopicID)
		}
		e.checkChunkObjects(t)
		e.queueEmpty(t)
		e.checkStoreAfterRun(t, stored, ids)
	}

	out := logs.String()
	if n := strings.Count(out, logDeletedPartial); n != 0 {
		t.Errorf("%d %q lines: a live run's lease was taken over and its output deleted", n, logDeletedPartial)
	}
	if n := strings.Count(out, "Lease taken over from a closed run"); n != 0 {
		t.Errorf("%d leases taken over, though no run was closed while it held one", n)
	}
	n := strings.Count(out, logLeasedByLiveRun)
	t.Logf("%d %q lines", n, logLeasedByLiveRun)
	if n == 0 {
		t.Errorf("no Lease found a topic held by a live run: the runs did not contend for a lease")
	}
}

// ingestOverlapTopics ingests 200 tiny topics (batched by a run with default options) and two
// larger ones (a topic workflow each; the last one is the by-hand topic) under sequence.
func ingestOverlapTopics(t *testing.T, e *env, sequence string) []ingest.IngestedTopic {
	t.Helper()
	opts := ingest.Options{Sequence: sequence, Seed: 11}
	for i := range 200 {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("tiny/%03d", i), Kind: ingest.GPS,
			Chunks: 2, RowsPerChunk: 5, Overlap: 0.2})
	}
	for i := range 2 {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("large/%d", i), Kind: ingest.IMU,
			Chunks: 40, RowsPerChunk: 2000, Overlap: 0.1, UnsortedFraction: 0.1})
	}
	topics, err := ingest.Ingest(context.Background(), e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	larger, err := e.cat.Topic(context.Background(), topics[len(topics)-1].TopicID)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, c := range e.chunksOf(t, larger.ID) {
		bytes += c
	}
	if bytes <= workflows.DefaultBatchTopicBytes {
		t.Fatalf("the larger topic has %d bytes: a run would batch it (at most %d)", bytes, workflows.DefaultBatchTopicBytes)
	}
	return topics
}

// chunksOf returns the object sizes of the topic's catalog chunks.
func (e *env) chunksOf(t *testing.T, topicID int64) []int64 {
	t.Helper()
	chunks, err := e.cat.Chunks(context.Background(), topicID)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int64, len(chunks))
	for i, c := range chunks {
		sizes[i] = c.SizeBytes
	}
	return sizes
}

// checkChunkObjects checks that every chunk of every topic in the catalog is an object of the
// store with the size the catalog records.
func (e *env) checkChunkObjects(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	topics, err := e.cat.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		chunks, err := e.cat.Chunks(ctx, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			attrs, err := e.b.Attributes(ctx, c.ObjectKey)
			switch {
			case err != nil:
				t.Errorf("topic %s: chunk %s: %v", tp.Locator, c.ObjectKey, err)
			case attrs.Size != c.SizeBytes:
				t.Errorf("topic %s: chunk %s has %d bytes, the catalog says %d", tp.Locator, c.ObjectKey, attrs.Size, c.SizeBytes)
			}
		}
	}
}
