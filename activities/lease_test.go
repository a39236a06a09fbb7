package activities_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
)

// fakeRuns is an activities.Runs that knows which runs are open; before answering for a run it
// calls before (if set), which lets a test change the lease between the moment Lease reads the
// holder and the moment it acts.
type fakeRuns struct {
	mu     sync.Mutex
	open   map[string]bool // run ID → open; a run it does not know is gone
	asked  []string
	before func(runID string)
}

func (f *fakeRuns) RunOpen(_ context.Context, _, runID string) (bool, error) {
	f.mu.Lock()
	f.asked = append(f.asked, runID)
	before := f.before
	f.mu.Unlock()
	if before != nil {
		before(runID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open[runID], nil
}

func (f *fakeRuns) set(runID string, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open[runID] = open
}

// holderWrites leases the topic for run token (owner "storeopt-optimizer") and writes its whole
// plan under its fresh prefix, uncommitted, as a run in the middle of its optimization has; it
// returns that prefix.
func holderWrites(t *testing.T, a *activities.Activities, topicID int64, token string) string {
	t.Helper()
	if _, err := optimizeTopic(a, topicID, token, 64<<10, 1); err != nil {
		t.Fatal(err)
	}
	l, err := a.Catalog.LeaseOf(context.Background(), topicID)
	if err != nil || l.FencingToken != token {
		t.Fatalf("lease after %s wrote: %+v, %v", token, l, err)
	}
	if len(objectsUnder(t, a.Bucket, l.FreshPrefix)) == 0 {
		t.Fatalf("run %s wrote nothing under %s", token, l.FreshPrefix)
	}
	return l.FreshPrefix
}

// TestLeaseTakesOverOnlyFromAClosedRun: another run's Lease on a topic whose holder is open (a
// pass beside this one, a batch, a topic workflow started by hand) takes nothing and deletes
// nothing, whether it is a topic workflow's Lease, a batch's, or one with no Runs to ask; once
// the holder's run is closed the lease is taken over and exactly the holder's fresh prefix is
// deleted (neither the topic's data nor the output of the run before it, already deleted).
func TestLeaseTakesOverOnlyFromAClosedRun(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 6, RowsPerChunk: 200}})
	ctx := context.Background()
	id := ts[0].TopicID
	topic, err := a.Catalog.Topic(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	data := len(objectsUnder(t, a.Bucket, topic.DataPrefix))
	runs := &fakeRuns{open: map[string]bool{}}
	a.Runs = runs

	// run-G wrote half an optimization and was terminated; run-H (open) takes it over.
	earlier := holderWrites(t, a, id, "run-G")
	holder := holderWrites(t, a, id, "run-H")
	runs.set("run-H", true)
	if n := len(objectsUnder(t, a.Bucket, earlier)); n != 0 {
		t.Fatalf("run-G's prefix %s still has %d objects after run-H took its lease over", earlier, n)
	}
	held := len(objectsUnder(t, a.Bucket, holder))
	before, _ := a.Catalog.LeaseOf(ctx, id)

	other := activities.WithRun(ctx, "storeopt-topic:acts/imu", "run-T")
	for _, tc := range []struct {
		name string
		runs activities.Runs
		in   activities.LeaseInput
	}{
		{"topic workflow started by hand", runs, activities.LeaseInput{TopicID: id}},
		{"topic workflow of a run", runs, activities.LeaseInput{TopicID: id, SkipIfOptimized: true}},
		{"no Runs to ask", nil, activities.LeaseInput{TopicID: id}},
	} {
		a.Runs = tc.runs
		l, err := a.Lease(other, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !l.Leased || l.Holder == nil || l.Holder.RunID != "run-H" || l.Holder.WorkflowID != "test-owner" || l.FreshPrefix != "" {
			t.Fatalf("%s: lease %+v, want Leased by run-H of test-owner and no fresh prefix", tc.name, l)
		}
	}
	a.Runs = runs
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	enc, err := env.ExecuteActivity(a.OptimizeSmallTopics,
		activities.OptimizeSmallTopicsInput{Topics: []activities.SmallTopic{{TopicID: id, Locator: topic.Locator}}})
	if err != nil {
		t.Fatal(err)
	}
	var batch activities.OptimizeSmallTopicsResult
	if err := enc.Get(&batch); err != nil {
		t.Fatal(err)
	}
	if got := batch.Topics[0].Outcome; got != activities.OutcomeSkipped {
		t.Fatalf("batch outcome of a topic a live run holds: %q (%+v), want %q", got, batch.Topics[0], activities.OutcomeSkipped)
	}
	if after, err := a.Catalog.LeaseOf(ctx, id); err != nil || after != before {
		t.Fatalf("the live holder's lease changed: %+v (err %v), was %+v", after, err, before)
	}
	if n := len(objectsUnder(t, a.Bucket, holder)); n != held {
		t.Fatalf("the live holder's prefix %s has %d objects, had %d", holder, n, held)
	}

	// run-H's run closes (terminated): it is gone, its lease is taken over.
	runs.set("run-H", false)
	l, err := a.Lease(other, activities.LeaseInput{TopicID: id})
	if err != nil {
		t.Fatal(err)
	}
	if l.Leased || l.FreshPrefix == "" || l.FreshPrefix == holder {
		t.Fatalf("lease from a closed holder: %+v, want a fresh lease", l)
	}
	if n := len(objectsUnder(t, a.Bucket, holder)); n != 0 {
		t.Fatalf("the closed holder's prefix %s still has %d objects", holder, n)
	}
	if n := len(objectsUnder(t, a.Bucket, topic.DataPrefix)); n != data {
		t.Fatalf("the topic's data prefix has %d objects, had %d", n, data)
	}
	// The takeover dropped run-H's plan: its zombie commit is refused.
	if _, err := a.Commit(activities.WithRun(ctx, "test-owner", "run-H"), activities.CommitInput{TopicID: id}); err == nil {
		t.Fatal("the closed holder's commit succeeded after the takeover")
	}
}

// TestLeaseActsOnlyOnTheLeaseItTakesOver: the lease changes hands between the moment Lease reads
// its holder (run-H, whose run is closed) and the takeover: run-H's zombie releases it and run-L,
// open, leases the topic and writes. Lease must not act on what it read: the takeover from run-H
// fails, Lease decides again, finds run-L open, and leaves run-L's lease and output alone.
func TestLeaseActsOnlyOnTheLeaseItTakesOver(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 6, RowsPerChunk: 200}})
	ctx := context.Background()
	id := ts[0].TopicID
	runs := &fakeRuns{open: map[string]bool{"run-L": true}}
	a.Runs = runs
	holderWrites(t, a, id, "run-H")

	var live string
	var once sync.Once
	runs.before = func(runID string) {
		if runID != "run-H" {
			return
		}
		once.Do(func() {
			// The zombie gives the lease back; run-L leases the topic and writes its output.
			rctx := activities.WithRun(ctx, "test-owner", "run-H")
			if _, err := a.Release(rctx, activities.ReleaseInput{TopicID: id, Reason: "zombie"}); err != nil {
				t.Error(err)
			}
			live = holderWrites(t, a, id, "run-L")
		})
	}
	l, err := a.Lease(activities.WithRun(ctx, "storeopt-optimizer", "run-T"), activities.LeaseInput{TopicID: id, SkipIfOptimized: true})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Leased || l.Holder == nil || l.Holder.RunID != "run-L" {
		t.Fatalf("lease: %+v (runs asked %v), want Leased by run-L", l, runs.asked)
	}
	cur, err := a.Catalog.LeaseOf(ctx, id)
	if err != nil || cur.FencingToken != "run-L" || cur.FreshPrefix != live {
		t.Fatalf("run-L's lease changed: %+v (err %v)", cur, err)
	}
	if len(objectsUnder(t, a.Bucket, live)) == 0 {
		t.Fatalf("run-L's output under %s was deleted", live)
	}
	if _, err := a.Commit(activities.WithRun(ctx, "test-owner", "run-L"), activities.CommitInput{TopicID: id}); err != nil {
		t.Fatalf("run-L's commit: %v", err)
	}
}

// TestLeaseRetriesWhenTemporalCannotTell: an error asking whether the holder is open is returned
// (Temporal retries the activity) and changes nothing.
func TestLeaseRetriesWhenTemporalCannotTell(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 2, RowsPerChunk: 50}})
	ctx := context.Background()
	id := ts[0].TopicID
	holder := holderWrites(t, a, id, "run-H")
	a.Runs = failingRuns{}
	_, err := a.Lease(activities.WithRun(ctx, "o", "run-T"), activities.LeaseInput{TopicID: id})
	if err == nil || !errors.Is(err, errUnreachable) {
		t.Fatalf("lease: %v, want the Runs error", err)
	}
	if cur, err := a.Catalog.LeaseOf(ctx, id); err != nil || cur.FencingToken != "run-H" {
		t.Fatalf("lease changed: %+v, %v", cur, err)
	}
	if len(objectsUnder(t, a.Bucket, holder)) == 0 {
		t.Fatal("the holder's output was deleted")
	}
	var held *catalog.LeasedError
	if errors.As(err, &held) {
		t.Fatalf("the error %v is a LeasedError: Lease would report the topic skipped", err)
	}
}

var errUnreachable = errors.New("temporal unreachable")

type failingRuns struct{}

func (failingRuns) RunOpen(context.Context, string, string) (bool, error) {
	return false, errUnreachable
}

// TestRunLeaseNeverOptimizesATopicTwice: a run's Lease (SkipIfOptimized) passed its checks while
// run-H held the topic; run-H commits before the lease is taken. The lease then finds the topic no
// longer queued, under the queue row's lock, and reports it already optimized instead of queuing
// and optimizing it again.
func TestRunLeaseNeverOptimizesATopicTwice(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 4, RowsPerChunk: 100}})
	ctx := context.Background()
	id := ts[0].TopicID
	runs := &fakeRuns{open: map[string]bool{}} // run-H's run is closed; its zombie commit still holds
	a.Runs = runs
	holderWrites(t, a, id, "run-H")
	runs.before = func(runID string) {
		if _, err := a.Commit(activities.WithRun(ctx, "test-owner", runID), activities.CommitInput{TopicID: id}); err != nil {
			t.Errorf("run-H's commit: %v", err)
		}
	}
	l, err := a.Lease(activities.WithRun(ctx, "storeopt-optimizer", "run-T"), activities.LeaseInput{TopicID: id, SkipIfOptimized: true})
	if err != nil {
		t.Fatal(err)
	}
	if !l.AlreadyOptimized || l.FreshPrefix != "" {
		t.Fatalf("lease after run-H committed: %+v, want AlreadyOptimized and no lease", l)
	}
	if queued, err := a.Catalog.IsQueued(ctx, id); err != nil || queued {
		t.Fatalf("topic queued again (%v, err %v)", queued, err)
	}
	recs, err := a.Catalog.Optimizations(ctx, id)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d optimizations (err %v), want 1", len(recs), err)
	}
}
