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
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// queue is a mocked optimization queue: EnqueueTopics and ListQueuedTopics over a fixed topic list
// in topic ID order. It is shared by the executions of one run.
type queue struct {
	topics []activities.QueuedTopic

	mu       sync.Mutex
	enqueues int
	lists    []activities.ListQueuedTopicsInput
}

func newQueue(locators ...string) *queue {
	q := &queue{}
	for i, l := range locators {
		q.topics = append(q.topics, activities.QueuedTopic{TopicID: int64(10 * (i + 1)), Locator: l, Bytes: 1000})
	}
	return q
}

func (q *queue) install(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(a.EnqueueTopics, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.EnqueueTopicsInput) (activities.EnqueueTopicsResult, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.enqueues++
			return activities.EnqueueTopicsResult{Added: len(q.topics), Queued: len(q.topics),
				ForRun: len(q.topics), ForRunBytes: int64(1000 * len(q.topics))}, nil
		}).Maybe()
	env.OnActivity(a.ListQueuedTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ListQueuedTopicsInput) (activities.ListQueuedTopicsResult, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.lists = append(q.lists, in)
			var page []activities.QueuedTopic
			for _, t := range q.topics {
				if t.TopicID > in.AfterTopicID && len(page) < in.Limit {
					page = append(page, t)
				}
			}
			return activities.ListQueuedTopicsResult{Topics: page}, nil
		}).Maybe()
}

// childResult is what a mocked OptimizeTopicWorkflow returns for a topic.
func childResult(in OptimizeTopicInput) OptimizeTopicResult {
	return OptimizeTopicResult{Locator: in.Locator, InputChunks: 10, OutputChunks: 1, Rows: in.TopicID,
		InputBytes: 1000, OutputBytes: 900}
}

// mockChildren replaces OptimizeTopicWorkflow with fn.
func mockChildren(env *testsuite.TestWorkflowEnvironment,
	fn func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error)) {
	env.OnWorkflow(OptimizeTopicWorkflow, mock.Anything, mock.Anything).Return(fn).Maybe()
}

// runLegs runs a StoreOptimizerWorkflow run to its end, one test environment per execution,
// starting each execution with the input its predecessor continued as new with. setup installs the
// mocks of each environment. It returns the inputs of the executions after the first and the run's
// result.
func runLegs(t *testing.T, in StoreOptimizerInput, setup func(env *testsuite.TestWorkflowEnvironment)) (
	[]StoreOptimizerInput, StoreOptimizerResult) {
	t.Helper()
	var next []StoreOptimizerInput
	for leg := 0; leg < 100; leg++ {
		env := newTestEnv(t)
		setup(env)
		env.ExecuteWorkflow(StoreOptimizerWorkflow, in)
		require.True(t, env.IsWorkflowCompleted())
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			require.NoError(t, err)
			var res StoreOptimizerResult
			require.NoError(t, env.GetWorkflowResult(&res))
			return next, res
		}
		require.Equal(t, "StoreOptimizerWorkflow", can.WorkflowType.Name)
		in = StoreOptimizerInput{}
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
		next = append(next, in)
	}
	t.Fatal("run did not end after 100 executions")
	return nil, StoreOptimizerResult{}
}

// TestStoreOptimizerContinuesAsNewOnceHistoryIsLong: with a history as long as the limit, every
// execution lists one page, waits for its children and continues as new after a full one.
func TestStoreOptimizerContinuesAsNewOnceHistoryIsLong(t *testing.T) {
	for _, n := range []int{5, 4} {
		t.Run(fmt.Sprint(n, " topics"), func(t *testing.T) {
			var locators []string
			for i := range n {
				locators = append(locators, fmt.Sprintf("seq/t%d", i))
			}
			q := newQueue(locators...)
			var mu sync.Mutex
			var children []OptimizeTopicInput
			setup := func(env *testsuite.TestWorkflowEnvironment) {
				q.install(env)
				mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
					mu.Lock()
					children = append(children, in)
					mu.Unlock()
					return childResult(in), nil
				})
			}

			next, res := runLegs(t, StoreOptimizerInput{BatchTopics: 1, PageSize: 2, MaxChunkSizeBytes: 5000, TopicParallelism: 3,
				ContinueAsNewEvents: 50}, func(env *testsuite.TestWorkflowEnvironment) {
				env.SetCurrentHistoryLength(50)
				setup(env)
			})

			// Full pages of 2 continue as new with the cursor and counts; the first short page
			// (possibly empty) ends the run.
			require.Len(t, next, n/2)
			require.False(t, next[0].State.StartedAt.IsZero(), "the run's start is carried")
			require.Equal(t, &RunState{Enqueued: true, AfterTopicID: 20, Result: StoreOptimizerResult{
				Optimized: 2, Rows: 30, InputChunks: 20, OutputChunks: 2, InputBytes: 2000, OutputBytes: 1800,
			}, Queued: n, QueuedBytes: int64(1000 * n), Finished: 2, FinishedBytes: 2000,
				StartedAt: next[0].State.StartedAt}, next[0].State)
			require.Equal(t, next[0].State.StartedAt, next[1].State.StartedAt, "StartedAt stays the run's")
			require.Equal(t, StoreOptimizerInput{BatchTopics: 1, PageSize: 2, MaxChunkSizeBytes: 5000, TopicParallelism: 3,
				ContinueAsNewEvents: 50, MaxConcurrentTopics: DefaultMaxConcurrentTopics, State: next[0].State}, next[0])
			require.Equal(t, int64(40), next[1].State.AfterTopicID)

			require.Equal(t, 1, q.enqueues, "EnqueueTopics runs once per run")
			var cursors []int64
			for _, l := range q.lists {
				require.Equal(t, 2, l.Limit)
				cursors = append(cursors, l.AfterTopicID)
			}
			require.Equal(t, []int64{0, 20, 40}, cursors)

			var rows int64
			for _, topic := range q.topics {
				rows += topic.TopicID
			}
			require.Equal(t, StoreOptimizerResult{Optimized: n, Rows: rows, InputChunks: 10 * n,
				OutputChunks: n, InputBytes: int64(1000 * n), OutputBytes: int64(900 * n)}, res)
			require.Len(t, children, n)
			for _, c := range children {
				require.Equal(t, int64(5000), c.MaxChunkSizeBytes)
				require.Equal(t, 3, c.TopicParallelism)
			}
		})
	}
}

func TestStoreOptimizerBoundsTopicsInFlightAndAnswersProgress(t *testing.T) {
	env := newTestEnv(t)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	// The run's task queue is part of its children's workflow IDs.
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "storeopt-staging"})
	summaries := recordSummaries(env)
	// Start order differs from sorted order: the query sorts.
	q := newQueue("seq/c", "seq/a", "seq/b", "seq/f", "seq/e", "seq/d", "seq/g")
	q.install(env)
	var mu sync.Mutex
	running, maxRunning := 0, 0
	var optionErrs []string
	mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		// Checked here rather than with require: this runs on a workflow goroutine.
		if id := workflow.GetInfo(ctx).WorkflowExecution.ID; id != "storeopt-topic:storeopt-staging:"+in.Locator {
			optionErrs = append(optionErrs, "workflow ID "+id)
		}
		if sa, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(TopicLocatorKey); !ok || sa != in.Locator {
			optionErrs = append(optionErrs, fmt.Sprintf("search attribute %q %v", sa, ok))
		}
		mu.Lock()
		running++
		maxRunning = max(maxRunning, running)
		mu.Unlock()
		err := workflow.Sleep(ctx, time.Minute)
		mu.Lock()
		running--
		mu.Unlock()
		return childResult(in), err
	})
	w := watchProgress[Progress](t, env, 30*time.Second, 90*time.Second)

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, MaxConcurrentTopics: 3, MaxConcurrentSmallTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, optionErrs)
	require.Equal(t, 3, maxRunning)
	w.query()
	// 7 topics of 1000 bytes, 3 at a time, one minute each: the answer is the state after the
	// last child started or finished (UpdatedAt), the rate is the finished topics' bytes per
	// second since the start, the ETA the remaining bytes at that rate.
	eta80, eta0 := 80.0, 0.0
	require.Equal(t, []Progress{
		{InFlight: 3, InFlightLocators: []string{"seq/a", "seq/b", "seq/c"}, Queued: 7, QueuedBytes: 7000,
			StartedAt: t0, UpdatedAt: t0},
		{Done: 3, InFlight: 3, InFlightLocators: []string{"seq/d", "seq/e", "seq/f"}, Queued: 7, QueuedBytes: 7000,
			Finished: 3, FinishedBytes: 3000, Rows: 60, InputBytes: 3000, OutputBytes: 2700,
			StartedAt: t0, UpdatedAt: t0.Add(time.Minute), ElapsedSeconds: 60, BytesPerSecond: 50, ETASeconds: &eta80},
		{Done: 7, InFlightLocators: []string{}, Queued: 7, QueuedBytes: 7000, Finished: 7, FinishedBytes: 7000,
			Rows: 280, InputBytes: 7000, OutputBytes: 6300, StartedAt: t0, UpdatedAt: t0.Add(3 * time.Minute),
			ElapsedSeconds: 180, BytesPerSecond: 7000.0 / 180, ETASeconds: &eta0, Ended: true},
	}, w.answers)

	// The current details say the same in markdown.
	require.Equal(t, `### Optimizing topics: 0 of 7 finished
- **optimized** 0 · **failed** 0 · **skipped** 0 · **nothing to do** 0 · **in flight** 3
- **bytes** 0 B of 7.0 kB queued (0%) · 0 B/s
- **elapsed** 0s · **ETA** unknown
- **in flight** `+"`seq/a`, `seq/b`, `seq/c`"+`
- **policy** full · **scope** all
`, w.details[0])
	require.Equal(t, `### Optimizing topics: 3 of 7 finished
- **optimized** 3 · **failed** 0 · **skipped** 0 · **nothing to do** 0 · **in flight** 3
- **bytes** 3.0 kB of 7.0 kB queued (42%) · 50 B/s
- **elapsed** 1m0s · **ETA** 1m20s (12:02:20 UTC)
- **written** 60 rows, 3.0 kB → 2.7 kB
- **in flight** `+"`seq/d`, `seq/e`, `seq/f`"+`
- **policy** full · **scope** all
`, w.details[1])
	require.Contains(t, w.details[2], "### Run finished: 7 of 7 finished\n")
	require.Contains(t, w.details[2], "**ETA** 0s (12:03:00 UTC)")

	require.Equal(t, []string{
		"EnqueueTopics: enqueue topics for full compaction (trigger 2 L0 chunks, scope all)",
		"ListQueuedTopics: list queued topics after topic 0 (page of 100)",
	}, summaries.list())
}

func TestStoreOptimizerSkipsTopicAlreadyBeingOptimized(t *testing.T) {
	env := newTestEnv(t)
	// The same locator queued twice: the second child start finds the first one running, as a
	// start does when another run is optimizing the topic.
	q := newQueue("seq/a", "seq/a", "seq/b")
	q.install(env)
	mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		return childResult(in), workflow.Sleep(ctx, time.Minute)
	})

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, MaxConcurrentTopics: 3, MaxConcurrentSmallTopics: 3})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, res.Optimized)
	require.Equal(t, 1, res.Skipped)
	require.Zero(t, res.Failed)
}

func TestIsAlreadyStarted(t *testing.T) {
	require.True(t, isAlreadyStarted(fmt.Errorf("start child: %w", &temporal.ChildWorkflowExecutionAlreadyStartedError{})))
	require.False(t, isAlreadyStarted(temporal.NewApplicationError("boom", "X")))
	require.False(t, isAlreadyStarted(nil))
}

// recordReleases mocks Release: every input is appended to *released (under mu).
func recordReleases(env *testsuite.TestWorkflowEnvironment, mu *sync.Mutex, released *[]activities.ReleaseInput) {
	env.OnActivity(a.Release, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseInput) (activities.ReleaseResult, error) {
			mu.Lock()
			defer mu.Unlock()
			*released = append(*released, in)
			return activities.ReleaseResult{Released: true}, nil
		})
}

func TestStoreOptimizerRecordsFailedTopicsFromRealChildren(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/a", "seq/b", "seq/c")
	q.install(env)
	var released []activities.ReleaseInput
	var mu sync.Mutex
	env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(activities.LeaseResult{}, nil)
	env.OnActivity(a.ReadSort, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReadSortInput) (activities.ReadSortResult, error) {
			if in.TopicID == 20 {
				return activities.ReadSortResult{}, temporal.NewNonRetryableApplicationError(
					"chunk tp_b/data/00001.parquet: schema differs from chunk 00000", activities.ErrTypeInput, nil)
			}
			return activities.ReadSortResult{Groups: 2}, nil
		})
	env.OnActivity(a.WriteChunks, mock.Anything, mock.Anything).Return(activities.WriteChunksResult{}, nil)
	env.OnActivity(a.Commit, mock.Anything, mock.Anything).Return(activities.CommitResult{
		InputChunks: 5, OutputChunks: 1, Rows: 50, InputBytes: 500, OutputBytes: 400}, nil)
	recordReleases(env, &mu, &released)

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, StoreOptimizerResult{
		Optimized: 2, Failed: 1,
		Failures: []TopicFailure{{Locator: "seq/b",
			Error: "topic seq/b: read-sort: chunk tp_b/data/00001.parquet: schema differs from chunk 00000"}},
		Rows: 100, InputChunks: 10, OutputChunks: 2, InputBytes: 1000, OutputBytes: 800,
	}, res)
	require.Equal(t, []activities.ReleaseInput{{TopicID: 20,
		Reason:    "read-sort failed: chunk tp_b/data/00001.parquet: schema differs from chunk 00000",
		ErrorType: activities.ErrTypeInput,
		Error:     "chunk tp_b/data/00001.parquet: schema differs from chunk 00000"}}, released)
}

func TestStoreOptimizerCapsRecordedFailures(t *testing.T) {
	failing := func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		return OptimizeTopicResult{}, topicFailure(in.Locator, &stepError{step: stepCommit,
			err: temporal.NewNonRetryableApplicationError("lease lost", activities.ErrTypeLeaseLost, nil)})
	}
	var locators []string
	for i := range 150 {
		locators = append(locators, fmt.Sprintf("seq/t%03d", i))
	}

	t.Run("one page", func(t *testing.T) {
		env := newTestEnv(t)
		newQueue(locators...).install(env)
		mockChildren(env, failing)

		env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, PageSize: 1000, MaxConcurrentTopics: 50})

		require.NoError(t, env.GetWorkflowError())
		var res StoreOptimizerResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, 150, res.Failed)
		require.Len(t, res.Failures, MaxRecordedFailures)
		recorded := make([]string, 0, len(res.Failures))
		for _, f := range res.Failures {
			recorded = append(recorded, f.Locator)
		}
		// Children finish in any order: 100 distinct topics of the page are recorded.
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(recorded))), MaxRecordedFailures)
		require.Subset(t, locators, recorded)
		require.Contains(t, res.Failures, TopicFailure{Locator: "seq/t000", Error: "topic seq/t000: commit: lease lost"})
	})

	t.Run("carried over continue-as-new", func(t *testing.T) {
		env := newTestEnv(t)
		newQueue(locators[:3]...).install(env)
		mockChildren(env, failing)
		state := &RunState{Enqueued: true, Result: StoreOptimizerResult{Failed: 99,
			Failures: slices.Repeat([]TopicFailure{{Locator: "old", Error: "old"}}, 99)}}

		env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 1, State: state})

		var res StoreOptimizerResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, 102, res.Failed)
		require.Len(t, res.Failures, MaxRecordedFailures)
		require.Equal(t, "seq/t000", res.Failures[99].Locator)
	})
}

func TestStoreOptimizerCancelCancelsChildrenWhichRelease(t *testing.T) {
	env := newTestEnv(t)
	q := newQueue("seq/a", "seq/b", "seq/c")
	q.install(env)
	m := &topicMocks{groups: 2, writeDelay: time.Hour}
	m.install(env)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, MaxConcurrentTopics: 2, MaxConcurrentSmallTopics: 2})

	err := env.GetWorkflowError()
	require.True(t, temporal.IsCanceledError(err), "want canceled, got %v", err)
	var releases int
	for _, c := range m.log.list() {
		if c == "release: canceled during write-chunks 0/2" {
			releases++
		}
	}
	require.Equal(t, 2, releases, "both topics in flight release: %v", m.log.list())
	require.NotContains(t, m.log.list(), "commit")
}

// storeFaultErr is the ErrTypeStore error an activity returns when store fails with cause.
func storeFaultErr(locator, store, cause string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("topic %s: store %s: %s (open %s/x.tmp); fix the store", locator, store, cause, store),
		activities.ErrTypeStore, nil, activities.StoreFault{Store: store, Cause: cause})
}

// TestStoreOptimizerStopsOnAStoreFault: real children whose WriteChunks fail with the same
// store fault: after StoreFaultLimit of them the run starts no further topic, waits for the one
// in flight, and says once what is wrong; the topics it did not start are counted (across a
// continue-as-new) and the store faults do not count toward quarantine (Release is told the
// error type).
func TestStoreOptimizerStopsOnAStoreFault(t *testing.T) {
	var locators []string
	for i := range 10 {
		locators = append(locators, fmt.Sprintf("seq/t%d", i))
	}
	q := newQueue(locators...)
	var mu sync.Mutex
	var released []activities.ReleaseInput
	var writes int
	setup := func(env *testsuite.TestWorkflowEnvironment) {
		q.install(env)
		env.OnActivity(a.Lease, mock.Anything, mock.Anything).Return(activities.LeaseResult{}, nil)
		env.OnActivity(a.ReadSort, mock.Anything, mock.Anything).Return(activities.ReadSortResult{Groups: 1}, nil)
		env.OnActivity(a.WriteChunks, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.WriteChunksInput) (activities.WriteChunksResult, error) {
				mu.Lock()
				writes++
				mu.Unlock()
				return activities.WriteChunksResult{}, storeFaultErr(fmt.Sprintf("seq/t%d", in.TopicID/10-1), "file:///s", "read-only file system")
			})
		recordReleases(env, &mu, &released)
	}

	next, res := runLegs(t, StoreOptimizerInput{BatchTopics: 1, PageSize: 6, MaxConcurrentTopics: 2, MaxConcurrentSmallTopics: 2}, setup)

	require.Empty(t, next, "a run stopped by a store fault does not continue as new")
	require.Equal(t, "store file:///s: read-only file system (open file:///s/x.tmp); fix the store", res.StoreFault)
	require.Zero(t, res.Optimized)
	require.Equal(t, StoreFaultLimit+1, res.Failed, "the limit, and the topic in flight when it was reached")
	require.Equal(t, 6-res.Failed, res.NotAttempted, "the rest of the page")
	require.Len(t, res.Failures, res.Failed)
	for _, f := range res.Failures {
		require.Contains(t, f.Error, "write-chunks group 0: store file:///s: read-only file system")
	}
	require.Equal(t, res.Failed, writes, "no write after the stop")
	require.Len(t, q.lists, 1, "no further page listed")
	require.Len(t, released, res.Failed)
	for _, r := range released {
		require.Equal(t, activities.ErrTypeStore, r.ErrorType)
	}
}

// TestStoreOptimizerStoreFaultStreak: only StoreFaultLimit topics in a row failing with the same
// store fault stop a run: an optimized topic, another failure or another store fault in between
// start the count again; topics skipped do not interrupt it; the streak is carried across
// continue-as-new.
func TestStoreOptimizerStoreFaultStreak(t *testing.T) {
	fault := func(store, cause string) func(string) error {
		return func(locator string) error {
			return topicFailure(locator, &stepError{step: stepReadSort, err: storeFaultErr(locator, store, cause)})
		}
	}
	ro, other := fault("file:///s", "read-only file system"), fault("file:///t", "read-only file system")
	denied := fault("file:///s", "permission denied")
	input := func(locator string) error {
		return topicFailure(locator, &stepError{step: stepReadSort,
			err: temporal.NewNonRetryableApplicationError("bad chunk", activities.ErrTypeInput, nil)})
	}
	for _, tc := range []struct {
		name                 string
		outcomes             []func(string) error // nil: optimized
		pageSize             int
		failed, notAttempted int
		unlisted             int // topics of pages never listed
		stopped              bool
	}{
		{name: "three in a row", outcomes: []func(string) error{ro, ro, ro, nil, nil}, failed: 3, notAttempted: 2, stopped: true},
		{name: "optimized in between", outcomes: []func(string) error{ro, ro, nil, ro, ro, nil}, failed: 4},
		{name: "input failure in between", outcomes: []func(string) error{ro, ro, input, ro, ro, nil}, failed: 5},
		{name: "other store", outcomes: []func(string) error{ro, ro, other, ro, nil}, failed: 4},
		{name: "other cause", outcomes: []func(string) error{ro, denied, ro, denied, nil}, failed: 4},
		// Pages of 2: the fault stops the run in the second page; the third is never listed.
		{name: "across pages", outcomes: []func(string) error{ro, ro, ro, nil, nil}, pageSize: 2, failed: 3, notAttempted: 1, unlisted: 1, stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var locators []string
			outcome := map[string]func(string) error{}
			for i, o := range tc.outcomes {
				l := fmt.Sprintf("seq/t%d", i)
				locators = append(locators, l)
				outcome[l] = o
			}
			q := newQueue(locators...)
			_, res := runLegs(t, StoreOptimizerInput{BatchTopics: 1, MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 1, PageSize: tc.pageSize},
				func(env *testsuite.TestWorkflowEnvironment) {
					q.install(env)
					mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
						if o := outcome[in.Locator]; o != nil {
							return OptimizeTopicResult{}, o(in.Locator)
						}
						return childResult(in), nil
					})
				})
			require.Equal(t, tc.failed, res.Failed)
			require.Equal(t, tc.notAttempted, res.NotAttempted)
			require.Equal(t, len(tc.outcomes)-tc.failed-tc.notAttempted-tc.unlisted, res.Optimized)
			require.Equal(t, tc.stopped, res.StoreFault != "", "StoreFault %q", res.StoreFault)
		})
	}
}

// TestStoreOptimizerDryRunOnlyPlans: a dry run pages through PlanTopics with the run's trigger
// and scope, starts no child and queues nothing, and totals the plans (a topic with nothing to
// do or bad input counts apart).
func TestStoreOptimizerDryRunOnlyPlans(t *testing.T) {
	env := newTestEnv(t)
	summaries := recordSummaries(env)
	var mu sync.Mutex
	var inputs []activities.PlanTopicsInput
	env.OnActivity(a.PlanTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PlanTopicsInput) (activities.PlanTopicsResult, error) {
			mu.Lock()
			defer mu.Unlock()
			inputs = append(inputs, in)
			plan := func(id int64) activities.TopicPlan {
				return activities.TopicPlan{TopicID: id, Locator: fmt.Sprintf("seq/t%d", id), Policy: "tiered",
					PlanTotals: activities.PlanTotals{InputChunks: 10, InputBytes: 1000, InputArrowBytes: 3000, Rows: 50,
						OutputChunks: 1, OutputBytes: 900, Seconds: 1.5}, Estimate: "default"}
			}
			if in.AfterTopicID == 0 {
				return activities.PlanTopicsResult{Topics: []activities.TopicPlan{plan(1), plan(2), plan(3)}, Listed: 3,
					NextAfterTopicID: 3, Quarantined: 1}, nil
			}
			bad := plan(4)
			bad.Error = "topic seq/t4: chunk x: not a Parquet file"
			return activities.PlanTopicsResult{Topics: []activities.TopicPlan{bad,
				{TopicID: 5, Locator: "seq/t5", Policy: "tiered", NothingToDo: true}}, Listed: 2, NextAfterTopicID: 5}, nil
		})
	mockChildren(env, func(workflow.Context, OptimizeTopicInput) (OptimizeTopicResult, error) {
		t.Error("a dry run started a child")
		return OptimizeTopicResult{}, nil
	})

	in := StoreOptimizerInput{DryRun: true, PageSize: 3, Policy: "auto", MinChunks: 4, MaxChunkSizeBytes: 5000,
		Scope: []string{"sequence:seq"}}
	env.ExecuteWorkflow(StoreOptimizerWorkflow, in)

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []activities.PlanTopicsInput{
		{Policy: "auto", MinChunks: 4, MaxChunkSizeBytes: 5000, Scope: []string{"sequence:seq"}, Limit: 3},
		{Policy: "auto", MinChunks: 4, MaxChunkSizeBytes: 5000, Scope: []string{"sequence:seq"}, AfterTopicID: 3, Limit: 3},
	}, inputs)
	require.NotNil(t, res.DryRun)
	d := *res.DryRun
	require.Len(t, d.Topics, 5)
	d.Topics = nil
	require.Equal(t, DryRunReport{Planned: 5, NothingToDo: 1, WouldFail: 1, PlanTotals: activities.PlanTotals{
		InputChunks: 30, InputBytes: 3000, InputArrowBytes: 9000, Rows: 150, OutputChunks: 3, OutputBytes: 2700,
		Seconds: 4.5}}, d)
	require.Equal(t, 1, res.Quarantined)
	require.Zero(t, res.Optimized)
	require.Equal(t, []string{
		"PlanTopics: plan topics after topic 0 (dry run, page of 3)",
		"PlanTopics: plan topics after topic 3 (dry run, page of 3)",
	}, summaries.list())
	require.Contains(t, currentDetails(t, env), "### Dry run: 5 topics planned")
}

// TestStoreOptimizerSlowTopicDoesNotStallLaterPages: one large topic that takes an hour among
// small ones of a minute, over pages of 2: the small topics of every later page are optimized
// while the large one runs (the window slides across pages), no more than the limits are in
// flight at once, and the run ends once the large topic is done. Executions recorded before the
// sliding window waited for each page's children before listing the next page (replayed from
// saved histories).
func TestStoreOptimizerSlowTopicDoesNotStallLaterPages(t *testing.T) {
	env := newTestEnv(t)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	q := newQueue("seq/big", "seq/s1", "seq/s2", "seq/s3", "seq/s4", "seq/s5", "seq/s6", "seq/s7")
	q.topics[0].Bytes = 10_000 // more than MaxChunkSizeBytes: a large topic
	q.install(env)
	var mu sync.Mutex
	finished := map[string]time.Time{}
	smallRunning, maxSmall := 0, 0
	mockChildren(env, func(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
		d := time.Minute
		if in.Locator == "seq/big" {
			d = time.Hour
		} else {
			mu.Lock()
			smallRunning++
			maxSmall = max(maxSmall, smallRunning)
			mu.Unlock()
		}
		err := workflow.Sleep(ctx, d)
		mu.Lock()
		if in.Locator != "seq/big" {
			smallRunning--
		}
		finished[in.Locator] = workflow.Now(ctx)
		mu.Unlock()
		return childResult(in), err
	})

	env.ExecuteWorkflow(StoreOptimizerWorkflow, StoreOptimizerInput{BatchTopics: 1, PageSize: 2, MaxChunkSizeBytes: 5000,
		MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 2})

	require.NoError(t, env.GetWorkflowError())
	var res StoreOptimizerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 8, res.Optimized)
	require.Equal(t, 2, maxSmall, "small topics in flight")
	require.Len(t, finished, 8)
	big := finished["seq/big"]
	require.Equal(t, t0.Add(time.Hour), big)
	for l, at := range finished {
		if l != "seq/big" {
			// 7 small topics, 2 at a time, a minute each: all done within 4 minutes.
			require.LessOrEqual(t, at.Sub(t0), 4*time.Minute, "%s finished at %v while the large topic ran", l, at.Sub(t0))
		}
	}
	var cursors []int64
	for _, l := range q.lists {
		cursors = append(cursors, l.AfterTopicID)
	}
	require.Equal(t, []int64{0, 20, 40, 60, 80}, cursors, "every page listed once, in order, in one execution")
}

// planCatalog is a mocked PlanTopics over topics 1..n (topic 3 has nothing to do), shared by
// the executions of one dry run.
type planCatalog struct {
	n int

	mu      sync.Mutex
	cursors []int64
}

func (c *planCatalog) install(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(a.PlanTopics, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PlanTopicsInput) (activities.PlanTopicsResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cursors = append(c.cursors, in.AfterTopicID)
			var res activities.PlanTopicsResult
			for id := in.AfterTopicID + 1; id <= int64(c.n) && res.Listed < in.Limit; id++ {
				tp := activities.TopicPlan{TopicID: id, Locator: fmt.Sprintf("seq/t%d", id), Policy: "full",
					PlanTotals: activities.PlanTotals{InputChunks: 10, InputBytes: 1000, Rows: id, OutputChunks: 1,
						OutputBytes: 900, Seconds: 0.5}}
				if id == 3 {
					tp.PlanTotals, tp.NothingToDo = activities.PlanTotals{}, true
				}
				res.Topics = append(res.Topics, tp)
				res.Listed++
				res.NextAfterTopicID = id
			}
			if in.AfterTopicID == 0 {
				res.Quarantined = 2
			}
			return res, nil
		})
}

// TestStoreOptimizerDryRunContinuesAsNew: a dry run whose history reaches ContinueAsNewEvents
// continues as new after each full page from the cursor, carrying its report (plans, counts,
// totals) and the quarantined topics of its first page; its final report is the one a single
// execution gives. Executions recorded before the change plan every page in one history.
func TestStoreOptimizerDryRunContinuesAsNew(t *testing.T) {
	want := DryRunReport{Planned: 5, NothingToDo: 1, PlanTotals: activities.PlanTotals{InputChunks: 40,
		InputBytes: 4000, Rows: 1 + 2 + 4 + 5, OutputChunks: 4, OutputBytes: 3600, Seconds: 2}}
	in := StoreOptimizerInput{DryRun: true, PageSize: 2, ContinueAsNewEvents: 50}
	check := func(t *testing.T, res StoreOptimizerResult) {
		t.Helper()
		require.NotNil(t, res.DryRun)
		got := *res.DryRun
		var ids []int64
		for _, tp := range got.Topics {
			ids = append(ids, tp.TopicID)
		}
		require.Equal(t, []int64{1, 2, 3, 4, 5}, ids, "every plan, in topic ID order")
		got.Topics = nil
		require.Equal(t, want, got)
		require.Equal(t, 2, res.Quarantined, "the first page's quarantined topics are kept")
	}

	t.Run("continues as new", func(t *testing.T) {
		c := &planCatalog{n: 5}
		next, res := runLegs(t, in, func(env *testsuite.TestWorkflowEnvironment) {
			env.SetCurrentHistoryLength(50)
			c.install(env)
		})
		require.Equal(t, []int64{0, 2, 4}, c.cursors, "one page per execution, from the carried cursor")
		require.Len(t, next, 2, "each full page continues as new; the short one ends the run")
		for i, n := range next {
			require.True(t, n.DryRun)
			require.Equal(t, int64(2*(i+1)), n.State.AfterTopicID)
			require.NotNil(t, n.State.Result.DryRun)
			require.Equal(t, 2*(i+1), n.State.Result.DryRun.Planned, "the report so far is carried")
			require.Len(t, n.State.Result.DryRun.Topics, 2*(i+1))
			require.Equal(t, 2, n.State.Result.Quarantined)
		}
		check(t, res)
	})

	t.Run("recorded before the change", func(t *testing.T) {
		c := &planCatalog{n: 5}
		env := newTestEnv(t)
		env.SetCurrentHistoryLength(50)
		env.OnGetVersion(dryRunContinueAsNewChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		c.install(env)
		env.ExecuteWorkflow(StoreOptimizerWorkflow, in)
		require.NoError(t, env.GetWorkflowError())
		var res StoreOptimizerResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, []int64{0, 2, 4}, c.cursors)
		check(t, res)
	})
}
