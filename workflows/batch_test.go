package workflows

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
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
