package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/policy"
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

// dryRunContinueAsNewChange is the workflow.GetVersion change ID of dry runs that continue as
// new (version 1): executions recorded before it plan every page in one history, as they did.
const dryRunContinueAsNewChange = "dry-run-continue-as-new"

// dryRun plans every topic the run would optimize, page by page (PlanTopics, which only reads:
// nothing is queued, leased, written or changed), and returns the plans in the result's DryRun.
// It starts no child. Only runs with DryRun take this path, so histories of other runs replay
// unchanged.
//
// Like a real run, once the history holds ContinueAsNewEvents events (or the server suggests it)
// after a full page, it continues as new from the cursor (RunState.AfterTopicID), carrying the
// report so far in RunState.Result.DryRun: a dry run over any number of topics keeps its history
// bounded (docs/design.md#payloads-stay-small: the report lists at most MaxDryRunTopics plans).
func (r *storeRun) dryRun(ctx workflow.Context) (StoreOptimizerResult, error) {
	continues := workflow.GetVersion(ctx, dryRunContinueAsNewChange, workflow.DefaultVersion, 1) == 1
	report := &DryRunReport{}
	if r.state.Result.DryRun != nil {
		report = r.state.Result.DryRun
	}
	after := r.state.AfterTopicID
	for {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("### Dry run: %d topics planned\n- **policy** %s · **scope** %s\n",
			report.Planned, policy.Policy(r.in.Policy).Label(), scopeText(r.in.Scope)))
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
		if continues && r.historyFull(ctx) {
			r.state.AfterTopicID = after
			r.state.Result.DryRun = report
			r.logger.Info("Dry run continuing as new", "NextAfterTopicID", after, "Planned", report.Planned,
				"HistoryLength", workflow.GetInfo(ctx).GetCurrentHistoryLength())
			next := r.in
			next.State = &r.state
			return StoreOptimizerResult{}, workflow.NewContinueAsNewError(ctx, StoreOptimizerWorkflow, next)
		}
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("### Dry run: %d topics planned\n- **read** %s in %d chunks · **write** about %s in %d chunks · **about** %s\n",
		report.Planned, bytesText(report.InputBytes), report.InputChunks, bytesText(report.OutputBytes), report.OutputChunks,
		secondsText(report.Seconds)))
	r.state.Result.DryRun = report
	r.logger.Info("Dry run finished", "Planned", report.Planned, "InputBytes", report.InputBytes,
		"OutputBytes", report.OutputBytes, "Seconds", report.Seconds)
	return r.state.Result, nil
}
