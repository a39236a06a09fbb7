package workflows

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// TestStoreOptimizerBatchesTinyTopics: tiny topics are optimized BatchTopics at a time by
// OptimizeSmallTopics (a page's rest is flushed at its end), a larger topic gets its topic
// workflow, each outcome of a batch is counted like its topic workflow's would be, and a topic
// whose lease another run holds is handed to a topic workflow of its own.
func TestStoreOptimizerBatchesTinyTopics(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/big", "seq/t1", "seq/t2", "seq/t3", "seq/t4", "seq/t5", "seq/t6", "seq/t7")
	q.topics[0].Bytes = 10_000 // more than MaxChunkSizeBytes
	q.install(env)
	outcomes := map[string]activities.SmallTopicResult{
		"seq/t1": {Outcome: activities.OutcomeOptimized, Policy: "full", Commit: activities.CommitResult{InputChunks: 10, OutputChunks: 1, Rows: 5, InputBytes: 1000, OutputBytes: 900}},
		"seq/t2": {Outcome: activities.OutcomeSkipped},
		"seq/t3": {Outcome: activities.OutcomeQuarantined, Quarantined: &activities.QuarantinedTopic{Locator: "seq/t3", Reason: "bad"}},
		"seq/t4": {Outcome: activities.OutcomeNothingToDo},
		"seq/t5": {Outcome: activities.OutcomeFailed, Step: "read-sort", ErrorType: activities.ErrTypeInput, Error: "topic seq/t5: chunk x: not a Parquet file"},
		"seq/t6": {Outcome: activities.OutcomeLeased},
		"seq/t7": {Outcome: activities.OutcomeOptimized, Policy: "full", Commit: activities.CommitResult{InputChunks: 2, OutputChunks: 1, Rows: 7, InputBytes: 100, OutputBytes: 90}},
	}
	var mu sync.Mutex
	var batches [][]string
	env.OnActivity(a.OptimizeSmallTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.OptimizeSmallTopicsInput) (activities.OptimizeSmallTopicsResult, error) {
			var res activities.OptimizeSmallTopicsResult
			var locators []string
			for _, tp := range in.Topics {
				r := outcomes[tp.Locator]
				r.TopicID, r.Locator = tp.TopicID, tp.Locator
				res.Topics = append(res.Topics, r)
				locators = append(locators, tp.Locator)
			}
			mu.Lock()
			batches = append(batches, locators)
			mu.Unlock()
			return res, nil
		})
	var children []string
	mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		mu.Lock()
		children = append(children, in.Locator)
		mu.Unlock()
		return childResult(in), nil
	})

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{PageSize: 4, MaxChunkSizeBytes: 5000, BatchTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	// The test environment runs the batches' activities concurrently: in any order.
	require.ElementsMatch(t, [][]string{{"seq/t1", "seq/t2", "seq/t3"}, {"seq/t4", "seq/t5", "seq/t6"}, {"seq/t7"}}, batches)
	require.ElementsMatch(t, []string{"seq/big", "seq/t6"}, children)
	require.Equal(t, 4, res.Optimized)
	require.Equal(t, 1, res.Skipped)
	require.Equal(t, 1, res.Quarantined)
	require.Equal(t, 1, res.NothingToDo)
	require.Equal(t, []TopicFailure{{Locator: "seq/t5", Error: "topic seq/t5: read-sort: chunk x: not a Parquet file"}}, res.Failures)
	require.Equal(t, int64(5+7+10+70), res.Rows, "t1, t7 and the children's rows (their topic IDs)")
	var p Progress
	v, err := env.QueryWorkflow(ProgressQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&p))
	require.Equal(t, 8, p.Finished)
	require.Zero(t, p.InFlight)
}

// mockBatches mocks OptimizeSmallTopics: a batch whose first topic is failFrom fails as a whole
// with cause; any other batch optimizes each topic, except those in givenBack, which it gives back.
func mockBatches(env *testsuite.TestWorkflowEnvironment, failFrom string, cause error, givenBack ...string) {
	env.OnActivity(a.OptimizeSmallTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.OptimizeSmallTopicsInput) (activities.OptimizeSmallTopicsResult, error) {
			if in.Topics[0].Locator == failFrom {
				return activities.OptimizeSmallTopicsResult{}, cause
			}
			var res activities.OptimizeSmallTopicsResult
			for _, tp := range in.Topics {
				r := activities.SmallTopicResult{TopicID: tp.TopicID, Locator: tp.Locator, Outcome: activities.OutcomeOptimized,
					Commit: activities.CommitResult{InputChunks: 3, OutputChunks: 1, Rows: 1}}
				if slices.Contains(givenBack, tp.Locator) {
					r = activities.SmallTopicResult{TopicID: tp.TopicID, Locator: tp.Locator, Outcome: activities.OutcomeGivenBack,
						Step: "write-chunks group 0", Error: "topic " + tp.Locator + ": store read: connection reset"}
				}
				res.Topics = append(res.Topics, r)
			}
			return res, nil
		})
}

// TestStoreOptimizerReleasesAFailedBatch: a batch that fails as a whole (here with a
// non-retryable error, as after its last attempt) has exactly its topics released by one
// ReleaseSmallTopics with the batch's error, from a disconnected context; the topic the run
// committed before the failure is counted optimized, the others failed with the batch's error.
// The other batch's topics are released by no one.
func TestStoreOptimizerReleasesAFailedBatch(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/t1", "seq/t2", "seq/t3", "seq/t4", "seq/t5")
	q.install(env)
	cause := temporal.NewNonRetryableApplicationError("topic seq/t1: catalog: connection refused", "CatalogDown", nil)
	mockBatches(env, "seq/t1", cause)
	var mu sync.Mutex
	var released []activities.ReleaseSmallTopicsInput
	env.OnActivity(a.ReleaseSmallTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseSmallTopicsInput) (activities.ReleaseSmallTopicsResult, error) {
			mu.Lock()
			released = append(released, in)
			mu.Unlock()
			var res activities.ReleaseSmallTopicsResult
			for i, tp := range in.Topics {
				r := activities.SmallTopicResult{TopicID: tp.TopicID, Locator: tp.Locator, Outcome: activities.OutcomeFailed}
				if i == 0 {
					r.Outcome, r.Commit = activities.OutcomeOptimized, activities.CommitResult{AlreadyCommitted: true, Rows: 9}
				}
				res.Topics = append(res.Topics, r)
			}
			return res, nil
		})

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{MaxChunkSizeBytes: 5000, BatchTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []activities.ReleaseSmallTopicsInput{{
		Topics:    []activities.SmallTopic{{TopicID: 10, Locator: "seq/t1"}, {TopicID: 20, Locator: "seq/t2"}, {TopicID: 30, Locator: "seq/t3"}},
		Reason:    "batch failed: topic seq/t1: catalog: connection refused",
		ErrorType: "CatalogDown", Error: "topic seq/t1: catalog: connection refused",
	}}, released)
	require.Equal(t, 3, res.Optimized, "t1 (committed before the failure), t4 and t5")
	require.Equal(t, int64(9+1+1), res.Rows)
	require.Equal(t, []TopicFailure{
		{Locator: "seq/t2", Error: "topic seq/t2: batch: topic seq/t1: catalog: connection refused"},
		{Locator: "seq/t3", Error: "topic seq/t3: batch: topic seq/t1: catalog: connection refused"},
	}, res.Failures)
}

// TestStoreOptimizerFailedBatchOfOldHistory: executions recorded before batchReleaseChange
// release nothing after a failed batch (no new command) and fail each of its topics.
func TestStoreOptimizerFailedBatchOfOldHistory(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/t1", "seq/t2")
	q.install(env)
	env.OnGetVersion(batchReleaseChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	mockBatches(env, "seq/t1", temporal.NewNonRetryableApplicationError("catalog: connection refused", "CatalogDown", nil))

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{MaxChunkSizeBytes: 5000, BatchTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Failed)
	require.Zero(t, res.Optimized)
}

// TestStoreOptimizerRetriesAGivenBackTopic: a topic its batch gave back after a retryable error
// is optimized by a topic workflow of its own; its batch mates are counted from the batch, and
// nothing is released or failed.
func TestStoreOptimizerRetriesAGivenBackTopic(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/t1", "seq/t2", "seq/t3")
	q.install(env)
	mockBatches(env, "", nil, "seq/t2")
	var mu sync.Mutex
	var children []string
	mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		mu.Lock()
		children = append(children, in.Locator)
		mu.Unlock()
		return childResult(in), nil
	})

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{MaxChunkSizeBytes: 5000, BatchTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []string{"seq/t2"}, children)
	require.Equal(t, 3, res.Optimized)
	require.Zero(t, res.Failed)
	require.Equal(t, int64(1+20+1), res.Rows, "t1 and t3 from the batch, t2 from its child (its topic ID)")
}

// TestStoreOptimizerCancelReleasesTheBatch: a run canceled while a batch runs releases the
// batch's topics with ReleaseSmallTopics (from a disconnected context: it runs although the run
// is canceled) marked canceled, and ends canceled.
func TestStoreOptimizerCancelReleasesTheBatch(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/t1", "seq/t2")
	q.install(env)
	env.OnActivity(a.OptimizeSmallTopics, mock.Anything, mock.Anything).After(time.Hour).
		Return(activities.OptimizeSmallTopicsResult{}, nil)
	var released []activities.ReleaseSmallTopicsInput
	env.OnActivity(a.ReleaseSmallTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseSmallTopicsInput) (activities.ReleaseSmallTopicsResult, error) {
			released = append(released, in)
			return activities.ReleaseSmallTopicsResult{}, nil
		})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{MaxChunkSizeBytes: 5000})

	err := env.GetWorkflowError()
	require.True(t, temporal.IsCanceledError(err), "want canceled, got %v", err)
	require.Equal(t, []activities.ReleaseSmallTopicsInput{{
		Topics: []activities.SmallTopic{{TopicID: 10, Locator: "seq/t1"}, {TopicID: 20, Locator: "seq/t2"}},
		Reason: "batch canceled", Canceled: true,
	}}, released)
}
