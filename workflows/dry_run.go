package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// MaxDryRunTopics is how many topic plans a dry run's report lists; its totals count them all.
const MaxDryRunTopics = 1000

// DryRunReport is what a run would do (StoreOptimizerInput.DryRun): the plan of every topic it
// would optimize, the first MaxDryRunTopics of them in Topics (topic ID order), and the totals
// of all. Bytes are object sizes (OutputBytes the plans' estimate), ArrowBytes uncompressed.
// Seconds sums the topics' estimates: the run's seconds with one topic at a time.
type DryRunReport struct {
	Topics      []activities.TopicPlan
	Planned     int // topics planned (listed or not)
	NothingToDo int // topics the policy selects no chunk of
	WouldFail   int // topics with bad input (TopicPlan.Error)
	// PlanTotals sums the plans of the topics that would be optimized.
	activities.PlanTotals
}

// add counts one page of plans.
func (d *DryRunReport) add(page activities.PlanTopicsResult) {
	for _, tp := range page.Topics {
		d.Planned++
		if len(d.Topics) < MaxDryRunTopics {
			d.Topics = append(d.Topics, tp)
		}
		switch {
		case tp.NothingToDo:
			d.NothingToDo++
		case tp.Error != "":
			d.WouldFail++
		default:
			d.PlanTotals.Add(tp.PlanTotals)
		}
	}
}

// dryRun plans every topic the run would optimize, page by page (PlanTopics, which only reads:
// nothing is queued, leased, written or changed), and returns the plans in the result's DryRun.
// It starts no child. Only runs with DryRun take this path, so histories of other runs replay
// unchanged.
func (r *storeRun) dryRun(ctx workflow.Context) (StoreOptimizerResult, error) {
	report := &DryRunReport{}
	after := int64(0)
	for {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("### Dry run: %d topics planned\n- **policy** %s · **scope** %s\n",
			report.Planned, policyName(r.in.Policy), scopeText(r.in.Scope)))
		var page activities.PlanTopicsResult
		actx := withSummary(withDataOptions(ctx, r.in.HeartbeatTimeout), "",
			fmt.Sprintf("plan topics after topic %d (dry run, page of %d)", after, r.in.PageSize), "")
		err := workflow.ExecuteActivity(actx, a.PlanTopics, activities.PlanTopicsInput{
			Policy: r.in.Policy, MinChunks: r.in.MinChunks, MaxChunkSizeBytes: r.in.MaxChunkSizeBytes, Scope: r.in.Scope,
			AfterTopicID: after, Limit: r.in.PageSize,
		}).Get(ctx, &page)
		if err != nil {
			return r.state.Result, err
		}
		if after == 0 {
			r.state.Result.Quarantined, r.state.Result.QuarantinedTopics = page.Quarantined, page.QuarantinedTopics
		}
		report.add(page)
		if page.Listed < r.in.PageSize || page.NextAfterTopicID <= after {
			break // a short page is the last (a cursor that does not advance would loop)
		}
		after = page.NextAfterTopicID
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("### Dry run: %d topics planned\n- **read** %s in %d chunks · **write** about %s in %d chunks · **about** %s\n",
		report.Planned, bytesText(report.InputBytes), report.InputChunks, bytesText(report.OutputBytes), report.OutputChunks,
		secondsText(report.Seconds)))
	r.state.Result.DryRun = report
	r.logger.Info("Dry run finished", "Planned", report.Planned, "InputBytes", report.InputBytes,
		"OutputBytes", report.OutputBytes, "Seconds", report.Seconds)
	return r.state.Result, nil
}
