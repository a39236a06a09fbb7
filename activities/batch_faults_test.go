//go:build storeopt_faults

package activities_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
)

// TestRetryableErrorGivesBackOnlyItsTopic: a retryable error in one topic's write (an injected
// store fault, once) gives that topic back — its partial output deleted, its lease cleared with
// the topic still queued, no failure counted — while the batch goes on and optimizes the others
// in the same attempt (the activity succeeds).
func TestRetryableErrorGivesBackOnlyItsTopic(t *testing.T) {
	a, ts := setup(t, 0, tinyTopics(3))
	ends := &endLog{}
	a.Metrics = ends
	keep := map[string]bool{} // the topics' original prefixes, then their current ones
	for _, it := range ts {
		tp, err := a.Catalog.Topic(context.Background(), it.TopicID)
		require.NoError(t, err)
		keep[tp.DataPrefix] = true
	}
	_, err := a.EnqueueTopics(context.Background(), activities.EnqueueTopicsInput{}) // a run leases queued topics only
	require.NoError(t, err)
	t.Setenv(faults.EnvVar, faults.WriteChunksBeforeWrite+"=fail*1")
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	env.RegisterActivity(a)
	v, err := env.ExecuteActivity(a.OptimizeSmallTopics, activities.OptimizeSmallTopicsInput{Topics: smallTopics(ts),
		MaxChunkSizeBytes: 1 << 20})
	require.NoError(t, err, "one topic's retryable error fails its batch")
	var res activities.OptimizeSmallTopicsResult
	require.NoError(t, v.Get(&res))
	var outcomes []string
	for _, r := range res.Topics {
		outcomes = append(outcomes, r.Locator+" "+r.Outcome)
	}
	require.Equal(t, []string{ts[0].Locator + " given-back", ts[1].Locator + " optimized", ts[2].Locator + " optimized"}, outcomes)
	require.Equal(t, "write-chunks group 0", res.Topics[0].Step)
	require.Contains(t, res.Topics[0].Error, "injected fault at "+faults.WriteChunksBeforeWrite)

	ctx := context.Background()
	_, err = a.Catalog.LeaseOf(ctx, ts[0].TopicID)
	require.ErrorContains(t, err, "queued but not leased", "the topic is given back and stays queued")
	tp, err := a.Catalog.Topic(ctx, ts[0].TopicID)
	require.NoError(t, err)
	require.Nil(t, tp.OptimizedAt)
	_, err = a.Catalog.FailureOf(ctx, ts[0].TopicID)
	require.ErrorIs(t, err, catalog.ErrNotFound, "a retryable error never counts toward quarantine")
	// Nothing is left in the store but the topics' data: their original and current prefixes.
	for i, it := range ts {
		tp, err := a.Catalog.Topic(ctx, it.TopicID)
		require.NoError(t, err)
		keep[tp.DataPrefix] = true
		if i > 0 {
			require.NotNil(t, tp.OptimizedAt, "topic %d", i)
		}
	}
	for _, k := range allObjects(t, a.Bucket) {
		prefix, _, _ := strings.Cut(k, "/")
		if !keep[prefix] {
			t.Errorf("object %s is under no topic's prefix: partial output left behind", k)
		}
	}
	require.Equal(t, []string{"optimized full", "optimized full"}, ends.ended())

	// The topic workflow that retries it (started by the run) leases it afresh and optimizes it.
	t.Setenv(faults.EnvVar, "")
	tctx := activities.WithRun(ctx, "storeopt-topic", "run-topic-workflow")
	l, err := a.Lease(tctx, activities.LeaseInput{TopicID: ts[0].TopicID, SkipIfOptimized: true})
	require.NoError(t, err)
	require.False(t, l.AlreadyOptimized, "the topic given back is still queued for the run")
	optimize(t, a, ts[0].TopicID, "run-topic-workflow", 1<<20, 0)
	_, err = a.Commit(tctx, activities.CommitInput{TopicID: ts[0].TopicID})
	require.NoError(t, err)
}

// allObjects lists every key of the store.
func allObjects(t *testing.T, b *blob.Bucket) []string {
	t.Helper()
	return listed(t, b, "")
}
