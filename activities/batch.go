package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/metrics"
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

// SmallTopic is one topic of a batch: its ID and locator.
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
		r, err := a.optimizeSmallTopic(ctx, in, t)
		if err != nil {
			return out, err
		}
		out.Topics = append(out.Topics, r)
	}
	return out, nil
}

// optimizeSmallTopic runs the steps of one topic of a batch. It returns an error only for what
// fails the batch: a catalog error outside the steps, a topic that cannot be given back or a
// cancellation.
func (a *Activities) optimizeSmallTopic(ctx context.Context, in OptimizeSmallTopicsInput, t SmallTopic) (SmallTopicResult, error) {
	res := SmallTopicResult{TopicID: t.TopicID, Locator: t.Locator, Policy: in.Policy}
	_, token := run(ctx)
	var lease LeaseResult
	err := a.timed(metrics.StepLease, func() (err error) {
		lease, err = a.Lease(ctx, LeaseInput{TopicID: t.TopicID, SkipIfOptimized: true, Policy: in.Policy,
			MinChunks: in.MinChunks, MaxChunkSizeBytes: in.MaxChunkSizeBytes})
		return err
	})
	if err != nil {
		return a.smallTopicFailed(ctx, res, "lease", err)
	}
	res.Policy = lease.Policy
	switch {
	case lease.AlreadyOptimized:
		return a.committedByThisRun(ctx, res, token)
	case lease.Quarantined != nil:
		res.Outcome, res.Quarantined = OutcomeQuarantined, lease.Quarantined
		return res, nil
	case lease.Leased: // another run that is still open optimizes it
		res.Outcome = OutcomeSkipped
		return res, nil
	}
	var plan ReadSortResult
	err = a.timed(metrics.StepReadSort, func() (err error) {
		plan, err = a.ReadSort(ctx, ReadSortInput{TopicID: t.TopicID, MaxChunkSizeBytes: in.MaxChunkSizeBytes, Policy: lease.Policy})
		return err
	})
	if err != nil {
		return a.smallTopicFailed(ctx, res, "read-sort", err)
	}
	if plan.NothingToDo {
		if _, err := a.Release(ctx, ReleaseInput{TopicID: t.TopicID, Reason: "nothing to do", Policy: lease.Policy,
			NothingToDo: true}); err != nil {
			return res, err
		}
		res.Outcome = OutcomeNothingToDo
		return res, nil
	}
	for g := range plan.Groups {
		err := a.timed(metrics.StepWriteChunks, func() error {
			_, err := a.WriteChunks(ctx, WriteChunksInput{TopicID: t.TopicID, Group: g})
			return err
		})
		if err != nil {
			return a.smallTopicFailed(ctx, res, fmt.Sprintf("write-chunks group %d", g), err)
		}
	}
	var c CommitResult
	err = a.timed(metrics.StepCommit, func() (err error) {
		c, err = a.Commit(ctx, CommitInput{TopicID: t.TopicID})
		return err
	})
	if err != nil {
		return a.smallTopicFailed(ctx, res, "commit", err)
	}
	res.Outcome, res.Commit = OutcomeOptimized, c
	return res, nil
}

// timed runs one step of a batched topic and records its duration, as metrics.StepTimer does
// for the step's activity.
func (a *Activities) timed(step string, f func() error) error {
	start := time.Now()
	err := f()
	a.recorder().StepFinished(step, time.Since(start), err)
	return err
}

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

// smallTopicFailed handles the error of one step: a cancellation releases the topic and fails the
// batch; a retryable error gives the topic back (giveBack); a lease another run took over is a
// skip; any other non-retryable error fails the topic, which is released with the error (counted
// toward quarantine).
func (a *Activities) smallTopicFailed(ctx context.Context, res SmallTopicResult, step string, err error) (SmallTopicResult, error) {
	if ctx.Err() != nil {
		rctx := context.WithoutCancel(ctx)
		_, _ = a.Release(rctx, ReleaseInput{TopicID: res.TopicID, Reason: "canceled during " + step, Policy: res.Policy,
			Canceled: true})
		return res, ctx.Err()
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !(appErr.NonRetryable() || slices.Contains(NonRetryableErrorTypes, appErr.Type())) {
		return a.giveBack(ctx, res, step, err)
	}
	if appErr.Type() == ErrTypeLeaseLost {
		res.Outcome = OutcomeSkipped
		return res, nil
	}
	res.Outcome, res.Step, res.ErrorType, res.Error = OutcomeFailed, step, appErr.Type(), appErr.Message()
	if appErr.Type() == ErrTypeStore && appErr.HasDetails() {
		var f StoreFault
		if appErr.Details(&f) == nil {
			res.StoreFault = &f
		}
	}
	_, rerr := a.Release(ctx, ReleaseInput{TopicID: res.TopicID, Reason: step + " failed: " + appErr.Message(),
		Policy: res.Policy, ErrorType: appErr.Type(), Error: appErr.Message()})
	return res, rerr
}

// giveBack hands a topic whose step failed with a retryable error back to the run, so that the
// error retries that topic only (docs/design.md#one-bad-topic-never-stops-a-run): the partial
// output under its fresh prefix is deleted while the lease is still ours, then the lease is
// given back with the topic left queued (catalog.GiveBackLease); nothing counts toward
// quarantine or the metrics, which the topic workflow that retries it records. A give-back that
// fails itself (the catalog or the store unreachable: a fault of the whole batch, not of the
// topic) fails the batch with the step's error, and Temporal retries the batch.
func (a *Activities) giveBack(ctx context.Context, res SmallTopicResult, step string, err error) (SmallTopicResult, error) {
	_, token := run(ctx)
	lease, lerr := a.Catalog.LeaseOf(ctx, res.TopicID)
	switch {
	case lerr == nil && lease.FencingToken == token && lease.FreshPrefix != "":
		if _, derr := store.DeletePrefix(ctx, a.Bucket, lease.FreshPrefix); derr != nil {
			if _, ok := storeFaultOf(derr); !ok {
				logger(ctx).Warn("Topic not given back: its partial output could not be deleted", "topic", res.Locator,
					"prefix", lease.FreshPrefix, "error", derr)
				return res, err
			}
			// As in Release: once the lease is given back nothing references the prefix, and
			// the cleanup routine deletes it after the retention period, once the store lets it.
			logger(ctx).Warn("Partial output left to the cleanup routine: the store refuses to delete it",
				"prefix", lease.FreshPrefix, "error", a.classify(res.Locator, derr))
		}
	case lerr != nil && !errors.Is(lerr, catalog.ErrNotFound):
		logger(ctx).Warn("Topic not given back: its lease could not be read", "topic", res.Locator, "error", lerr)
		return res, err
	}
	if _, _, gerr := a.Catalog.GiveBackLease(ctx, res.TopicID, token); gerr != nil {
		logger(ctx).Warn("Topic not given back", "topic", res.Locator, "error", gerr)
		return res, err
	}
	res.Outcome, res.Step, res.Error = OutcomeGivenBack, step, err.Error()
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		res.ErrorType, res.Error = appErr.Type(), appErr.Message()
	}
	logger(ctx).Warn("Topic given back after a retryable error: a topic workflow of its own retries it",
		"topic", res.Locator, "step", step, "error", err)
	return res, nil
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
		rres, err := a.release(ctx, rin)
		if err != nil {
			return out, err
		}
		ended = append(ended, released{rin, rres})
	}
	for _, e := range ended {
		a.recordRelease(e.in, e.res)
	}
	return out, nil
}
