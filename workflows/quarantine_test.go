package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// TestStoreOptimizerReportsQuarantined: the quarantined topics EnqueueTopics reports end up in the
// run's result, across continue-as-new.
func TestStoreOptimizerReportsQuarantined(t *testing.T) {
	quarantined := []activities.QuarantinedTopic{{TopicID: 7, Locator: "seq/bad", Failures: 3,
		Reason: "StoreoptInputError: topic seq/bad: chunk tp_A/data/00003.parquet: not a Parquet file",
		Since:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}
	q := newQueue("seq/a", "seq/b", "seq/c")
	_, res := runLegs(t, StoreOptimizerInput{BatchTopics: 1, PageSize: 2}, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(a.EnqueueTopics, mock.Anything, mock.Anything).Return(activities.EnqueueTopicsResult{
			Added: 3, Queued: 3, Quarantined: 1, QuarantinedTopics: quarantined}, nil).Maybe()
		q.install(env)
		mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
			return OptimizeTopicResult{Locator: in.Locator}, nil
		})
	})
	require.Equal(t, 3, res.Optimized)
	require.Equal(t, 1, res.Quarantined)
	require.Equal(t, quarantined, res.QuarantinedTopics)
}

// TestStoreOptimizerSkipsTopicQuarantinedSinceListed: when Lease finds the topic quarantined (by
// another run, after this run listed it), the child does nothing else and the run reports it.
func TestStoreOptimizerSkipsTopicQuarantinedSinceListed(t *testing.T) {
	env := newTestEnv(t)
	newQueue("seq/a", "seq/b", "seq/c").install(env)
	bad := activities.QuarantinedTopic{TopicID: 20, Locator: "seq/b", Failures: 3,
		Reason: "StoreoptInputError: chunk tp_b/data/00001.parquet: not a Parquet file",
		Since:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.LeaseInput) (activities.LeaseResult, error) {
			if !in.SkipIfOptimized {
				t.Errorf("a run's child leased topic %d without SkipIfOptimized", in.TopicID)
			}
			if in.TopicID == 20 {
				return activities.LeaseResult{Quarantined: &bad}, nil
			}
			return activities.LeaseResult{}, nil
		})
	var readSorted []int64
	var mu sync.Mutex
	env.OnActivity(a.ReadSort, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReadSortInput) (activities.ReadSortResult, error) {
			mu.Lock()
			defer mu.Unlock()
			readSorted = append(readSorted, in.TopicID)
			return activities.ReadSortResult{Groups: 1}, nil
		})
	env.OnActivity(a.WriteChunks, mock.Anything, mock.Anything).Return(activities.WriteChunksResult{}, nil)
	env.OnActivity(a.Commit, mock.Anything, mock.Anything).Return(activities.CommitResult{Rows: 1}, nil)

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Optimized)
	require.Equal(t, 0, res.Failed)
	require.Equal(t, 1, res.Quarantined)
	require.Equal(t, []activities.QuarantinedTopic{bad}, res.QuarantinedTopics)
	require.ElementsMatch(t, []int64{10, 30}, readSorted, "the quarantined topic was not read")
}
