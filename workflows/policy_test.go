package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// A policy that finds nothing to do gives the lease back (a Release that is no failure) and ends
// with NothingToDo; the lease's resolved policy reaches ReadSort and the result.
func TestOptimizeTopicNothingToDo(t *testing.T) {
	env := newTestEnv(t)
	var log callLog
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.LeaseInput) (activities.LeaseResult, error) {
			log.add("lease " + in.Policy)
			return activities.LeaseResult{Locator: testLocator, FreshPrefix: "tp_new", Policy: "tiered"}, nil
		})
	env.OnActivity(a.ReadSort, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReadSortInput) (activities.ReadSortResult, error) {
			log.add("read-sort " + in.Policy)
			return activities.ReadSortResult{NothingToDo: true}, nil
		})
	env.OnActivity(a.Release, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseInput) (activities.ReleaseResult, error) {
			log.add("release: " + in.Reason + " " + in.ErrorType)
			return activities.ReleaseResult{Released: true}, nil
		})
	in := topicInput(0)
	in.Policy = "auto"
	env.ExecuteWorkflow(OptimizeTopicWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res OptimizeTopicResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, OptimizeTopicResult{Locator: testLocator, Policy: "tiered", NothingToDo: true}, res)
	require.Equal(t, []string{"lease auto", "read-sort tiered", "release: nothing to do "}, log.list())
}

// A run passes its policy, trigger and scope to EnqueueTopics, ListQueuedTopics and every child,
// and counts the children by the policy they applied.
func TestStoreOptimizerPassesPolicyAndCountsByPolicy(t *testing.T) {
	env := newTestEnv(t)
	var enq activities.EnqueueTopicsInput
	var list activities.ListQueuedTopicsInput
	env.OnActivity(a.EnqueueTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.EnqueueTopicsInput) (activities.EnqueueTopicsResult, error) {
			enq = in
			return activities.EnqueueTopicsResult{Added: 3, Queued: 3}, nil
		})
	env.OnActivity(a.ListQueuedTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ListQueuedTopicsInput) (activities.ListQueuedTopicsResult, error) {
			list = in
			return activities.ListQueuedTopicsResult{Topics: []activities.QueuedTopic{
				{TopicID: 1, Locator: "s/a"}, {TopicID: 2, Locator: "s/b"}, {TopicID: 3, Locator: "s/c"}}}, nil
		})
	applied := map[int64]string{1: "tiered", 2: "leveled", 3: ""}
	var children []OptimizeTopicInput
	env.OnWorkflow(OptimizeTopicWorkflow, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
			children = append(children, in)
			if applied[in.TopicID] == "" {
				return OptimizeTopicResult{Locator: in.Locator, Policy: "tiered", NothingToDo: true}, nil
			}
			return OptimizeTopicResult{Locator: in.Locator, Policy: applied[in.TopicID], Rows: 10}, nil
		})
	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, Policy: "auto", MinChunks: 4, Scope: []string{"sequence:s"},
		MaxChunkSizeBytes: 1000})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, activities.EnqueueTopicsInput{Policy: "auto", MinChunks: 4, MaxChunkSizeBytes: 1000, Scope: []string{"sequence:s"}}, enq)
	require.Equal(t, "auto", list.Policy)
	require.Equal(t, []string{"sequence:s"}, list.Scope)
	require.Len(t, children, 3)
	for _, c := range children {
		require.Equal(t, "auto", c.Policy)
		require.Equal(t, 4, c.MinChunks)
		require.True(t, c.FromRun)
	}
	require.Equal(t, 2, res.Optimized)
	require.Equal(t, 1, res.Tiered)
	require.Equal(t, 1, res.Leveled)
	require.Equal(t, 1, res.NothingToDo)
}

// A run with an unknown policy or scope fails at once, as an input error.
func TestStoreOptimizerRefusesBadPolicyOrScope(t *testing.T) {
	for _, in := range []StoreOptimizerInput{{Policy: "sideways"}, {Scope: []string{"tenant:x"}}, {MinChunks: -1}} {
		env := newTestEnv(t)
		env.ExecuteWorkflow(StoreOptimizerWorkflow, in)
		require.True(t, env.IsWorkflowCompleted())
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, env.GetWorkflowError(), &appErr, "%+v", in)
		require.Equal(t, activities.ErrTypeInput, appErr.Type())
	}
}
