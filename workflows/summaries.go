package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/policy"
)

// Activity summaries: one line per scheduled activity that says what it does, shown by the Web
// UI in the event history and the timeline (workflow.ActivityOptions.Summary, user metadata of
// the ActivityTaskScheduled event). They are not part of the command the SDK checks on replay
// (activity ID and type), so changing them never breaks running executions.

// withSummary returns ctx with the activity summary set (cut to the server's limit by
// fitSummary: before + subject + after, subject shortened first).
func withSummary(ctx workflow.Context, before, subject, after string) workflow.Context {
	opts := workflow.GetActivityOptions(ctx)
	opts.Summary = fitSummary(before, subject, after)
	return workflow.WithActivityOptions(ctx, opts)
}

// enqueueSummary: "enqueue topics for full compaction (trigger 2 L0 chunks, scope all)".
func enqueueSummary(ctx workflow.Context, in StoreOptimizerInput) workflow.Context {
	return withSummary(ctx, fmt.Sprintf("enqueue topics for %s compaction (trigger %d L0 chunks, scope ", policy.Policy(in.Policy).Label(),
		triggerChunks(in.MinChunks)), scopeText(in.Scope), ")")
}

// listSummary: "list queued topics after topic 120 (page of 100)".
func listSummary(ctx workflow.Context, after int64, pageSize int) workflow.Context {
	return withSummary(ctx, "", fmt.Sprintf("list queued topics after topic %d (page of %d)", after, pageSize), "")
}

// leaseSummary: "lease run_7/imu (auto)".
func (o *topicOptimization) leaseSummary(ctx workflow.Context) workflow.Context {
	return withSummary(ctx, "lease ", o.in.Locator, " ("+policy.Policy(o.in.Policy).Label()+")")
}

// readSortSummary: "read-sort run_7/imu (auto → tiered)", or "(full)" when the lease kept the
// policy asked for.
func (o *topicOptimization) readSortSummary(ctx workflow.Context) workflow.Context {
	pol := policy.Policy(o.in.Policy).Label()
	if o.policy != "" && o.policy != pol {
		pol += " → " + o.policy
	}
	return withSummary(ctx, "read-sort ", o.in.Locator, " ("+pol+")")
}

// writeSummary: "write chunk 3/10 of run_7/imu" when each group is one output chunk, else
// "write group 3/10 of run_7/imu (40 chunks)"; group counts from 0, the summary from 1.
func (o *topicOptimization) writeSummary(ctx workflow.Context, group int) workflow.Context {
	p := o.progress
	if p.OutputChunks == p.Groups {
		return withSummary(ctx, fmt.Sprintf("write chunk %d/%d of ", group+1, p.Groups), o.in.Locator, "")
	}
	return withSummary(ctx, fmt.Sprintf("write group %d/%d of ", group+1, p.Groups), o.in.Locator,
		fmt.Sprintf(" (%d chunks)", p.OutputChunks))
}

// commitSummary: "commit run_7/imu (2000 → 5 chunks)".
func (o *topicOptimization) commitSummary(ctx workflow.Context) workflow.Context {
	p := o.progress
	return withSummary(ctx, "commit ", o.in.Locator, fmt.Sprintf(" (%d → %d chunks)", p.InputChunks, p.OutputChunks))
}

// releaseSummary: "release run_7/imu (nothing to do)", "release run_7/imu (read-sort failed)".
func (o *topicOptimization) releaseSummary(ctx workflow.Context, why string) workflow.Context {
	return withSummary(ctx, "release ", o.in.Locator, " ("+readablePrefix(why, 80)+")")
}

// triggerChunks is the trigger a run applies for MinChunks (0 = policy.DefaultMinChunks).
func triggerChunks(minChunks int) int {
	if minChunks <= 0 {
		return policy.DefaultMinChunks
	}
	return minChunks
}
