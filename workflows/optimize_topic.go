package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// Defaults of OptimizeTopicInput.
const (
	DefaultMaxChunkSizeBytes = 256000000
	DefaultTopicParallelism  = 2
)

// Steps of an optimization, as the progress query reports them.
const (
	stepLease       = "lease"
	stepReadSort    = "read-sort"
	stepWriteChunks = "write-chunks"
	stepCommit      = "commit"
	stepDone        = "done"
)

// localCatalogStepsChange is the workflow.GetVersion change ID of Lease and Commit run as local
// activities. Retired: only version 1 is supported (docs/contributing.md#supported-histories).
const localCatalogStepsChange = "local-catalog-steps"

// OptimizeTopicInput is the input of OptimizeTopicWorkflow.
type OptimizeTopicInput struct {
	TopicID int64
	Locator string // "<sequence>/<topic/path>", used in errors, logs and the workflow ID
	// MaxChunkSizeBytes is the soft size limit of one output chunk, bytes; 0 = 256000000.
	MaxChunkSizeBytes int64
	// TopicParallelism is how many WriteChunks activities run at once; 0 = 2.
	TopicParallelism int
	// FromRun is true when a StoreOptimizerWorkflow started this optimization from its queue: a
	// topic that another run optimized in the meantime is then skipped. A manual start (false)
	// optimizes the topic again even if it was optimized before.
	FromRun bool
	// HeartbeatTimeout of ReadSort and WriteChunks; 0 = DefaultHeartbeatTimeout (one minute).
	HeartbeatTimeout time.Duration
	// Policy is the compaction policy: "full" (default), "tiered", "leveled" or "auto" (resolved
	// for the topic by Lease). MinChunks is the run's trigger (L0 chunks; 0 = 2), used to skip a
	// topic that no longer needs the compaction when FromRun.
	Policy    string
	MinChunks int
}

// OptimizeTopicResult is what the commit of one topic did; byte counts are Parquet object sizes.
type OptimizeTopicResult struct {
	Locator      string
	InputChunks  int
	OutputChunks int
	Rows         int64
	InputBytes   int64
	OutputBytes  int64
	// AlreadyCommitted is true when the topic had already been switched by this run (a retried
	// commit): nothing was done twice.
	AlreadyCommitted bool
	// Skipped is true when the topic was left alone: another run optimized it after this run
	// listed it (already optimized) or another run that is still open holds its lease (leased).
	// Not NothingToDo (docs/design.md#vocabulary).
	Skipped bool
	// Quarantined is set (and nothing done) when another run's failure quarantined the topic
	// after this run listed it.
	Quarantined *activities.QuarantinedTopic
	// Policy is the policy applied (auto resolved); NothingToDo is true when it selected no chunk
	// (nothing to join or merge): the lease was given back, nothing written.
	Policy      string
	NothingToDo bool
}

// OptimizeTopicWorkflow rewrites one topic into a fresh prefix and switches the catalog to it:
// Lease, ReadSort, WriteChunks for every output group (at most TopicParallelism at once), Commit.
//
// On failure or cancellation it calls Release from a disconnected context (so it also runs after a
// cancel), which drops the lease if it is still this run's and deletes the partial output. A failed
// optimization returns a non-retryable ApplicationError of type ErrTypeTopicFailed whose message
// names the locator and step ("topic run_7/imu: read-sort: chunk …: no column timestamp_ns") and
// whose cause chain holds the activity's error. A canceled one returns the cancellation error.
//
// Queries: ProgressQuery returns a TopicProgress (Step is the current step: "lease",
// "read-sort", "write-chunks 3/10", "commit", "done"; rows and bytes written of the plan, ETA),
// which the current details (markdown) show too, updated at every step and written group.
// Every activity carries a summary ("write chunk 3/10 of run_7/imu").
func OptimizeTopicWorkflow(ctx workflow.Context, in OptimizeTopicInput) (OptimizeTopicResult, error) {
	o := &topicOptimization{in: in}
	if err := o.setup(ctx); err != nil {
		return OptimizeTopicResult{}, err
	}
	return o.run(ctx)
}

// topicOptimization is the state of one OptimizeTopicWorkflow execution.
type topicOptimization struct {
	in       OptimizeTopicInput
	progress topicProgress // what the progress query and the current details report
	policy   string        // the lease's policy (auto resolved)
	logger   log.Logger
}

func (o *topicOptimization) setup(ctx workflow.Context) error {
	if o.in.MaxChunkSizeBytes <= 0 {
		o.in.MaxChunkSizeBytes = DefaultMaxChunkSizeBytes
	}
	if o.in.TopicParallelism <= 0 {
		o.in.TopicParallelism = DefaultTopicParallelism
	}
	o.logger = log.With(workflow.GetLogger(ctx), "TopicLocator", o.in.Locator, "TopicID", o.in.TopicID)
	o.progress.Locator, o.progress.Policy, o.progress.StartedAt = o.in.Locator, o.in.Policy, workflow.Now(ctx)
	o.setStep(ctx, stepLease)
	return workflow.SetQueryHandler(ctx, ProgressQuery, func() (TopicProgress, error) {
		return o.progress.TopicProgress, nil
	})
}

// run runs the topic pipeline (activities.RunTopicPipeline, which makes every decision) with the
// workflow's steps and turns its end into the workflow's result or error. Lease and Commit are
// local activities.
func (o *topicOptimization) run(ctx workflow.Context) (OptimizeTopicResult, error) {
	workflow.GetVersion(ctx, localCatalogStepsChange, 1, 1)
	// A topic workflow's steps never fail the pipeline itself (their release or give-back
	// failures are logged), so err is nil.
	p, err := activities.RunTopicPipeline(&topicSteps{o: o, ctx: ctx}, activities.TopicWorkflowSteps, o.in.Policy)
	result := OptimizeTopicResult{Locator: o.in.Locator}
	switch {
	case err == nil && p.Decision == activities.DecisionCommitted:
		c := p.Commit
		result = OptimizeTopicResult{Locator: o.in.Locator, Policy: o.policy, InputChunks: c.InputChunks,
			OutputChunks: c.OutputChunks, Rows: c.Rows, InputBytes: c.InputBytes, OutputBytes: c.OutputBytes,
			AlreadyCommitted: c.AlreadyCommitted}
	case err == nil && p.Decision == activities.DecisionAlreadyOptimized:
		o.logger.Info("Topic skipped: already optimized by another run")
		result.Skipped = true
	case err == nil && p.Decision == activities.DecisionLeasedByLiveRun:
		// Another run that is still open optimizes the topic; it keeps its lease
		// (docs/design.md#one-optimization-per-topic).
		h := p.Lease.Holder
		if h == nil {
			h = &activities.LeaseHolder{}
		}
		o.logger.Info("Topic skipped: leased by a live run", "HolderWorkflowID", h.WorkflowID, "HolderRunID", h.RunID)
		result.Skipped = true
	case err == nil && p.Decision == activities.DecisionQuarantined:
		q := p.Lease.Quarantined
		o.logger.Warn("Topic skipped: quarantined since this run listed it", "Reason", q.Reason, "Failures", q.Failures)
		result.Quarantined = q
	case err == nil && p.Decision == activities.DecisionNothingToDo:
		result.Policy, result.NothingToDo = o.policy, true
	default: // failed or canceled: released
		if ctx.Err() != nil {
			// Canceled: whatever the last activity reported (a hung activity that never
			// acknowledged the cancellation ends in a heartbeat timeout), the optimization
			// ends canceled, not failed, and the topic stays queued.
			return OptimizeTopicResult{}, ctx.Err()
		}
		if err == nil {
			err = &stepError{step: p.Step, err: p.Err}
		}
		return OptimizeTopicResult{}, topicFailure(o.in.Locator, err)
	}
	o.setStep(ctx, stepDone)
	o.logger.Info("Topic optimized", "InputChunks", result.InputChunks, "OutputChunks", result.OutputChunks,
		"Rows", result.Rows, "InputBytes", result.InputBytes, "OutputBytes", result.OutputBytes,
		"AlreadyCommitted", result.AlreadyCommitted)
	return result, nil
}

// topicSteps are the steps of activities.RunTopicPipeline as OptimizeTopicWorkflow runs them:
// activities (Lease and Commit local ones), each under the workflow's options and summaries.
type topicSteps struct {
	o   *topicOptimization
	ctx workflow.Context
}

func (s *topicSteps) Lease() (activities.LeaseResult, error) { return s.o.lease(s.ctx) }

// CommittedByThisRun is false: a topic workflow commits once, after its lease, so a lease that
// finds the topic optimized found another run's commit.
func (s *topicSteps) CommittedByThisRun() (activities.CommitResult, string, bool, error) {
	return activities.CommitResult{}, "", false, nil
}

func (s *topicSteps) ReadSort(policy string) (activities.ReadSortResult, error) {
	s.o.policy = policy
	return s.o.readSort(s.ctx)
}

func (s *topicSteps) WriteChunks(groups int) (string, error) {
	err := s.o.writeChunks(s.ctx, groups)
	var se *stepError
	if errors.As(err, &se) {
		return se.step, se.err
	}
	return stepWriteChunks, err
}

func (s *topicSteps) Commit() (activities.CommitResult, error) { return s.o.commit(s.ctx) }

func (s *topicSteps) GiveBackNothingToDo(string) error {
	s.o.logger.Info("Nothing to do", "Policy", s.o.policy)
	s.o.giveBack(s.ctx)
	return nil
}

func (s *topicSteps) Release(f activities.StepFailure) error {
	s.o.release(s.ctx, &stepError{step: f.Step, err: f.Err})
	return nil
}

// GiveBack is not called for a topic workflow's steps (activities.TopicWorkflowSteps: Temporal
// retried them, so their errors fail the topic); it releases the topic as a failure would.
func (s *topicSteps) GiveBack(f activities.StepFailure) error { return s.Release(f) }

func (s *topicSteps) Canceled() bool { return s.ctx.Err() != nil }

// lease takes the topic's queue row for this run and a fresh data prefix.
func (o *topicOptimization) lease(ctx workflow.Context) (activities.LeaseResult, error) {
	o.setStep(ctx, stepLease)
	var lease activities.LeaseResult
	err := o.catalogStep(o.leaseSummary(withCatalogOptions(ctx)), a.Lease, activities.LeaseInput{
		TopicID: o.in.TopicID, SkipIfOptimized: o.in.FromRun, Policy: o.in.Policy, MinChunks: o.in.MinChunks,
		MaxChunkSizeBytes: o.in.MaxChunkSizeBytes}).Get(ctx, &lease)
	if err != nil {
		return lease, err
	}
	o.logger.Info("Lease taken", "OldPrefix", lease.OldPrefix, "FreshPrefix", lease.FreshPrefix)
	return lease, nil
}

// catalogStep runs Lease or Commit with the catalog options and summary of ctx as a local
// activity: no activity task, no round trip through the server, so the short catalog steps of a
// small topic cost less than its data steps.
func (o *topicOptimization) catalogStep(ctx workflow.Context, activity, in any) workflow.Future {
	return workflow.ExecuteLocalActivity(withLocalOptions(ctx), activity, in)
}

// readSort validates the input chunks and stores the plan; the result says how many output groups
// to write.
func (o *topicOptimization) readSort(ctx workflow.Context) (activities.ReadSortResult, error) {
	o.setStep(ctx, stepReadSort)
	var plan activities.ReadSortResult
	err := workflow.ExecuteActivity(o.readSortSummary(withDataOptions(ctx, o.in.HeartbeatTimeout)), a.ReadSort, activities.ReadSortInput{
		TopicID:           o.in.TopicID,
		MaxChunkSizeBytes: o.in.MaxChunkSizeBytes,
		Policy:            o.policy,
	}).Get(ctx, &plan)
	if err != nil {
		return plan, err
	}
	if plan.NothingToDo {
		return plan, nil
	}
	o.planned(plan)
	o.logger.Info("Plan stored", "InputChunks", plan.InputChunks, "InputRows", plan.InputRows,
		"InputBytes", plan.InputBytes, "OutputChunks", plan.OutputChunks, "Groups", plan.Groups)
	return plan, nil
}

// writeChunks writes groups 0..groups-1 of the plan, at most TopicParallelism at once. After the
// first failure no further group starts and the groups in flight are canceled and awaited, so
// nothing writes any more when Release runs.
func (o *topicOptimization) writeChunks(ctx workflow.Context, groups int) error {
	o.progress.writeStart = workflow.Now(ctx)
	o.setStep(ctx, fmt.Sprintf("%s 0/%d", stepWriteChunks, groups))
	wctx, cancel := workflow.WithCancel(withDataOptions(ctx, o.in.HeartbeatTimeout))
	defer cancel()
	var failed error
	written := 0
	w := newWindows(ctx, o.in.TopicParallelism, 0) // one kind of future only
	for group := 0; group < groups; group++ {
		w.ready(false)
		if failed != nil || ctx.Err() != nil {
			break
		}
		f := workflow.ExecuteActivity(o.writeSummary(wctx, group), a.WriteChunks,
			activities.WriteChunksInput{TopicID: o.in.TopicID, Group: group})
		w.add(false, f, func(f workflow.Future) {
			var res activities.WriteChunksResult
			if err := f.Get(ctx, &res); err != nil {
				if failed == nil {
					failed = &stepError{step: fmt.Sprintf("%s group %d", stepWriteChunks, group), err: err}
					cancel()
				}
				return
			}
			written++
			o.groupWritten(res)
			o.setStep(ctx, fmt.Sprintf("%s %d/%d", stepWriteChunks, written, groups))
		})
	}
	w.wait()
	if failed == nil && ctx.Err() != nil {
		// Canceled before any group failed (with no group in flight, nothing reported it).
		failed = &stepError{step: stepWriteChunks, err: ctx.Err()}
	}
	return failed
}

// commit verifies the staged output and switches the topic.
func (o *topicOptimization) commit(ctx workflow.Context) (activities.CommitResult, error) {
	o.setStep(ctx, stepCommit)
	var c activities.CommitResult
	err := o.catalogStep(o.commitSummary(withCatalogOptions(ctx)), a.Commit,
		activities.CommitInput{TopicID: o.in.TopicID}).Get(ctx, &c)
	return c, err
}

// giveBack gives the lease back when there was nothing to do: Release without a failure, which
// never counts toward quarantine. A failed release is logged; the topic stays queued and the
// next run's lease takes it over.
func (o *topicOptimization) giveBack(ctx workflow.Context) {
	var res activities.ReleaseResult
	err := workflow.ExecuteActivity(o.releaseSummary(withReleaseOptions(ctx), "nothing to do"), a.Release,
		activities.ReleaseInput{TopicID: o.in.TopicID, Reason: "nothing to do", Policy: o.policy, NothingToDo: true}).Get(ctx, &res)
	if err != nil {
		o.logger.Warn("Release after nothing to do failed", "Error", err)
	}
}

// release gives the lease back after a failure or cancellation. It runs in a disconnected context so
// that it also runs when the workflow was canceled; the activity only acts if the lease is still
// this run's. A failed release is logged: the optimization's own error is what the caller reports.
func (o *topicOptimization) release(ctx workflow.Context, cause error) {
	step := o.progress.Step
	reason, why := fmt.Sprintf("%s failed: %s", step, causeMessage(cause)), step+" failed"
	if ctx.Err() != nil {
		reason = fmt.Sprintf("canceled during %s", step)
		why = reason
	}
	// Policy (the lease's, else the one asked for) and Canceled are for the worker's metrics.
	in := activities.ReleaseInput{TopicID: o.in.TopicID, Reason: reason, Policy: cmp.Or(o.policy, o.in.Policy),
		Canceled: ctx.Err() != nil}
	// The failing activity's error type and message let Release count input failures toward
	// quarantine. Only the activity input changes (no new command), so old histories replay.
	var appErr *temporal.ApplicationError
	if ctx.Err() == nil && errors.As(cause, &appErr) {
		in.ErrorType, in.Error = appErr.Type(), appErr.Message()
	}
	rctx, _ := workflow.NewDisconnectedContext(ctx)
	var res activities.ReleaseResult
	err := workflow.ExecuteActivity(o.releaseSummary(withReleaseOptions(rctx), why), a.Release, in).Get(rctx, &res)
	if err != nil {
		o.logger.Error("Release failed; the topic stays leased until an operator releases it",
			"Reason", reason, "Error", err)
		return
	}
	o.logger.Info("Lease released", "Reason", reason, "Released", res.Released,
		"DeletedObjects", res.DeletedObjects, "Failures", res.Failures, "Quarantined", res.Quarantined)
}
