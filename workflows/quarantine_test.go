package workflows

import (
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
	_, res := runLegs(t, StoreOptimizerInput{PageSize: 2}, func(env *testsuite.TestWorkflowEnvironment) {
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
