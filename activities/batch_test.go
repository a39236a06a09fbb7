package activities_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/metrics"
)

// endLog is a metrics.Recorder that writes down how topics ended.
type endLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *endLog) add(s string) { l.mu.Lock(); l.calls = append(l.calls, s); l.mu.Unlock() }
func (l *endLog) TopicOptimized(o metrics.Optimization) {
	l.add("optimized " + o.Policy)
}
func (l *endLog) TopicFailed(policy, errorType string)         { l.add("failed " + policy + " " + errorType) }
func (l *endLog) TopicSkipped(policy, reason string)           { l.add("skipped " + policy + " " + reason) }
func (l *endLog) TopicQuarantined(policy string)               { l.add("quarantined " + policy) }
func (l *endLog) StepFinished(string, time.Duration, error)    {}
func (l *endLog) CleanupDone(kind string, deleted, failed int) {}
func (l *endLog) ChunksWritten(string, int, int64)             {}
func (l *endLog) ended() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// tinyTopics are the topics of the batch tests: a few chunks each.
func tinyTopics(n int) []ingest.TopicSpec {
	var specs []ingest.TopicSpec
	for i := range n {
		specs = append(specs, ingest.TopicSpec{Path: fmt.Sprintf("t%d", i), Kind: ingest.IMU, Chunks: 3, RowsPerChunk: 20})
	}
	return specs
}

// smallTopics is the batch of the ingested topics.
func smallTopics(ts []ingest.IngestedTopic) []activities.SmallTopic {
	var out []activities.SmallTopic
	for _, t := range ts {
		out = append(out, activities.SmallTopic{TopicID: t.TopicID, Locator: t.Locator})
	}
	return out
}

// objectsUnder lists the keys of the store under prefix.
func objectsUnder(t *testing.T, b *blob.Bucket, prefix string) []string {
	t.Helper()
	return listed(t, b, prefix+"/")
}

// listed lists the keys of the store that start with prefix ("" = every key).
func listed(t *testing.T, b *blob.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return keys
		}
		require.NoError(t, err)
		keys = append(keys, o.Key)
	}
}

// failedBatch leases the batch's topics as a failed batch of run token leaves them: topic 0
// committed, topic 1 leased with output written and staged (its fresh prefix is returned), topic
// 2 leased by another run, topic 3 never reached.
func failedBatch(t *testing.T, a *activities.Activities, ts []ingest.IngestedTopic, token string) string {
	t.Helper()
	ctx := activities.WithRun(context.Background(), "storeopt-run", token)
	optimize(t, a, ts[0].TopicID, token, 1<<20, 0)
	_, err := a.Commit(ctx, activities.CommitInput{TopicID: ts[0].TopicID})
	require.NoError(t, err)
	optimize(t, a, ts[1].TopicID, token, 1<<20, 0)
	l, err := a.Catalog.LeaseOf(ctx, ts[1].TopicID)
	require.NoError(t, err)
	require.NotEmpty(t, objectsUnder(t, a.Bucket, l.FreshPrefix), "topic 1 has partial output")
	_, err = a.Lease(activities.WithRun(context.Background(), "storeopt-topic:other", "run-other"),
		activities.LeaseInput{TopicID: ts[2].TopicID})
	require.NoError(t, err)
	return l.FreshPrefix
}

// TestReleaseSmallTopicsEndsAFailedBatch: after a batch failed as a whole, ReleaseSmallTopics
// reports the topic the run committed as optimized and ends every other topic as a topic
// workflow's Release would: the partial output of the topic the run still leased is deleted and
// its lease dropped, the topic leased by another run keeps its lease, and each topic not
// committed is counted failed with the batch's error (its failure record, the metrics) — once,
// even when the release is retried.
func TestReleaseSmallTopicsEndsAFailedBatch(t *testing.T) {
	a, ts := setup(t, 0, tinyTopics(4))
	ends := &endLog{}
	a.Metrics = ends
	const token = "run-failed-batch"
	fresh := failedBatch(t, a, ts, token)
	ctx := activities.WithRun(context.Background(), "storeopt-run", token)
	in := activities.ReleaseSmallTopicsInput{Topics: smallTopics(ts), Reason: "batch failed: injected",
		ErrorType: activities.ErrTypeInput, Error: "injected input fault"}

	var res activities.ReleaseSmallTopicsResult
	for attempt := range 2 { // a retried release changes nothing more
		ends.calls = nil
		var err error
		res, err = a.ReleaseSmallTopics(ctx, in)
		require.NoError(t, err, "attempt %d", attempt)
	}
	var outcomes []string
	for _, r := range res.Topics {
		outcomes = append(outcomes, r.Locator+" "+r.Outcome)
	}
	require.Equal(t, []string{ts[0].Locator + " optimized", ts[1].Locator + " failed", ts[2].Locator + " failed",
		ts[3].Locator + " failed"}, outcomes)
	require.True(t, res.Topics[0].Commit.AlreadyCommitted)
	require.Equal(t, "batch", res.Topics[1].Step)
	require.Equal(t, "injected input fault", res.Topics[1].Error)

	_, err := a.Catalog.LeaseOf(ctx, ts[1].TopicID)
	require.ErrorIs(t, err, catalog.ErrNotFound, "the lease of topic 1 is dropped")
	require.Empty(t, objectsUnder(t, a.Bucket, fresh), "the partial output of topic 1 is deleted")
	l, err := a.Catalog.LeaseOf(ctx, ts[2].TopicID)
	require.NoError(t, err)
	require.Equal(t, "run-other", l.FencingToken, "another run's lease is left alone")
	for _, i := range []int{1, 2, 3} {
		rec, err := a.Catalog.FailureOf(ctx, ts[i].TopicID)
		require.NoError(t, err, "topic %d", i)
		require.Equal(t, 1, rec.Failures, "topic %d: the batch's failure counts once toward quarantine", i)
	}
	_, err = a.Catalog.FailureOf(ctx, ts[0].TopicID)
	require.ErrorIs(t, err, catalog.ErrNotFound, "the committed topic has no failure")
	failed := "failed full " + activities.ErrTypeInput
	require.Equal(t, []string{failed, failed, failed}, ends.ended(), "each failed topic counted once, on the last attempt")
	for _, i := range []int{0, 3} {
		tp, err := a.Catalog.Topic(ctx, ts[i].TopicID)
		require.NoError(t, err)
		require.Equal(t, i == 0, tp.OptimizedAt != nil, "topic %d", i)
	}
}

// TestReleaseSmallTopicsAfterACancel: a canceled batch's topics are released like a failed one's,
// but only the topics the run held the lease of count as failed (canceled), as a canceled run
// counts only the topic workflows it had in flight.
func TestReleaseSmallTopicsAfterACancel(t *testing.T) {
	a, ts := setup(t, 0, tinyTopics(4))
	const token = "run-canceled-batch"
	fresh := failedBatch(t, a, ts, token)
	ends := &endLog{}
	a.Metrics = ends
	ctx := activities.WithRun(context.Background(), "storeopt-run", token)
	res, err := a.ReleaseSmallTopics(ctx, activities.ReleaseSmallTopicsInput{Topics: smallTopics(ts),
		Reason: "batch canceled", Canceled: true})
	require.NoError(t, err)
	require.Len(t, res.Topics, 4)
	require.Equal(t, activities.OutcomeOptimized, res.Topics[0].Outcome)
	_, err = a.Catalog.LeaseOf(ctx, ts[1].TopicID)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.Empty(t, objectsUnder(t, a.Bucket, fresh))
	require.Equal(t, []string{"failed full canceled"}, ends.ended())
	for _, i := range []int{1, 3} {
		_, err := a.Catalog.FailureOf(ctx, ts[i].TopicID)
		require.ErrorIs(t, err, catalog.ErrNotFound, "topic %d: a cancellation never counts toward quarantine", i)
	}
}
