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
	"github.com/storeopt/storeopt/metrics"
)

// Outcomes of one topic of an OptimizeSmallTopics batch (SmallTopicResult.Outcome).
const (
	OutcomeOptimized   = "optimized"
	OutcomeSkipped     = "skipped"     // optimized by another run, or its lease taken over by another run
	OutcomeQuarantined = "quarantined" // quarantined since the run listed it
	OutcomeNothingToDo = "nothing-to-do"
	OutcomeFailed      = "failed"
	// OutcomeLeased: another run holds the topic's lease; nothing was done. The workflow
	// optimizes it through a topic workflow of its own, whose workflow ID tells a running
	// optimization (skipped) from a lease left behind (taken over).
	OutcomeLeased = "leased"
)

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
// reported optimized from its optimization record. A topic whose lease another run holds is
// left alone (OutcomeLeased). A step's non-retryable error fails only its topic (released,
// counted toward quarantine as usual) and the batch goes on; any other error (an unreachable
// catalog, say) fails the batch, which Temporal retries. After a cancellation the topic in hand
// is released and the batch returns the cancellation.
func (a *Activities) OptimizeSmallTopics(ctx context.Context, in OptimizeSmallTopicsInput) (OptimizeSmallTopicsResult, error) {
	out := OptimizeSmallTopicsResult{Topics: make([]SmallTopicResult, 0, len(in.Topics))}
	for i, t := range in.Topics {
		activity.RecordHeartbeat(ctx, i)
		r, err := a.optimizeSmallTopic(ctx, in, t)
		if err != nil {
			return out, err
		}
		out.Topics = append(out.Topics, r)
	}
	return out, nil
}

// optimizeSmallTopic runs the steps of one topic of a batch. It returns an error only for what
// fails the batch: a retryable error or a cancellation.
func (a *Activities) optimizeSmallTopic(ctx context.Context, in OptimizeSmallTopicsInput, t SmallTopic) (SmallTopicResult, error) {
	res := SmallTopicResult{TopicID: t.TopicID, Locator: t.Locator, Policy: in.Policy}
	_, token := run(ctx)
	if l, err := a.Catalog.LeaseOf(ctx, t.TopicID); err == nil && l.FencingToken != token {
		res.Outcome = OutcomeLeased
		return res, nil
	} else if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return res, err
	}
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
// batch, as does (without a release: the retry goes on with the same lease) a retryable error; a
// lease another run took over is a skip; any other non-retryable error fails the topic, which is
// released with the error (counted toward quarantine).
func (a *Activities) smallTopicFailed(ctx context.Context, res SmallTopicResult, step string, err error) (SmallTopicResult, error) {
	if ctx.Err() != nil {
		rctx := context.WithoutCancel(ctx)
		_, _ = a.Release(rctx, ReleaseInput{TopicID: res.TopicID, Reason: "canceled during " + step, Policy: res.Policy,
			Canceled: true})
		return res, ctx.Err()
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !(appErr.NonRetryable() || slices.Contains(NonRetryableErrorTypes, appErr.Type())) {
		return res, err
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
