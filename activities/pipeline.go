package activities

import (
	"errors"
	"slices"

	"go.temporal.io/sdk/temporal"
)

// The topic pipeline: the one sequence of an optimization's steps and every decision between
// them, shared by OptimizeTopicWorkflow (whose steps are activities and local activities) and a
// batch of tiny topics (OptimizeSmallTopics, whose steps are in-process calls). RunTopicPipeline
// does no I/O of its own and keeps no clock: it only calls its TopicSteps, so the workflow runs
// it as workflow code (docs/design.md#workflows-do-no-io).

// TopicSteps are the steps of one topic's optimization as one caller runs them. A step returns
// the error of the activity (or call) that failed; the pipeline decides what follows.
type TopicSteps interface {
	// Lease takes the topic's queue row for this run and a fresh data prefix.
	Lease() (LeaseResult, error)
	// CommittedByThisRun answers a topic the lease found already optimized: ok with what the
	// commit did when this run committed it (a retried batch), with the policy it applied.
	CommittedByThisRun() (c CommitResult, policy string, ok bool, err error)
	// ReadSort validates the input chunks and stores the plan of the lease's policy.
	ReadSort(policy string) (ReadSortResult, error)
	// WriteChunks writes groups 0..groups-1 of the plan; a failure names its step
	// ("write-chunks group 3", or "write-chunks" when canceled between groups).
	WriteChunks(groups int) (failedStep string, err error)
	// Commit verifies the staged output and switches the topic.
	Commit() (CommitResult, error)
	// GiveBackNothingToDo gives the lease back when the policy selected nothing (Release with
	// NothingToDo); an error fails the batch.
	GiveBackNothingToDo(policy string) error
	// Release drops the lease (if still this run's) and deletes the partial output after a
	// failure or a cancellation, with the failure for quarantine and the metrics. An error fails
	// the batch (after a cancellation it is ignored).
	Release(f StepFailure) error
	// GiveBack hands the topic back to the run after a retryable error of an in-process step
	// (the lease given back, the topic left queued, nothing counted); only a batch's steps are
	// given back. An error (the topic could not be given back) fails the batch.
	GiveBack(f StepFailure) error
	// Canceled reports whether the optimization was canceled.
	Canceled() bool
}

// StepFailure is the failure of one step: its name ("lease", "read-sort", "write-chunks group 3",
// "commit"), the error, the policy (the lease's once leased, else the one asked for) and whether
// the optimization was canceled.
type StepFailure struct {
	Step     string
	Err      error
	Policy   string
	Canceled bool
}

// PipelineMode says whose steps the pipeline runs.
type PipelineMode int

const (
	// TopicWorkflowSteps are activities that Temporal retried before their error reached the
	// pipeline: every error fails the topic.
	TopicWorkflowSteps PipelineMode = iota
	// BatchSteps are in-process calls, tried once: a retryable error gives the topic back, to be
	// retried in a topic workflow of its own, and a lease lost to a takeover is a skip.
	BatchSteps
)

// PipelineDecision is how one topic's pipeline ended.
type PipelineDecision int

const (
	DecisionCommitted        PipelineDecision = iota // the topic was switched (or this run had already)
	DecisionAlreadyOptimized                         // another run optimized it since it was listed
	DecisionLeasedByLiveRun                          // another run that is still open holds its lease
	DecisionQuarantined                              // quarantined since the run listed it
	DecisionNothingToDo                              // the policy selected no chunk: lease given back
	DecisionLeaseLost                                // a batch's lease was taken over (a skip)
	DecisionFailed                                   // a step failed: released with the failure
	DecisionGivenBack                                // a batch's step failed retryably: given back
	DecisionCanceled                                 // canceled: released
)

var decisionNames = [...]string{"committed", "already-optimized", "leased-by-live-run", "quarantined",
	"nothing-to-do", "lease-lost", "failed", "given-back", "canceled"}

func (d PipelineDecision) String() string {
	if int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return "unknown"
}

// PipelineResult is the end of one topic's pipeline: the decision, the lease, the policy (the
// lease's, or the one asked for when no lease was taken), the commit of a committed topic (of
// this run's earlier commit when AlreadyOptimized led to it), and the failed step and its error.
type PipelineResult struct {
	Decision PipelineDecision
	Lease    LeaseResult
	Policy   string
	Commit   CommitResult
	Step     string
	Err      error
}

// RunTopicPipeline runs one topic's optimization: Lease (a topic optimized, quarantined or leased
// by a live run since it was listed ends there, docs/design.md#one-optimization-per-topic),
// ReadSort (nothing to do gives the lease back), WriteChunks, Commit. A step's error ends the
// topic: after a cancellation it is released; in a batch a retryable error gives it back and a
// lost lease is a skip (docs/design.md#one-bad-topic-never-stops-a-run); otherwise it is released
// with the failure, which counts toward quarantine (docs/design.md#failures-and-quarantine). The
// error returned is one that fails the whole batch: a step that gives the topic back, releases
// it or looks up its commit failed itself.
func RunTopicPipeline(s TopicSteps, mode PipelineMode, policy string) (PipelineResult, error) {
	res := PipelineResult{Policy: policy}
	lease, err := s.Lease()
	if err != nil {
		return stepFailed(s, mode, res, "lease", err)
	}
	res.Lease, res.Policy = lease, lease.Policy
	switch {
	case lease.AlreadyOptimized:
		c, pol, ok, err := s.CommittedByThisRun()
		if err != nil {
			return res, err
		}
		if ok {
			res.Decision, res.Commit, res.Policy = DecisionCommitted, c, pol
			return res, nil
		}
		res.Decision = DecisionAlreadyOptimized
		return res, nil
	case lease.Leased:
		res.Decision = DecisionLeasedByLiveRun
		return res, nil
	case lease.Quarantined != nil:
		res.Decision = DecisionQuarantined
		return res, nil
	}
	plan, err := s.ReadSort(res.Policy)
	if err != nil {
		return stepFailed(s, mode, res, "read-sort", err)
	}
	if plan.NothingToDo {
		res.Decision = DecisionNothingToDo
		return res, s.GiveBackNothingToDo(res.Policy)
	}
	if step, err := s.WriteChunks(plan.Groups); err != nil {
		return stepFailed(s, mode, res, step, err)
	}
	c, err := s.Commit()
	if err != nil {
		return stepFailed(s, mode, res, "commit", err)
	}
	res.Decision, res.Commit = DecisionCommitted, c
	return res, nil
}

// stepFailed decides what follows the error of a step (RunTopicPipeline).
func stepFailed(s TopicSteps, mode PipelineMode, res PipelineResult, step string, err error) (PipelineResult, error) {
	res.Step, res.Err = step, err
	f := StepFailure{Step: step, Err: err, Policy: res.Policy}
	if s.Canceled() {
		f.Canceled = true
		_ = s.Release(f)
		res.Decision = DecisionCanceled
		return res, nil
	}
	if mode == BatchSteps {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !(appErr.NonRetryable() || slices.Contains(NonRetryableErrorTypes, appErr.Type())) {
			res.Decision = DecisionGivenBack
			return res, s.GiveBack(f)
		}
		if appErr.Type() == ErrTypeLeaseLost {
			res.Decision = DecisionLeaseLost
			return res, nil
		}
	}
	res.Decision = DecisionFailed
	return res, s.Release(f)
}
