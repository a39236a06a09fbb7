package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/storeopt/storeopt/activities"
)

const testLocator = "run_7/sensors/imu"

// newTestEnv returns a test environment with both workflows and the activities registered.
func newTestEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(StoreOptimizerWorkflow)
	env.RegisterWorkflow(OptimizeTopicWorkflow)
	env.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// callLog records activity calls in the order they happened; mocks run on several goroutines.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *callLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// topicMocks mocks the activities of one optimization: a plan of groups output groups; each
// activity's call is logged ("lease", "read-sort", "write-chunks 1", "commit", "release: <reason>").
// readSortErr and writeErr (for group failGroup) make those steps fail.
type topicMocks struct {
	groups      int
	readSortErr error
	failGroup   int
	writeErr    error
	writeDelay  time.Duration // on the workflow clock
	outputBytes int64         // ReadSort's estimate of the bytes written
	log         callLog
}

func (m *topicMocks) install(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.LeaseInput) (activities.LeaseResult, error) {
			m.log.add("lease")
			pol := in.Policy
			if pol == "auto" {
				pol = "tiered"
			}
			return activities.LeaseResult{Locator: testLocator, OldPrefix: "tp_old", FreshPrefix: "tp_new", Policy: pol}, nil
		}).Maybe()
	env.OnActivity(a.ReadSort, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReadSortInput) (activities.ReadSortResult, error) {
			m.log.add(fmt.Sprintf("read-sort max=%d", in.MaxChunkSizeBytes))
			if m.readSortErr != nil {
				return activities.ReadSortResult{}, m.readSortErr
			}
			return activities.ReadSortResult{InputChunks: 40, InputRows: 4000, InputBytes: 4e6,
				OutputChunks: m.groups, Groups: m.groups, OutputBytes: m.outputBytes}, nil
		}).Maybe()
	writeChunks := func(_ context.Context, in activities.WriteChunksInput) (activities.WriteChunksResult, error) {
		m.log.add(fmt.Sprintf("write-chunks %d", in.Group))
		if m.writeErr != nil && in.Group == m.failGroup {
			return activities.WriteChunksResult{}, m.writeErr
		}
		return activities.WriteChunksResult{Chunks: 1, Rows: 1000, Bytes: 1000}, nil
	}
	if m.writeErr != nil {
		// The failing group fails at once, without writeDelay (the first matching mock wins).
		env.OnActivity(a.WriteChunks, mock.Anything, activities.WriteChunksInput{TopicID: 7, Group: m.failGroup}).
			Return(writeChunks).Maybe()
	}
	env.OnActivity(a.WriteChunks, mock.Anything, mock.Anything).After(m.writeDelay).Return(writeChunks).Maybe()
	env.OnActivity(a.Commit, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CommitInput) (activities.CommitResult, error) {
			m.log.add("commit")
			return activities.CommitResult{OldPrefix: "tp_old", NewPrefix: "tp_new", InputChunks: 40,
				OutputChunks: m.groups, Rows: 4000, InputBytes: 4e6, OutputBytes: 3e6}, nil
		}).Maybe()
	env.OnActivity(a.Release, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseInput) (activities.ReleaseResult, error) {
			m.log.add("release: " + in.Reason)
			return activities.ReleaseResult{Released: true, DeletedObjects: 2}, nil
		}).Maybe()
}

func topicInput(parallelism int) OptimizeTopicInput {
	return OptimizeTopicInput{TopicID: 7, Locator: testLocator, TopicParallelism: parallelism}
}

func TestOptimizeTopicRunsStepsInOrder(t *testing.T) {
	env := newTestEnv(t)
	m := &topicMocks{groups: 3}
	m.install(env)

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(0))

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res OptimizeTopicResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, OptimizeTopicResult{Locator: testLocator, InputChunks: 40, OutputChunks: 3, Rows: 4000,
		InputBytes: 4e6, OutputBytes: 3e6}, res)

	calls := m.log.list()
	require.Len(t, calls, 6)
	require.Equal(t, []string{"lease", "read-sort max=256000000"}, calls[:2])
	writes := slices.Sorted(slices.Values(calls[2:5]))
	require.Equal(t, []string{"write-chunks 0", "write-chunks 1", "write-chunks 2"}, writes)
	require.Equal(t, "commit", calls[5])

	step, err := env.QueryWorkflow(ProgressQuery)
	require.NoError(t, err)
	var p TopicProgress
	require.NoError(t, step.Get(&p))
	require.Equal(t, "done", p.Step)
}

func TestOptimizeTopicBoundsWriteChunksParallelism(t *testing.T) {
	for _, parallelism := range []int{1, 3} {
		t.Run(fmt.Sprint(parallelism), func(t *testing.T) {
			env := newTestEnv(t)
			// Every WriteChunks takes a minute of workflow time, so the ones started together
			// overlap; the listeners count the activities between start and completion.
			m := &topicMocks{groups: 10, writeDelay: time.Minute}
			m.install(env)
			var mu sync.Mutex
			running, maxRunning := 0, 0
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == "WriteChunks" {
					mu.Lock()
					running++
					maxRunning = max(maxRunning, running)
					mu.Unlock()
				}
			})
			env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
				if info.ActivityType.Name == "WriteChunks" {
					mu.Lock()
					running--
					mu.Unlock()
				}
			})

			env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(parallelism))

			require.NoError(t, env.GetWorkflowError())
			require.Equal(t, parallelism, maxRunning)
			require.Equal(t, 0, running)
			require.Len(t, m.log.list(), 13) // lease, read-sort, 10 groups, commit
		})
	}
}

func TestOptimizeTopicReadSortInputErrorReleasesAndNamesTopic(t *testing.T) {
	env := newTestEnv(t)
	cause := temporal.NewNonRetryableApplicationError(
		`chunk tp_old/data/00003.parquet: no column "timestamp_ns"`, activities.ErrTypeInput, nil)
	m := &topicMocks{groups: 3, readSortErr: cause}
	m.install(env)

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(2))

	err := env.GetWorkflowError()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeTopicFailed, appErr.Type())
	require.Equal(t, `topic run_7/sensors/imu: read-sort: chunk tp_old/data/00003.parquet: no column "timestamp_ns"`,
		appErr.Message())
	require.True(t, appErr.NonRetryable())
	// The activity's error type stays in the chain.
	require.True(t, hasErrorType(err, activities.ErrTypeInput), "chain: %v", err)

	// Not retried (non-retryable), nothing written, released with the reason.
	require.Equal(t, []string{
		"lease",
		"read-sort max=256000000",
		`release: read-sort failed: chunk tp_old/data/00003.parquet: no column "timestamp_ns"`,
	}, m.log.list())
}

func TestOptimizeTopicWriteFailureStopsGroupsAndReleases(t *testing.T) {
	env := newTestEnv(t)
	m := &topicMocks{groups: 6, failGroup: 1, writeDelay: time.Minute,
		writeErr: temporal.NewNonRetryableApplicationError("merge: out of order", activities.ErrTypeVerification, nil)}
	m.install(env)

	canceled := 0
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if info.ActivityType.Name == "WriteChunks" {
			canceled++
		}
	})

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(2))

	err := env.GetWorkflowError()
	require.ErrorContains(t, err, "topic run_7/sensors/imu: write-chunks group 1: merge: out of order")
	// Groups 0 and 1 started together; group 1 failed at once, group 0 (still writing) was
	// canceled, no further group started, and Release ran last.
	require.Equal(t, []string{"lease", "read-sort max=256000000", "write-chunks 1",
		"release: write-chunks 0/6 failed: merge: out of order"}, m.log.list())
	require.Equal(t, 1, canceled)
}

func TestOptimizeTopicCancelReleases(t *testing.T) {
	env := newTestEnv(t)
	m := &topicMocks{groups: 4, writeDelay: time.Hour}
	m.install(env)
	var p TopicProgress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&p))
		env.CancelWorkflow()
	}, time.Minute)

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(2))

	require.Equal(t, "write-chunks 0/4", p.Step)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.True(t, temporal.IsCanceledError(err), "want canceled, got %v", err)
	calls := m.log.list()
	require.Contains(t, calls, "release: canceled during write-chunks 0/4")
	require.NotContains(t, calls, "commit")
}

func TestOptimizeTopicReleaseFailureKeepsOriginalError(t *testing.T) {
	env := newTestEnv(t)
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(activities.LeaseResult{},
		temporal.NewNonRetryableApplicationError("topic is not finalized", activities.ErrTypeNotFound, nil))
	env.OnActivity(a.Release, mock.Anything, mock.Anything).Return(activities.ReleaseResult{},
		temporal.NewNonRetryableApplicationError("no such topic", activities.ErrTypeNotFound, nil))

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(2))

	require.ErrorContains(t, env.GetWorkflowError(), "topic run_7/sensors/imu: lease: topic is not finalized")
}

// hasErrorType reports whether err's chain holds an ApplicationError of type errType.
func hasErrorType(err error, errType string) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		var appErr *temporal.ApplicationError
		if errors.As(e, &appErr) && appErr.Type() == errType {
			return true
		}
	}
	return false
}

// TestOptimizeTopicSkipsATopicALiveRunHolds: a Lease that says another open run holds the topic
// ends the optimization as skipped, with no other step and no release (the lease is not ours).
func TestOptimizeTopicSkipsATopicALiveRunHolds(t *testing.T) {
	env := newTestEnv(t)
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(activities.LeaseResult{Locator: testLocator,
		Leased: true, Holder: &activities.LeaseHolder{WorkflowID: "storeopt-optimizer", RunID: "run-live"}}, nil)

	env.ExecuteWorkflow(OptimizeTopicWorkflow, topicInput(2))

	require.NoError(t, env.GetWorkflowError())
	var res OptimizeTopicResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, OptimizeTopicResult{Locator: testLocator, Skipped: true}, res)
}
