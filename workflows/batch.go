package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// Batches of tiny topics: a run optimizes topics whose estimated input is at most
// BatchTopicBytes (and MaxChunkSizeBytes) BatchTopics at a time in one OptimizeSmallTopics
// activity instead of a topic workflow each, so that a run over thousands of tiny topics spends
// a few history events per topic rather than a workflow with its own history. Each topic is
// still verified and switched atomically by Commit. A topic another open run holds the lease of
// is skipped (docs/design.md#one-optimization-per-topic); one that a step's retryable error gave
// back is handed to a topic workflow of its own. A batch that fails as a whole has its topics
// released by ReleaseSmallTopics (docs/design.md#batches-of-tiny-topics).

// batchReleaseChange is the workflow.GetVersion change ID of ReleaseSmallTopics after a batch
// failed as a whole (version 1): executions recorded before it record the batch's topics failed
// and release nothing, as they did.
const batchReleaseChange = "batch-release"

// tinyTopic reports whether a queued topic is optimized in a batch.
func (r *storeRun) tinyTopic(t activities.QueuedTopic) bool {
	limit := r.in.BatchTopicBytes
	if limit <= 0 {
		limit = DefaultBatchTopicBytes
	}
	return r.smallTopic(t) && t.Bytes <= limit
}

// batchTopics is the number of tiny topics per batch.
func (r *storeRun) batchTopics() int {
	if r.in.BatchTopics <= 0 {
		return DefaultBatchTopics
	}
	return r.in.BatchTopics
}

// flushBatch starts the batch of the tiny topics held, once the small topics' window has room.
func (r *storeRun) flushBatch(ctx workflow.Context, w *windows) {
	if len(r.batch) == 0 {
		return
	}
	topics := r.batch
	r.batch = nil
	w.ready(true)
	if !r.mayStart(ctx, len(topics)) {
		return
	}
	in := activities.OptimizeSmallTopicsInput{MaxChunkSizeBytes: r.in.MaxChunkSizeBytes, Policy: r.in.Policy,
		MinChunks: r.in.MinChunks}
	for _, t := range topics {
		in.Topics = append(in.Topics, activities.SmallTopic{TopicID: t.TopicID, Locator: t.Locator})
		r.inFlight = append(r.inFlight, t.Locator)
	}
	r.showProgress(ctx)
	actx := withSummary(withDataOptions(ctx, r.in.HeartbeatTimeout), "",
		fmt.Sprintf("optimize %d tiny topics from %s", len(topics), topics[0].Locator), "")
	f := workflow.ExecuteActivity(actx, a.OptimizeSmallTopics, in)
	w.add(true, f, func(f workflow.Future) {
		var res activities.OptimizeSmallTopicsResult
		err := f.Get(ctx, &res)
		if err != nil && workflow.GetVersion(ctx, batchReleaseChange, workflow.DefaultVersion, 1) == 1 {
			r.releaseBatch(ctx, w, topics, in.Topics, err)
			return
		}
		r.batchDone(ctx, w, topics, res, err)
	})
}

// releaseBatch ends the topics of a batch that failed as a whole (cause: its retries spent, a
// timeout, a cancellation): ReleaseSmallTopics, from a disconnected context so that it also runs
// after a cancel, deletes the partial output and drops the lease of every topic the run still
// holds, and counts them failed with the batch's error (metrics, quarantine), as a topic
// workflow's Release does. The release keeps the batch's slot of the window; once it is done,
// each topic is recorded: optimized when the run committed it before the failure, else failed
// with the batch's error. A failed release is logged, and the topics are recorded failed.
func (r *storeRun) releaseBatch(ctx workflow.Context, w *windows, topics []activities.QueuedTopic,
	batch []activities.SmallTopic, cause error) {
	in := activities.ReleaseSmallTopicsInput{Topics: batch, Policy: r.in.Policy, Canceled: ctx.Err() != nil,
		Reason: "batch failed: " + causeMessage(cause)}
	var appErr *temporal.ApplicationError
	switch {
	case in.Canceled:
		in.Reason = "batch canceled"
	case errors.As(cause, &appErr):
		in.ErrorType, in.Error = appErr.Type(), appErr.Message()
	}
	rctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := withSummary(withBatchReleaseOptions(rctx), "",
		fmt.Sprintf("release %d tiny topics from %s (%s)", len(topics), topics[0].Locator, readablePrefix(in.Reason, 80)), "")
	f := workflow.ExecuteActivity(actx, a.ReleaseSmallTopics, in)
	w.add(true, f, func(f workflow.Future) {
		var released activities.ReleaseSmallTopicsResult
		if err := f.Get(rctx, &released); err != nil {
			r.logger.Error("Release of a failed batch failed; its topics stay leased until the next run takes them over",
				"Topics", len(topics), "From", topics[0].Locator, "Error", err)
		}
		var res activities.OptimizeSmallTopicsResult
		for _, t := range released.Topics {
			if t.Outcome == activities.OutcomeOptimized {
				res.Topics = append(res.Topics, t)
			}
		}
		r.batchDone(ctx, w, topics, res, cause)
	})
}

// batchDone records the outcome of every topic of a finished batch. A topic given back after a
// retryable error gets a topic workflow of its own now, as does one reported OutcomeLeased (only
// by batches of older workers, when another run held its lease: those histories replay); a batch
// that failed as a whole (its retries spent, or canceled) fails each of its topics without a
// result.
func (r *storeRun) batchDone(ctx workflow.Context, w *windows, topics []activities.QueuedTopic,
	res activities.OptimizeSmallTopicsResult, err error) {
	results := map[int64]activities.SmallTopicResult{}
	for _, t := range res.Topics {
		results[t.TopicID] = t
	}
	for _, topic := range topics {
		r.inFlight = removeFirst(r.inFlight, topic.Locator)
		t, ok := results[topic.TopicID]
		switch {
		case !ok:
			if err == nil {
				err = errors.New("the batch returned no result for the topic")
			}
			r.record(ctx, topic.Locator, OptimizeTopicResult{}, topicFailure(topic.Locator, &stepError{step: "batch", err: err}))
		case t.Outcome == activities.OutcomeLeased, t.Outcome == activities.OutcomeGivenBack:
			if t.Outcome == activities.OutcomeGivenBack {
				r.logger.Warn("Topic given back by its batch after a retryable error: retried in a topic workflow",
					"TopicLocator", topic.Locator, "Step", t.Step, "Error", t.Error)
			}
			if r.mayStart(ctx, 1) {
				w.add(true, r.startTopic(ctx, topic), r.topicDone(ctx, topic))
			}
			continue
		default:
			out, terr := batchTopicOutcome(t)
			r.record(ctx, topic.Locator, out, terr)
		}
		r.topicFinished(ctx, topic)
	}
}

// batchTopicOutcome turns one topic's result of a batch into what its topic workflow would have
// returned: the result, or the failure naming the topic, the step and the activity's error
// (type, message and store fault kept for the run's failure records and store-fault stop).
func batchTopicOutcome(t activities.SmallTopicResult) (OptimizeTopicResult, error) {
	out := OptimizeTopicResult{Locator: t.Locator, Policy: t.Policy}
	switch t.Outcome {
	case activities.OutcomeOptimized:
		c := t.Commit
		out.InputChunks, out.OutputChunks, out.Rows = c.InputChunks, c.OutputChunks, c.Rows
		out.InputBytes, out.OutputBytes, out.AlreadyCommitted = c.InputBytes, c.OutputBytes, c.AlreadyCommitted
	case activities.OutcomeSkipped:
		out.Skipped = true
	case activities.OutcomeQuarantined:
		out.Quarantined = t.Quarantined
	case activities.OutcomeNothingToDo:
		out.NothingToDo = true
	default:
		var details []any
		if t.StoreFault != nil {
			details = append(details, *t.StoreFault)
		}
		cause := temporal.NewNonRetryableApplicationError(t.Error, t.ErrorType, nil, details...)
		return OptimizeTopicResult{}, topicFailure(t.Locator, &stepError{step: t.Step, err: cause})
	}
	return out, nil
}
