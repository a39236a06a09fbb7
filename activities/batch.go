package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/store"
)

// Outcomes of one topic of an OptimizeSmallTopics batch (SmallTopicResult.Outcome).
const (
	OutcomeOptimized   = "optimized"
	OutcomeSkipped     = "skipped"     // optimized by another run, or leased by another open run
	OutcomeQuarantined = "quarantined" // quarantined since the run listed it
	OutcomeNothingToDo = "nothing-to-do"
	OutcomeFailed      = "failed"
	// OutcomeLeased is no longer returned: a topic another open run holds the lease of is
	// OutcomeSkipped. Batches recorded by older workers returned it when another run held the
	// lease, and the workflow then started a topic workflow for the topic; the constant stays so
	// that those histories replay.
	OutcomeLeased = "leased"
	// OutcomeGivenBack: a step of the topic failed with a retryable error; its partial output
	// was deleted and its lease given back (the topic stays queued, nothing counts toward
	// quarantine). The workflow retries it in a topic workflow of its own, whose activities
	// Temporal retries, while the batch went on with the other topics.
	OutcomeGivenBack = "given-back"
)

// ErrTypeBatchFault is the error type of an injected fault that fails a batch for good
// (faults.BatchTopicStart, in builds with fault injection only).
const ErrTypeBatchFault = "StoreoptInjectedBatchFault"

// SmallTopic is one topic of a batch: its ID and locator. A batch holds tiny topics
// (docs/design.md#vocabulary); the types and activities of batches say Small because their
// activity names (OptimizeSmallTopics, ReleaseSmallTopics) are in recorded histories.
type SmallTopic struct {
	TopicID int64
	Locator string
}

// OptimizeSmallTopicsInput is the input of OptimizeSmallTopics: the topics, in order, and the
// run's options (as OptimizeTopicInput has them).
type OptimizeSmallTopicsInput struct {
	Topics            []SmallTopic
	MaxChunkSizeBytes int64
	Policy            string
	MinChunks         int
}

// SmallTopicResult is the outcome of one topic of a batch. Commit holds what an optimized
// topic's commit did; a failed one has the step that failed ("read-sort", "write-chunks group 0"),
// the activity error's type and message and, for ErrTypeStore, the store fault.
type SmallTopicResult struct {
	TopicID     int64
	Locator     string
	Outcome     string
	Policy      string `json:",omitempty"`
	Commit      CommitResult
	Quarantined *QuarantinedTopic `json:",omitempty"`
	Step        string            `json:",omitempty"`
	ErrorType   string            `json:",omitempty"`
	Error       string            `json:",omitempty"`
	StoreFault  *StoreFault       `json:",omitempty"`
}

// OptimizeSmallTopicsResult has one result per input topic, in input order.
type OptimizeSmallTopicsResult struct {
	Topics []SmallTopicResult
}

// OptimizeSmallTopics optimizes small topics one after the other inside one activity, each with
// the steps of OptimizeTopicWorkflow run in-process: Lease (skipping a topic optimized or
// quarantined since it was listed), ReadSort, WriteChunks for every group, Commit (which
// verifies and switches the topic atomically, as always), and Release after a failure or when
// there was nothing to do. A run that optimizes thousands of tiny topics pays one activity for
// a batch of them instead of a workflow, four activities and their history events per topic.
//
// The lease is the calling run's (owner = workflow ID, fencing token = run ID), so a retried
// batch gets each lease back; a topic this run already committed (a retry after a crash) is
// reported optimized from its optimization record. Lease decides alone whether a topic whose
// lease another run holds is taken (docs/design.md#one-optimization-per-topic): from a run that
// is closed it is taken over; a run that is still open (another pass beside this one, a topic
// workflow started by hand) keeps it, and the topic is OutcomeSkipped. The batch reads no lease
// itself, so nothing acts on a lease read earlier. A step's non-retryable error fails only its
// topic (released, counted toward quarantine as usual) and a step's retryable error gives only its
// topic back (OutcomeGivenBack): the batch goes on either way. An error that concerns the whole
// batch (the catalog unreachable, so that the topic cannot even be given back) fails the batch,
// which Temporal retries; once its attempts are spent the workflow releases its topics
// (ReleaseSmallTopics). After a cancellation the topic in hand is released and the batch returns
// the cancellation.
func (a *Activities) OptimizeSmallTopics(ctx context.Context, in OptimizeSmallTopicsInput) (OptimizeSmallTopicsResult, error) {
	out := OptimizeSmallTopicsResult{Topics: make([]SmallTopicResult, 0, len(in.Topics))}
	for i, t := range in.Topics {
		activity.RecordHeartbeat(ctx, i)
		if err := faults.Hit(ctx, faults.BatchTopicStart); err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBatchFault, nil)
		}
		r, err := a.optimizeTinyTopic(ctx, in, t)
		if err != nil {
			return out, err
		}
		out.Topics = append(out.Topics, r)
	}
	return out, nil
}

// optimizeTinyTopic runs the pipeline of one topic of a batch (RunTopicPipeline, with the
// steps called in-process). It returns an error only for what fails the batch: a catalog error
// outside the steps, a topic that cannot be given back or released, or a cancellation.
func (a *Activities) optimizeTinyTopic(ctx context.Context, in OptimizeSmallTopicsInput, t SmallTopic) (SmallTopicResult, error) {
	p, err := RunTopicPipeline(&batchSteps{a: a, ctx: ctx, in: in, t: t}, BatchSteps, in.Policy)
	res := SmallTopicResult{TopicID: t.TopicID, Locator: t.Locator, Policy: p.Policy}
	if err != nil {
		return res, err
	}
	switch p.Decision {
	case DecisionCommitted:
		res.Outcome, res.Commit = OutcomeOptimized, p.Commit
	case DecisionAlreadyOptimized, DecisionLeasedByLiveRun, DecisionLeaseLost:
		res.Outcome = OutcomeSkipped
	case DecisionQuarantined:
		res.Outcome, res.Quarantined = OutcomeQuarantined, p.Lease.Quarantined
	case DecisionNothingToDo:
		res.Outcome = OutcomeNothingToDo
	case DecisionCanceled:
		return res, ctx.Err()
	case DecisionGivenBack:
		res.Outcome, res.Step, res.Error = OutcomeGivenBack, p.Step, p.Err.Error()
		var appErr *temporal.ApplicationError
		if errors.As(p.Err, &appErr) {
			res.ErrorType, res.Error = appErr.Type(), appErr.Message()
		}
	case DecisionFailed:
		var appErr *temporal.ApplicationError
		errors.As(p.Err, &appErr) // a batch's step fails its topic with an application error only
		res.Outcome, res.Step, res.ErrorType, res.Error = OutcomeFailed, p.Step, appErr.Type(), appErr.Message()
		if appErr.Type() == ErrTypeStore && appErr.HasDetails() {
			var f StoreFault
			if appErr.Details(&f) == nil {
				res.StoreFault = &f
			}
		}
	}
	return res, nil
}

// batchSteps are the steps of one topic of a batch, called in-process under the batch's
// context, each timed as its activity would be.
type batchSteps struct {
	a   *Activities
	ctx context.Context
	in  OptimizeSmallTopicsInput
	t   SmallTopic
}

func (s *batchSteps) Lease() (LeaseResult, error) {
	return inProcess(s.ctx, s.a, "Lease", s.a.Lease, LeaseInput{TopicID: s.t.TopicID, SkipIfOptimized: true,
		Policy: s.in.Policy, MinChunks: s.in.MinChunks, MaxChunkSizeBytes: s.in.MaxChunkSizeBytes})
}

func (s *batchSteps) CommittedByThisRun() (CommitResult, string, bool, error) {
	_, token := run(s.ctx)
	res, err := s.a.committedByThisRun(s.ctx, SmallTopicResult{TopicID: s.t.TopicID}, token)
	return res.Commit, res.Policy, res.Outcome == OutcomeOptimized, err
}

func (s *batchSteps) ReadSort(policy string) (ReadSortResult, error) {
	return inProcess(s.ctx, s.a, "ReadSort", s.a.ReadSort, ReadSortInput{TopicID: s.t.TopicID,
		MaxChunkSizeBytes: s.in.MaxChunkSizeBytes, Policy: policy})
}

// WriteChunks writes the groups one after the other.
func (s *batchSteps) WriteChunks(groups int) (string, error) {
	for g := range groups {
		if _, err := inProcess(s.ctx, s.a, "WriteChunks", s.a.WriteChunks, WriteChunksInput{TopicID: s.t.TopicID, Group: g}); err != nil {
			return fmt.Sprintf("write-chunks group %d", g), err
		}
	}
	return "", nil
}

func (s *batchSteps) Commit() (CommitResult, error) {
	return inProcess(s.ctx, s.a, "Commit", s.a.Commit, CommitInput{TopicID: s.t.TopicID})
}

func (s *batchSteps) GiveBackNothingToDo(policy string) error {
	_, err := inProcess(s.ctx, s.a, "Release", s.a.Release, ReleaseInput{TopicID: s.t.TopicID,
		Reason: "nothing to do", Policy: policy, NothingToDo: true})
	return err
}

// Release releases the topic with the failure of its step, or, canceled, from a context that
// is not (the batch's is).
func (s *batchSteps) Release(f StepFailure) error {
	if f.Canceled {
		_, err := inProcess(context.WithoutCancel(s.ctx), s.a, "Release", s.a.Release, ReleaseInput{
			TopicID: s.t.TopicID, Reason: "canceled during " + f.Step, Policy: f.Policy, Canceled: true})
		return err
	}
	var appErr *temporal.ApplicationError
	errors.As(f.Err, &appErr) // the pipeline releases a batch's topic after an application error only
	_, err := inProcess(s.ctx, s.a, "Release", s.a.Release, ReleaseInput{TopicID: s.t.TopicID,
		Reason: f.Step + " failed: " + appErr.Message(), Policy: f.Policy, ErrorType: appErr.Type(), Error: appErr.Message()})
	return err
}

func (s *batchSteps) GiveBack(f StepFailure) error {
	return s.a.giveBack(s.ctx, s.t, f.Step, f.Err)
}

func (s *batchSteps) Canceled() bool { return s.ctx.Err() != nil }

// committedByThisRun answers a topic that no longer needs the compaction: optimized when this
// run committed it (a retried batch), else skipped (another run did).
func (a *Activities) committedByThisRun(ctx context.Context, res SmallTopicResult, token string) (SmallTopicResult, error) {
	res.Outcome = OutcomeSkipped
	opts, err := a.Catalog.Optimizations(ctx, res.TopicID)
	if err != nil {
		return res, err
	}
	for _, o := range opts {
		if o.FencingToken != token {
			continue
		}
		res.Outcome, res.Policy = OutcomeOptimized, string(o.Policy)
		res.Commit = CommitResult{AlreadyCommitted: true, OldPrefix: o.OldPrefix, NewPrefix: o.NewPrefix,
			InputChunks: o.InputChunks, OutputChunks: o.OutputChunks}
		if o.Rows != nil && o.InputBytes != nil && o.OutputBytes != nil {
			res.Commit.Rows, res.Commit.InputBytes, res.Commit.OutputBytes = *o.Rows, *o.InputBytes, *o.OutputBytes
		}
	}
	return res, nil
}

// giveBack hands a topic whose step failed with a retryable error back to the run, so that the
// error retries that topic only (docs/design.md#one-bad-topic-never-stops-a-run): the partial
// output under its fresh prefix is deleted while the lease is still ours, then the lease is
// given back with the topic left queued (catalog.GiveBackLease); nothing counts toward
// quarantine or the metrics, which the topic workflow that retries it records. A give-back that
// fails itself (the catalog or the store unreachable: a fault of the whole batch, not of the
// topic) fails the batch with the step's error, and Temporal retries the batch.
func (a *Activities) giveBack(ctx context.Context, t SmallTopic, step string, err error) error {
	_, token := run(ctx)
	lease, lerr := a.Catalog.LeaseOf(ctx, t.TopicID)
	switch {
	case lerr == nil && lease.FencingToken == token && lease.FreshPrefix != "":
		if _, derr := store.DeletePrefix(ctx, a.Bucket, lease.FreshPrefix); derr != nil {
			if _, ok := storeFaultOf(derr); !ok {
				logger(ctx).Warn("Topic not given back: its partial output could not be deleted", "topic", t.Locator,
					"prefix", lease.FreshPrefix, "error", derr)
				return err
			}
			// As in Release: once the lease is given back nothing references the prefix, and
			// the cleanup routine deletes it after the retention period, once the store lets it.
			logger(ctx).Warn("Partial output left to the cleanup routine: the store refuses to delete it",
				"prefix", lease.FreshPrefix, "error", a.classify(t.Locator, derr))
		}
	case lerr != nil && !errors.Is(lerr, catalog.ErrNotFound):
		logger(ctx).Warn("Topic not given back: its lease could not be read", "topic", t.Locator, "error", lerr)
		return err
	}
	if _, _, gerr := a.Catalog.GiveBackLease(ctx, t.TopicID, token); gerr != nil {
		logger(ctx).Warn("Topic not given back", "topic", t.Locator, "error", gerr)
		return err
	}
	logger(ctx).Warn("Topic given back after a retryable error: a topic workflow of its own retries it",
		"topic", t.Locator, "step", step, "error", err)
	return nil
}

// ReleaseSmallTopicsInput is the input of ReleaseSmallTopics: the topics of a batch that failed
// as a whole, the run's policy, and the batch's error as Release takes it (ReleaseInput).
type ReleaseSmallTopicsInput struct {
	Topics    []SmallTopic
	Policy    string
	Reason    string
	ErrorType string
	Error     string
	Canceled  bool
}

// ReleaseSmallTopicsResult has one result per input topic, in input order: OutcomeOptimized (with
// Commit) for a topic the run committed before its batch failed, else OutcomeFailed with the
// batch's error.
type ReleaseSmallTopicsResult struct {
	Topics []SmallTopicResult
}

// ReleaseSmallTopics ends the topics of a batch that failed as a whole (its attempts spent, timed
// out or canceled), as Release ends a topic workflow's: for each topic the calling run still
// holds the lease of, it deletes the partial output (the fresh prefix) and drops the lease;
// every topic the run did not commit is counted as failed with the batch's error (toward
// quarantine, for its error types, and in the metrics) — after a cancellation only those it held
// the lease of, as a canceled run counts only the topics in flight. A topic the run committed
// before the failure is reported optimized (a commit records its own metrics). Metrics are
// recorded once every topic is done, so a retried call counts each topic once. Release's rules
// hold: a lease taken over or committed is left alone, so no prefix the catalog references is
// deleted (docs/design.md#leases).
func (a *Activities) ReleaseSmallTopics(ctx context.Context, in ReleaseSmallTopicsInput) (ReleaseSmallTopicsResult, error) {
	_, token := run(ctx)
	type released struct {
		in  ReleaseInput
		res ReleaseResult
	}
	var ended []released
	out := ReleaseSmallTopicsResult{Topics: make([]SmallTopicResult, 0, len(in.Topics))}
	for i, t := range in.Topics {
		heartbeat(ctx, i)
		res := SmallTopicResult{TopicID: t.TopicID, Locator: t.Locator, Policy: in.Policy}
		done, err := a.committedByThisRun(ctx, res, token)
		if err != nil {
			return out, err
		}
		if done.Outcome == OutcomeOptimized {
			out.Topics = append(out.Topics, done)
			continue
		}
		res.Outcome, res.Step, res.ErrorType, res.Error = OutcomeFailed, "batch", in.ErrorType, in.Error
		out.Topics = append(out.Topics, res)
		if in.Canceled {
			l, err := a.Catalog.LeaseOf(ctx, t.TopicID)
			if errors.Is(err, catalog.ErrNotFound) || (err == nil && l.FencingToken != token) {
				continue
			} else if err != nil {
				return out, err
			}
		}
		rin := ReleaseInput{TopicID: t.TopicID, Reason: in.Reason, ErrorType: in.ErrorType, Error: in.Error,
			Policy: in.Policy, Canceled: in.Canceled}
		rres, err := a.Release(ctx, rin)
		if err != nil {
			return out, err
		}
		ended = append(ended, released{rin, rres})
	}
	for _, e := range ended {
		RecordOutcome(a.recorder(), e.in, e.res, nil)
	}
	return out, nil
}
