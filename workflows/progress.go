package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/policy"
)

// Live progress of a run (StoreOptimizerWorkflow): what its ProgressQuery answers and what its
// current details (workflow.SetCurrentDetails, the "Current Details" of the Web UI) show, kept up
// to date as children start and finish. Rates and ETAs are computed from workflow time
// (workflow.Now), so they replay identically; current details are not a command, so old
// histories replay unchanged.

// Progress is the answer of StoreOptimizerWorkflow's ProgressQuery: the run's counts so far
// (including earlier executions of the run) and the topics being optimized now. Byte counts are
// Parquet object sizes; times are workflow time. Fields after InFlightLocators were added later:
// they are zero in the answers of executions started before (a client that knows only the first
// five keeps working).
type Progress struct {
	Done             int // topics optimized
	Failed           int
	Skipped          int
	InFlight         int
	InFlightLocators []string // sorted, at most 20

	NothingToDo int
	// Quarantined counts the topics left out because they are quarantined.
	Quarantined int
	// Queued is how many topics the run has to do (EnqueueTopicsResult.ForRun); Finished how
	// many of them are done with, whatever the outcome.
	Queued   int
	Finished int
	// QueuedBytes estimates the input bytes of the queued topics (activities.QueuedTopic.Bytes),
	// FinishedBytes those of the finished ones.
	QueuedBytes   int64
	FinishedBytes int64
	// Rows, InputBytes and OutputBytes total the optimized topics (StoreOptimizerResult).
	Rows        int64
	InputBytes  int64
	OutputBytes int64
	// StartedAt is when the run started; UpdatedAt when these numbers were computed.
	StartedAt      time.Time
	UpdatedAt      time.Time
	ElapsedSeconds float64
	// BytesPerSecond is FinishedBytes per second since StartedAt; 0 before a topic finished.
	BytesPerSecond float64
	// ETASeconds estimates the seconds left: the remaining bytes at BytesPerSecond, or when no
	// byte estimate is known, the remaining topics at the pace so far. Absent when unknown: also
	// before etaMinFraction of the queue (bytes, else topics) is finished.
	ETASeconds *float64 `json:",omitempty"`
	// Ended is true once the run has nothing left to start or wait for.
	Ended bool `json:",omitempty"`
}

// runTotals starts the run's progress totals from what EnqueueTopics found.
func (r *storeRun) runTotals(res activities.EnqueueTopicsResult) {
	r.state.Queued, r.state.QueuedBytes = res.ForRun, res.ForRunBytes
}

// topicFinished counts one topic of the queue as done with (any outcome) and shows the run's
// progress.
func (r *storeRun) topicFinished(ctx workflow.Context, topic activities.QueuedTopic) {
	r.state.Finished++
	r.state.FinishedBytes += topic.Bytes
	r.showProgress(ctx)
}

// showProgress recomputes the run's progress at the current workflow time and publishes it as
// the answer of the progress query and as the workflow's current details.
func (r *storeRun) showProgress(ctx workflow.Context) {
	r.shown = r.progressAt(workflow.Now(ctx))
	workflow.SetCurrentDetails(ctx, runDetails(r.shown, r.in))
}

// endProgress shows the run's final progress.
func (r *storeRun) endProgress(ctx workflow.Context) {
	r.ended = true
	r.showProgress(ctx)
}

// progressAt returns the run's progress at workflow time now.
func (r *storeRun) progressAt(now time.Time) Progress {
	locators := slices.Clone(r.inFlight)
	slices.Sort(locators)
	res, st := r.state.Result, r.state
	p := Progress{
		Done: res.Optimized, Failed: res.Failed, Skipped: res.Skipped, InFlight: len(r.inFlight),
		InFlightLocators: locators[:min(len(locators), maxProgressLocators)],
		NothingToDo:      res.NothingToDo, Quarantined: res.Quarantined,
		Queued: st.Queued, Finished: st.Finished, QueuedBytes: st.QueuedBytes, FinishedBytes: st.FinishedBytes,
		Rows: res.Rows, InputBytes: res.InputBytes, OutputBytes: res.OutputBytes,
		StartedAt: st.StartedAt, UpdatedAt: now, Ended: r.ended,
	}
	elapsed := now.Sub(st.StartedAt).Seconds()
	if st.StartedAt.IsZero() || elapsed <= 0 {
		return p
	}
	p.ElapsedSeconds = elapsed
	p.BytesPerSecond = float64(st.FinishedBytes) / elapsed
	switch {
	case r.ended:
		eta := 0.0
		p.ETASeconds = &eta
	case st.QueuedBytes > 0:
		if enoughSignal(st.FinishedBytes, st.QueuedBytes) {
			eta := float64(max(st.QueuedBytes-st.FinishedBytes, 0)) / p.BytesPerSecond
			p.ETASeconds = &eta
		}
	case st.Queued > 0 && enoughSignal(int64(st.Finished), int64(st.Queued)):
		eta := elapsed / float64(st.Finished) * float64(max(st.Queued-st.Finished, 0))
		p.ETASeconds = &eta
	}
	return p
}

// etaMinFraction is the fraction of the queue (bytes, or topics when no byte estimate is known)
// that must be finished before a run's progress has an ETA. The rate counts finished topics only
// (topics in flight report nothing to the run), so a small topic finishing first while large
// ones are in flight gives a rate far too low: a 4 s run showed "ETA 8m49s" after a GPS topic of
// ~1% of its bytes finished. Below this fraction the ETA is unknown ("—").
const etaMinFraction = 0.05

// enoughSignal is true once done is at least etaMinFraction of total (and above 0).
func enoughSignal(done, total int64) bool {
	return done > 0 && float64(done) >= etaMinFraction*float64(total)
}

// runDetails renders a run's progress as the markdown of its current details.
func runDetails(p Progress, in StoreOptimizerInput) string {
	var b mdText
	state := "Optimizing topics"
	if p.Ended {
		state = "Run finished"
	}
	b.f("### %s: %d of %d finished\n", state, p.Finished, p.Queued)
	b.f("- **optimized** %d · **failed** %d · **skipped** %d · **nothing to do** %d · **in flight** %d",
		p.Done, p.Failed, p.Skipped, p.NothingToDo, p.InFlight)
	if p.Quarantined > 0 {
		b.f(" · **quarantined** %d", p.Quarantined)
	}
	b.WriteString("\n")
	b.f("- **bytes** %s of %s queued%s · %s/s\n", bytesText(p.FinishedBytes), bytesText(p.QueuedBytes),
		percent(p.FinishedBytes, p.QueuedBytes), bytesText(int64(p.BytesPerSecond)))
	b.f("- **elapsed** %s · **ETA** %s\n", secondsText(p.ElapsedSeconds), etaText(p.ETASeconds, p.UpdatedAt))
	if p.Done > 0 {
		b.f("- **written** %s rows, %s → %s\n", humanize.Comma(p.Rows), bytesText(p.InputBytes), bytesText(p.OutputBytes))
	}
	if len(p.InFlightLocators) > 0 {
		names := make([]string, len(p.InFlightLocators))
		for i, l := range p.InFlightLocators {
			names[i] = mdCode(l)
		}
		more := ""
		if p.InFlight > len(names) {
			more = fmt.Sprintf(" and %d more", p.InFlight-len(names))
		}
		b.f("- **in flight** %s%s\n", strings.Join(names, ", "), more)
	}
	b.f("- **policy** %s · **scope** %s\n", policy.Policy(in.Policy).Label(), scopeText(in.Scope))
	return b.String()
}

// Live progress of one topic (OptimizeTopicWorkflow).

// TopicProgress is the answer of OptimizeTopicWorkflow's ProgressQuery and what its current
// details show. Step is the string the query answered before it was an object ("lease",
// "read-sort", "write-chunks 3/10", "commit", "done"). Planned figures come from ReadSort's
// plan (PlannedBytes is its estimate of the bytes written); written figures count the groups
// whose WriteChunks activity completed. Times are workflow time.
type TopicProgress struct {
	Step    string
	Locator string
	// Policy is the policy asked for; AppliedPolicy the one the lease resolved (auto → tiered
	// or leveled), "" before the lease.
	Policy        string
	AppliedPolicy string
	InputChunks   int
	InputBytes    int64
	OutputChunks  int
	Groups        int
	GroupsWritten int
	PlannedRows   int64
	RowsWritten   int64
	PlannedBytes  int64
	BytesWritten  int64
	StartedAt     time.Time
	UpdatedAt     time.Time
	// ElapsedSeconds since StartedAt; BytesPerSecond of write-chunks so far.
	ElapsedSeconds float64
	BytesPerSecond float64
	// ETASeconds estimates the seconds until the output is written: the rows left at the rate
	// of write-chunks so far; absent before the first group is written.
	ETASeconds *float64 `json:",omitempty"`
}

// topicProgress is the progress state of one OptimizeTopicWorkflow execution.
type topicProgress struct {
	TopicProgress
	writeStart time.Time // when write-chunks started
}

// planned records the plan ReadSort stored.
func (o *topicOptimization) planned(plan activities.ReadSortResult) {
	p := &o.progress
	p.InputChunks, p.InputBytes, p.OutputChunks, p.Groups = plan.InputChunks, plan.InputBytes, plan.OutputChunks, plan.Groups
	p.PlannedRows, p.PlannedBytes = plan.InputRows, plan.OutputBytes
}

// groupWritten records one completed WriteChunks group.
func (o *topicOptimization) groupWritten(res activities.WriteChunksResult) {
	p := &o.progress
	p.GroupsWritten++
	p.RowsWritten += res.Rows
	p.BytesWritten += res.Bytes
}

// setStep sets the current step and shows the topic's progress.
func (o *topicOptimization) setStep(ctx workflow.Context, step string) {
	o.progress.Step = step
	o.showProgress(ctx)
}

// showProgress recomputes the topic's progress at the current workflow time and publishes it as
// the answer of the progress query and as the workflow's current details.
func (o *topicOptimization) showProgress(ctx workflow.Context) {
	p := &o.progress
	p.AppliedPolicy = o.policy
	now := workflow.Now(ctx)
	p.UpdatedAt = now
	p.ElapsedSeconds = max(now.Sub(p.StartedAt).Seconds(), 0)
	p.ETASeconds = nil
	if writing := now.Sub(p.writeStart).Seconds(); !p.writeStart.IsZero() && writing > 0 && p.RowsWritten > 0 {
		// Rows, not bytes: the plan's row counts are exact, its bytes an estimate.
		p.BytesPerSecond = float64(p.BytesWritten) / writing
		eta := float64(max(p.PlannedRows-p.RowsWritten, 0)) * writing / float64(p.RowsWritten)
		if p.GroupsWritten == p.Groups {
			eta = 0
		}
		p.ETASeconds = &eta
	}
	workflow.SetCurrentDetails(ctx, topicDetails(p.TopicProgress))
}

// topicDetails renders a topic's progress as the markdown of its current details.
func topicDetails(p TopicProgress) string {
	var b mdText
	b.f("### %s · %s\n", p.Step, mdCode(p.Locator))
	applied := ""
	if p.AppliedPolicy != "" && p.AppliedPolicy != policy.Policy(p.Policy).Label() {
		applied = " → " + p.AppliedPolicy
	}
	b.f("- **policy** %s%s\n", policy.Policy(p.Policy).Label(), applied)
	if p.Groups > 0 {
		b.f("- **plan** %d chunks (%s) → %d chunks, %d groups\n", p.InputChunks, bytesText(p.InputBytes),
			p.OutputChunks, p.Groups)
		b.f("- **rows** %s of %s%s\n", humanize.Comma(p.RowsWritten), humanize.Comma(p.PlannedRows),
			percent(p.RowsWritten, p.PlannedRows))
		b.f("- **bytes** %s of about %s%s · %s/s\n", bytesText(p.BytesWritten), bytesText(p.PlannedBytes),
			percent(p.BytesWritten, p.PlannedBytes), bytesText(int64(p.BytesPerSecond)))
	}
	b.f("- **elapsed** %s · **ETA** %s\n", secondsText(p.ElapsedSeconds), etaText(p.ETASeconds, p.UpdatedAt))
	return b.String()
}

// bytesText renders bytes in SI units ("1.2 GB").
func bytesText(n int64) string { return humanize.Bytes(uint64(max(n, 0))) }

// percent renders " (27%)" for part of whole, "" when whole is not positive.
func percent(part, whole int64) string {
	if whole <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d%%)", part*100/whole)
}

// secondsText renders seconds as a duration rounded to the second ("1m13s").
func secondsText(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

// etaText renders an ETA and the time it points at, or "unknown".
func etaText(eta *float64, now time.Time) string {
	if eta == nil {
		return "unknown"
	}
	at := now.Add(time.Duration(*eta * float64(time.Second))).UTC()
	return fmt.Sprintf("%s (%s UTC)", secondsText(*eta), at.Format("15:04:05"))
}

// scopeText renders scope terms ("all" when none).
func scopeText(scope []string) string {
	if len(scope) == 0 {
		return "all"
	}
	return strings.Join(scope, ", ")
}

// mdCode renders s as inline code in markdown (backticks in s become quotes).
func mdCode(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// mdText builds markdown text. (fmt.Fprintf would do, but workflowcheck takes every Fprint for
// I/O.)
type mdText struct{ strings.Builder }

// f appends fmt.Sprintf(format, args...).
func (t *mdText) f(format string, args ...any) { t.WriteString(fmt.Sprintf(format, args...)) }
