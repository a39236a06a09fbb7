package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/estimate"
	"github.com/storeopt/storeopt/policy"
)

// DefaultPlanTopicsLimit is the page size of PlanTopics when its input gives none.
const DefaultPlanTopicsLimit = 100

// PlanTopicsInput asks for the plans of one page of the topics a run of this trigger would
// optimize (a dry run), in topic ID order after AfterTopicID. Zero values as EnqueueTopicsInput.
type PlanTopicsInput struct {
	Policy            string
	MinChunks         int
	MaxChunkSizeBytes int64
	Scope             []string
	AfterTopicID      int64
	Limit             int // topics per page; 0 = DefaultPlanTopicsLimit, at most 1000
}

// PlanTotals are the figures of one plan, or the sums of several: bytes are object sizes
// (OutputBytes the plans' estimate), ArrowBytes the inputs' uncompressed Arrow size, Seconds the
// estimated seconds from the lease to the commit (package estimate).
type PlanTotals struct {
	InputChunks     int
	InputBytes      int64
	InputArrowBytes int64
	Rows            int64
	OutputChunks    int
	OutputBytes     int64
	// PassThroughChunks counts the output chunks that are input chunks kept as they are
	// (docs/design.md#the-pass-through-path).
	PassThroughChunks int `json:",omitempty"`
	Seconds           float64
}

// Add adds o's figures to t's.
func (t *PlanTotals) Add(o PlanTotals) {
	t.InputChunks += o.InputChunks
	t.InputBytes += o.InputBytes
	t.InputArrowBytes += o.InputArrowBytes
	t.Rows += o.Rows
	t.OutputChunks += o.OutputChunks
	t.OutputBytes += o.OutputBytes
	t.PassThroughChunks += o.PassThroughChunks
	t.Seconds += o.Seconds
}

// TopicPlan is what a run would do to one topic: its plan's inputs and outputs and the
// estimated seconds.
type TopicPlan struct {
	TopicID int64
	Locator string
	// Policy is the policy the compaction would apply (auto resolved).
	Policy string
	PlanTotals
	// Estimate says where the estimate of Seconds comes from ("default", "4 recent
	// optimizations").
	Estimate string
	// NothingToDo: the policy selects no chunk of the topic (nothing to join or merge).
	NothingToDo bool `json:",omitempty"`
	// Error is the input fault the optimization would fail with (a bad chunk), "" if none.
	Error string `json:",omitempty"`
}

// PlanTopicsResult is one page of plans. Listed is the number of topics of the page (a page
// with fewer than the limit is the last); NextAfterTopicID the cursor of the next page.
type PlanTopicsResult struct {
	Topics           []TopicPlan
	Listed           int
	NextAfterTopicID int64
	// Quarantined counts the quarantined topics inside Scope (left out), QuarantinedTopics lists the first
	// MaxReportedQuarantined; set on the first page only (AfterTopicID 0).
	Quarantined       int
	QuarantinedTopics []QuarantinedTopic `json:",omitempty"`
}

// PlanTopicsProgress is the heartbeat detail of PlanTopics.
type PlanTopicsProgress struct {
	TopicsPlanned int
	Topics        int
}

// PlanTopics is the dry run of one page of a run: it finds the topics a run of the trigger
// would queue (catalog.TopicsNeedingCompaction: nothing is queued), and for each one runs the
// real planner, ReadSort, with its write switched off (ReadSortInput.DryRun: the policy's
// selection, footers and timestamp columns read, the plan computed and not stored), and estimates
// the seconds from the recent optimizations of its policy (estimate.Fit over
// catalog.RecentCosts). It only reads: no lease, no plan, no queue row, no object is written. A topic with bad input is reported with the error its
// optimization would fail with (TopicPlan.Error). Errors: ErrTypeInput for an unknown policy or
// scope term; ErrTypeStore when the store refuses; others are retried.
func (a *Activities) PlanTopics(ctx context.Context, in PlanTopicsInput) (PlanTopicsResult, error) {
	tr, err := EnqueueTopicsInput{Policy: in.Policy, MinChunks: in.MinChunks, MaxChunkSizeBytes: in.MaxChunkSizeBytes,
		Scope: in.Scope}.trigger()
	if err != nil {
		return PlanTopicsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInput, nil)
	}
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultPlanTopicsLimit
	}
	topics, err := a.Catalog.TopicsNeedingCompaction(ctx, tr, in.AfterTopicID, min(limit, 1000))
	if err != nil {
		return PlanTopicsResult{}, err
	}
	res := PlanTopicsResult{Listed: len(topics), NextAfterTopicID: in.AfterTopicID}
	if in.AfterTopicID == 0 {
		if res.Quarantined, res.QuarantinedTopics, err = a.quarantineReport(ctx, tr.Scope); err != nil {
			return res, err
		}
	}
	models := map[policy.Policy]estimate.Model{}
	for i, nt := range topics {
		model, ok := models[nt.Policy]
		if !ok {
			if model, err = a.estimateModel(ctx, nt.Policy); err != nil {
				return res, err
			}
			models[nt.Policy] = model
		}
		tp, err := a.planOne(ctx, nt, in.MaxChunkSizeBytes, model)
		if err != nil {
			return res, err
		}
		res.Topics = append(res.Topics, tp)
		res.NextAfterTopicID = nt.TopicID
		heartbeat(ctx, PlanTopicsProgress{TopicsPlanned: i + 1, Topics: len(topics)})
	}
	return res, nil
}

// estimateModel fits the estimate of policy p's optimizations to their recent costs.
func (a *Activities) estimateModel(ctx context.Context, p policy.Policy) (estimate.Model, error) {
	costs, err := a.Catalog.RecentCosts(ctx, p, estimate.HistorySize)
	if err != nil {
		return estimate.Model{}, err
	}
	samples := make([]estimate.Sample, len(costs))
	for i, c := range costs {
		samples[i] = estimate.Sample{ArrowBytes: c.InputArrowBytes, Rows: c.Rows, Seconds: c.Seconds}
	}
	return estimate.Fit(samples), nil
}

// planOne plans one topic with ReadSort, its write switched off, and estimates it.
func (a *Activities) planOne(ctx context.Context, nt catalog.NeedingTopic, maxChunkSizeBytes int64, model estimate.Model) (TopicPlan, error) {
	tp := TopicPlan{TopicID: nt.TopicID, Locator: nt.Locator, Policy: string(nt.Policy), Estimate: model.Source()}
	res, err := a.ReadSort(ctx, ReadSortInput{TopicID: nt.TopicID, MaxChunkSizeBytes: maxChunkSizeBytes,
		Policy: string(nt.Policy), DryRun: true})
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.Type() != ErrTypeStore:
		tp.Error = appErr.Message() // the input fault the optimization would fail with
		return tp, nil
	case err != nil:
		return tp, err
	case res.NothingToDo:
		tp.NothingToDo = true
		return tp, nil
	}
	tp.InputChunks, tp.InputBytes, tp.InputArrowBytes, tp.Rows = res.InputChunks, res.InputBytes, res.InputArrowBytes, res.InputRows
	tp.OutputChunks, tp.OutputBytes, tp.PassThroughChunks = res.OutputChunks, res.OutputBytes, res.PassThroughChunks
	tp.Seconds = model.Seconds(tp.InputArrowBytes, tp.Rows)
	return tp, nil
}
