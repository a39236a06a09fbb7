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
// still verified and switched atomically by Commit; a topic another run holds the lease of is
// handed to a topic workflow of its own.

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
		fmt.Sprintf("optimize %d small topics from %s", len(topics), topics[0].Locator), "")
	f := workflow.ExecuteActivity(actx, a.OptimizeSmallTopics, in)
	w.add(true, f, func(f workflow.Future) {
		var res activities.OptimizeSmallTopicsResult
		err := f.Get(ctx, &res)
		r.batchDone(ctx, w, topics, res, err)
	})
}

// batchDone records the outcome of every topic of a finished batch. A topic another run held
// the lease of gets a topic workflow of its own now; a batch that failed as a whole (its retries
// spent, or canceled) fails each of its topics without a result.
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
		case t.Outcome == activities.OutcomeLeased:
			if r.mayStart(ctx, 1) {
				w.add(true, r.startTopic(ctx, topic), r.topicDone(ctx, topic))
			}
			continue
		default:
			out, terr := smallTopicOutcome(t)
			r.record(ctx, topic.Locator, out, terr)
		}
		r.topicFinished(ctx, topic)
	}
}

// smallTopicOutcome turns one topic's result of a batch into what its topic workflow would have
// returned: the result, or the failure naming the topic, the step and the activity's error
// (type, message and store fault kept for the run's failure records and store-fault stop).
func smallTopicOutcome(t activities.SmallTopicResult) (OptimizeTopicResult, error) {
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
