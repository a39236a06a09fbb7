package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oklog/ulid/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/workflows"
)

// ScheduleID is the ID of the Temporal Schedule that starts optimization runs periodically on
// the default task queue (see ScheduleIDFor).
const ScheduleID = "storeopt-store-optimizer"

// ScheduleIDFor returns the ID of the Schedule of optimization runs of the installation whose
// workers poll taskQueue: ScheduleID on the default task queue (workflows.TaskQueue; the ID
// schedules had before installations were told apart, so an existing schedule is updated, not
// joined by a second), ScheduleID + ":" + the task queue (workflows.TaskQueueIDPart) on any
// other. Two installations on one namespace thus each keep a schedule of their own.
func ScheduleIDFor(taskQueue string) string {
	return perTaskQueue(ScheduleID, taskQueue)
}

// perTaskQueue returns id on the default task queue, id + ":" + the task queue otherwise.
func perTaskQueue(id, taskQueue string) string {
	if taskQueue == workflows.TaskQueue {
		return id
	}
	return id + ":" + workflows.TaskQueueIDPart(taskQueue)
}

// RunWorkflowIDPrefix starts the workflow ID of every run started by RunPass
// ("storeopt-run-<ULID>"), ScheduledWorkflowIDPrefix that of every run started by the schedule
// ("storeopt-scheduled-<time>", on a task queue other than the default
// "storeopt-scheduled:<task queue>-<time>", as ScheduleIDFor).
const (
	RunWorkflowIDPrefix       = "storeopt-run-"
	ScheduledWorkflowIDPrefix = "storeopt-scheduled"
)

// DefaultMaxChunkSizeBytes is the default soft size limit of one output chunk, bytes.
const DefaultMaxChunkSizeBytes int64 = workflows.DefaultMaxChunkSizeBytes

// PassOptions are the knobs of one optimization run (StoreOptimizerWorkflow input). Zero values
// leave the workflow's defaults.
type PassOptions struct {
	// MaxChunkSizeBytes is the soft limit of one output chunk, bytes.
	MaxChunkSizeBytes int64
	// MaxConcurrentTopics is how many topics larger than MaxChunkSizeBytes are optimized at once;
	// MaxConcurrentSmallTopics how many smaller ones besides (0 = the workflow's defaults).
	MaxConcurrentTopics      int
	MaxConcurrentSmallTopics int
	// BatchTopics is how many tiny topics one activity optimizes (0 = the workflow's default,
	// 1 = a topic workflow for every topic).
	BatchTopics int
	// BatchTopicBytes is the largest estimated input of a topic optimized in a batch, bytes (0 =
	// the workflow's default, 1 MiB).
	BatchTopicBytes int64
	// TopicParallelism is how many WriteChunks activities of one topic run at once.
	TopicParallelism int
	// PageSize is how many queued topics one ListQueuedTopics lists.
	PageSize int
	// Policy is the compaction policy ("" = full), MinChunks its trigger (L0 chunks; 0 = 2) and
	// Scope the topics it may touch ("all", "sequence:NAME", "topic:LOCATOR"; none = all).
	Policy    string
	MinChunks int
	Scope     []string
	// DryRun plans the run's topics and estimates them without changing anything
	// (StoreOptimizerInput.DryRun).
	DryRun bool
}

// Validate reports a negative option or a page size beyond workflows.MaxPageSize.
func (o PassOptions) Validate() error {
	for _, n := range []struct {
		what  string // the message, with %d for the value
		value int64
	}{
		{"max chunk size %d bytes", o.MaxChunkSizeBytes},
		{"max concurrent topics %d", int64(o.MaxConcurrentTopics)},
		{"max concurrent small topics %d", int64(o.MaxConcurrentSmallTopics)},
		{"batch topics %d", int64(o.BatchTopics)},
		{"batch topic bytes %d", o.BatchTopicBytes},
		{"topic parallelism %d", int64(o.TopicParallelism)},
		{"page size %d", int64(o.PageSize)},
		{"min chunks %d", int64(o.MinChunks)},
	} {
		if n.value < 0 {
			return fmt.Errorf(n.what+" is negative", n.value)
		}
	}
	if o.PageSize > workflows.MaxPageSize {
		return fmt.Errorf("page size %d is more than %d, the most queued topics a run lists at a time", o.PageSize, workflows.MaxPageSize)
	}
	if _, err := policy.Parse(o.Policy); err != nil {
		return err
	}
	_, err := policy.ParseScope(o.Scope)
	return err
}

// Input returns the StoreOptimizerWorkflow input of a fresh run with these options.
func (o PassOptions) Input() workflows.StoreOptimizerInput {
	return workflows.StoreOptimizerInput{
		MaxChunkSizeBytes:        o.MaxChunkSizeBytes,
		MaxConcurrentTopics:      o.MaxConcurrentTopics,
		MaxConcurrentSmallTopics: o.MaxConcurrentSmallTopics,
		BatchTopics:              o.BatchTopics,
		BatchTopicBytes:          o.BatchTopicBytes,
		TopicParallelism:         o.TopicParallelism,
		PageSize:                 o.PageSize,
		Policy:                   o.Policy,
		MinChunks:                o.MinChunks,
		Scope:                    o.Scope,
		DryRun:                   o.DryRun,
	}
}

// StartPass starts one StoreOptimizerWorkflow with ID "storeopt-run-<ULID>" on cfg.TaskQueue and
// returns its handle without waiting.
func StartPass(ctx context.Context, c client.Client, cfg Config, opts PassOptions) (client.WorkflowRun, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return startWorkflow(ctx, c, cfg, RunWorkflowIDPrefix, "StoreOptimizerWorkflow", workflows.StoreOptimizerWorkflow,
		opts.Input())
}

// startWorkflow starts workflow (named name in errors) with input in on cfg.TaskQueue, with ID
// idPrefix + a fresh ULID (never reused), and returns its handle without waiting.
func startWorkflow(ctx context.Context, c client.Client, cfg Config, idPrefix, name string, workflow, in any) (
	client.WorkflowRun, error) {
	id := idPrefix + ulid.Make().String()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             cfg.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflow, in)
	if err != nil {
		return nil, fmt.Errorf("start %s %s on task queue %s: %w", name, id, cfg.TaskQueue, err)
	}
	return run, nil
}

// RunPass runs one optimization pass: it starts StoreOptimizerWorkflow (see StartPass), waits for
// it (across continue-as-new) and returns its result. Topic failures are in the result, not in
// the error; the error is for a run that could not start or did not complete.
func RunPass(ctx context.Context, c client.Client, cfg Config, opts PassOptions) (workflows.StoreOptimizerResult, error) {
	run, err := StartPass(ctx, c, cfg, opts)
	if err != nil {
		return workflows.StoreOptimizerResult{}, err
	}
	return WaitPass(ctx, run)
}

// WaitPass waits for a run started by StartPass (across continue-as-new) and returns its result.
func WaitPass(ctx context.Context, run client.WorkflowRun) (workflows.StoreOptimizerResult, error) {
	var res workflows.StoreOptimizerResult
	if err := run.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("run %s: %w", run.GetID(), err)
	}
	return res, nil
}

// ScheduleSpecFor returns the spec of a schedule that fires every interval, or on the cron
// expression (standard 5-field cron, or @every/@hourly… forms Temporal accepts). Exactly one of
// them must be given.
func ScheduleSpecFor(interval time.Duration, cron string) (client.ScheduleSpec, error) {
	cron = strings.TrimSpace(cron)
	switch {
	case interval < 0:
		return client.ScheduleSpec{}, fmt.Errorf("schedule interval %s is negative", interval)
	case interval > 0 && cron != "":
		return client.ScheduleSpec{}, errors.New("give a schedule interval or a cron expression, not both")
	case interval > 0:
		return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}, nil
	case cron != "":
		return client.ScheduleSpec{CronExpressions: []string{cron}}, nil
	}
	return client.ScheduleSpec{}, errors.New("a schedule needs an interval or a cron expression")
}

// EnsureSchedule creates the Temporal Schedule ScheduleIDFor(cfg.TaskQueue), or updates it when
// it exists, so that it starts StoreOptimizerWorkflow with opts on cfg.TaskQueue every interval
// or on cron (see ScheduleSpecFor) with overlap policy SKIP: a run that is still going when the
// next one is due makes the schedule skip that one. A schedule it creates is unpaused; one it updates keeps its
// paused state (an operator paused it on purpose).
func EnsureSchedule(ctx context.Context, c client.Client, cfg Config, opts PassOptions, interval time.Duration, cron string) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.DryRun {
		return errors.New("a dry run is not scheduled: run it once, without --time-interval or --cron")
	}
	spec, err := ScheduleSpecFor(interval, cron)
	if err != nil {
		return err
	}
	return upsertSchedule(ctx, c, ScheduleIDFor(cfg.TaskQueue), spec, &client.ScheduleWorkflowAction{
		ID:        perTaskQueue(ScheduledWorkflowIDPrefix, cfg.TaskQueue),
		Workflow:  workflows.StoreOptimizerWorkflow,
		Args:      []any{opts.Input()},
		TaskQueue: cfg.TaskQueue,
	})
}

// WriteSummary writes the summary of a finished run: counts of optimized, skipped, failed and
// quarantined topics (and those not attempted after a store fault, if any), rows and chunk/byte totals,
// then the store fault that stopped the run if any, one line per quarantined topic with its
// reason and one per failed topic with its locator and error (in short for the store fault).
func WriteSummary(w io.Writer, runID string, res workflows.StoreOptimizerResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", runID)
	fmt.Fprintf(tw, "optimized\t%d\n", res.Optimized)
	if res.Tiered > 0 || res.Leveled > 0 {
		fmt.Fprintf(tw, "  tiered\t%d\n", res.Tiered)
		fmt.Fprintf(tw, "  leveled\t%d\n", res.Leveled)
	}
	if res.NothingToDo > 0 {
		fmt.Fprintf(tw, "nothing to do\t%d\n", res.NothingToDo)
	}
	fmt.Fprintf(tw, "skipped\t%d\n", res.Skipped)
	fmt.Fprintf(tw, "failed\t%d\n", res.Failed)
	if res.NotAttempted > 0 {
		fmt.Fprintf(tw, "not attempted\t%d (the run stopped on a store fault; they stay queued, as do topics after them)\n", res.NotAttempted)
	}
	if res.Quarantined > 0 {
		fmt.Fprintf(tw, "quarantined\t%d (not optimized; see `starter quarantine list`)\n", res.Quarantined)
	}
	fmt.Fprintf(tw, "rows\t%d\n", res.Rows)
	fmt.Fprintf(tw, "chunks\t%d -> %d\n", res.InputChunks, res.OutputChunks)
	fmt.Fprintf(tw, "bytes\t%d -> %d\n", res.InputBytes, res.OutputBytes)
	if d := res.Debt; d != nil {
		// The catalog's, not the run's scope's: what the fleet owes, which a scoped run may
		// leave as it is.
		fmt.Fprintf(tw, "debt at start (all topics)\t%d L0 chunks (%d bytes, %d uncompacted, the oldest %.1f s old); %d topics in the catalog, %d over the trigger of %d L0 chunks, most in one topic %d\n",
			d.L0Chunks, d.L0Bytes, d.UncompactedChunks, d.OldestUncompactedSeconds, d.Topics, d.TopicsOverTrigger, d.TriggerMinChunks, d.MaxTopicL0Chunks)
		// The write signal is what ingestion is told to do (docs/operations.md#the-write-signal): slow down its
		// writes to a topic, or stop them until it is compacted.
		fmt.Fprintf(tw, "write signal at start\t%s told to delay writes, %d to stop them\n", plural(d.DelayedTopics, "topic"), d.StoppedTopics)
		fmt.Fprintf(tw, "write amplification at start\t%.2f (%d bytes written by compactions, %d ingested, ever)\n",
			d.WriteAmplification, d.CompactionWrittenBytes, d.IngestedBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.StoreFault != "" {
		fmt.Fprintf(w, "\nstore fault: %d topics in a row failed the same way, so the run stopped starting topics:\n  %s\n",
			workflows.StoreFaultLimit, oneLine(res.StoreFault))
	}
	if err := writeQuarantinedTopics(w, res); err != nil {
		return err
	}
	if len(res.Failures) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nfailed topics:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "locator\terror")
	// Failures with the store fault that stopped the run ("store <URL>: <cause>") say so in
	// short: the fault is printed once, above.
	faultKey, _, _ := strings.Cut(res.StoreFault, " (")
	for _, f := range res.Failures {
		msg := oneLine(f.Error)
		if before, _, hit := strings.Cut(msg, faultKey); faultKey != "" && hit {
			msg = before + "the store fault above"
		}
		fmt.Fprintf(tw, "%s\t%s\n", f.Locator, msg)
	}
	if res.Failed > len(res.Failures) {
		fmt.Fprintf(tw, "…\t%d more failures not listed (see the Web UI)\n", res.Failed-len(res.Failures))
	}
	return tw.Flush()
}

// oneLine folds a multi-line error message onto one line for the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// plural renders n and noun, with an s for any n but 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
