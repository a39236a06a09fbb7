package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/workflows"
)

// CleanupScheduleID is the ID of the Temporal Schedule that starts cleanup passes periodically
// on the default task queue (see CleanupScheduleIDFor).
const CleanupScheduleID = "storeopt-cleanup"

// CleanupScheduleIDFor returns the ID of the cleanup Schedule of the installation whose workers
// poll taskQueue: CleanupScheduleID on the default task queue, CleanupScheduleID + ":" + the
// task queue on any other (as ScheduleIDFor).
func CleanupScheduleIDFor(taskQueue string) string {
	return perTaskQueue(CleanupScheduleID, taskQueue)
}

// CleanupWorkflowIDPrefix starts the workflow ID of every cleanup pass started by StartCleanup
// ("storeopt-cleanup-<ULID>"); ScheduledCleanupWorkflowID is the workflow ID prefix of passes
// started by the schedule (Temporal appends the time; ":<task queue>" comes first on a task queue
// other than the default, as CleanupScheduleIDFor).
const (
	CleanupWorkflowIDPrefix    = "storeopt-cleanup-"
	ScheduledCleanupWorkflowID = "storeopt-cleanup-scheduled"
)

// DefaultRetentionDuration is how long an unreferenced prefix is kept before cleanup deletes it.
const DefaultRetentionDuration = workflows.DefaultRetentionDuration

// CleanupOptions are the knobs of one cleanup pass (CleanupWorkflow input).
type CleanupOptions struct {
	// RetentionDuration is how long an unreferenced prefix stays marked before its objects are
	// deleted (database clock); 0 deletes at once. The starter's default is
	// DefaultRetentionDuration.
	RetentionDuration time.Duration
}

// Validate reports a negative retention.
func (o CleanupOptions) Validate() error {
	if o.RetentionDuration < 0 {
		return fmt.Errorf("retention duration %s is negative (0 deletes at once)", o.RetentionDuration)
	}
	return nil
}

// Input returns the CleanupWorkflow input of a pass with these options.
func (o CleanupOptions) Input() workflows.CleanupInput {
	return workflows.CleanupInput{RetentionDuration: workflows.RetentionOf(o.RetentionDuration)}
}

// StartCleanup starts one CleanupWorkflow with ID "storeopt-cleanup-<ULID>" on cfg.TaskQueue and
// returns its handle without waiting.
func StartCleanup(ctx context.Context, c client.Client, cfg Config, opts CleanupOptions) (client.WorkflowRun, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return startWorkflow(ctx, c, cfg, CleanupWorkflowIDPrefix, "CleanupWorkflow", workflows.CleanupWorkflow,
		opts.Input())
}

// WaitCleanup waits for a pass started by StartCleanup and returns its result. Deletion failures
// are in the result (DeleteFailed, Errors); the error is for a pass that did not complete.
func WaitCleanup(ctx context.Context, run client.WorkflowRun) (workflows.CleanupResult, error) {
	var res workflows.CleanupResult
	if err := run.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("cleanup %s: %w", run.GetID(), err)
	}
	return res, nil
}

// RunCleanup runs one cleanup pass: StartCleanup, then WaitCleanup.
func RunCleanup(ctx context.Context, c client.Client, cfg Config, opts CleanupOptions) (workflows.CleanupResult, error) {
	run, err := StartCleanup(ctx, c, cfg, opts)
	if err != nil {
		return workflows.CleanupResult{}, err
	}
	return WaitCleanup(ctx, run)
}

// EnsureCleanupSchedule creates the Temporal Schedule CleanupScheduleIDFor(cfg.TaskQueue), or
// updates it when it exists, so that it starts CleanupWorkflow with opts on cfg.TaskQueue every
// interval or on cron (see ScheduleSpecFor) with overlap policy SKIP. A schedule it creates is unpaused; one it
// updates keeps its paused state (an operator paused it on purpose).
func EnsureCleanupSchedule(ctx context.Context, c client.Client, cfg Config, opts CleanupOptions, interval time.Duration, cron string) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	spec, err := ScheduleSpecFor(interval, cron)
	if err != nil {
		return err
	}
	return upsertSchedule(ctx, c, CleanupScheduleIDFor(cfg.TaskQueue), spec, &client.ScheduleWorkflowAction{
		ID:        perTaskQueue(ScheduledCleanupWorkflowID, cfg.TaskQueue),
		Workflow:  workflows.CleanupWorkflow,
		Args:      []any{opts.Input()},
		TaskQueue: cfg.TaskQueue,
	})
}

// upsertSchedule creates the schedule id with spec and action and overlap policy SKIP, or, when
// it exists, replaces its spec and action and sets SKIP, leaving it paused if it was. It looks
// the schedule up first, so that an error (a bad cron expression, say) names the operation it
// failed: "update schedule" for an existing schedule, "create schedule" for a new one.
func upsertSchedule(ctx context.Context, c client.Client, id string, spec client.ScheduleSpec, action *client.ScheduleWorkflowAction) error {
	h := c.ScheduleClient().GetHandle(ctx, id)
	if _, err := h.Describe(ctx); err != nil {
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			return fmt.Errorf("describe schedule %s: %w", id, err)
		}
		_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID:      id,
			Spec:    spec,
			Action:  action,
			Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			return fmt.Errorf("create schedule %s: %w", id, err)
		}
		// Created by someone else since the Describe: update it.
	}
	err := h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &spec
			s.Action = action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			// A paused schedule stays paused: an operator paused it on purpose
			// (`temporal schedule toggle --unpause` resumes it).
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, err)
	}
	return nil
}

// WriteCleanupSummary writes the report of a finished cleanup pass: the retention, the counts of
// prefixes by outcome, of temporary files of unfinished file:// writes and of unfinished S3
// multipart uploads, then one line per deletion or abort error.
func WriteCleanupSummary(w io.Writer, workflowID string, res workflows.CleanupResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cleanup\t%s\n", workflowID)
	fmt.Fprintf(tw, "retention\t%s\n", res.RetentionDuration)
	fmt.Fprintf(tw, "prefixes\t%d\n", res.Prefixes)
	fmt.Fprintf(tw, "referenced\t%d\n", res.Referenced)
	fmt.Fprintf(tw, "marked\t%d\n", res.Marked)
	fmt.Fprintf(tw, "unmarked\t%d\n", res.Unmarked)
	fmt.Fprintf(tw, "pending\t%d\n", res.Pending)
	fmt.Fprintf(tw, "deleted\t%d (%d objects)\n", res.Deleted, res.DeletedObjects)
	fmt.Fprintf(tw, "delete failed\t%d\n", res.DeleteFailed)
	if res.TempFiles > 0 {
		fmt.Fprintf(tw, "temp files\t%d found, %d deleted, %d failed (left by unfinished file:// writes; younger ones wait for the retention)\n",
			res.TempFiles, res.TempFilesDeleted, res.TempFilesFailed)
	}
	if res.Uploads > 0 {
		fmt.Fprintf(tw, "uploads\t%d found, %d aborted (%d bytes), %d failed (unfinished S3 multipart uploads; younger ones and those of running optimizations are kept)\n",
			res.Uploads, res.UploadsAborted, res.UploadBytesAborted, res.UploadsFailed)
	}
	if res.ReplacedDeleted+res.ReplacedPending+res.ReplacedFailed > 0 {
		fmt.Fprintf(tw, "replaced objects\t%d deleted, %d pending, %d failed (chunks replaced by compactions of live topics)\n",
			res.ReplacedDeleted, res.ReplacedPending, res.ReplacedFailed)
	}
	if res.Ignored > 0 {
		fmt.Fprintf(tw, "ignored\t%d (top-level entries that are not tp_<ULID>/ prefixes)\n", res.Ignored)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Errors) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\ndeletion and abort errors:")
	for _, e := range res.Errors {
		fmt.Fprintln(w, oneLine(e))
	}
	if more := res.DeleteFailed + res.TempFilesFailed + res.UploadsFailed + res.ReplacedFailed - len(res.Errors); more > 0 {
		fmt.Fprintf(w, "… %d more (see the worker log)\n", more)
	}
	return nil
}

// WriteQuarantine writes one line per quarantined topic: locator, consecutive failures, since
// (RFC 3339, UTC) and reason.
func WriteQuarantine(w io.Writer, topics []catalog.FailureRecord) error {
	if len(topics) == 0 {
		_, err := fmt.Fprintln(w, "no quarantined topics")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "locator\tfailures\tsince\treason")
	for _, f := range topics {
		since := ""
		if f.QuarantinedAt != nil {
			since = f.QuarantinedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", f.Locator, f.Failures, since, oneLine(f.Reason()))
	}
	return tw.Flush()
}

// writeQuarantinedTopics writes the quarantined topics a run reported, one line each.
func writeQuarantinedTopics(w io.Writer, res workflows.StoreOptimizerResult) error {
	if len(res.QuarantinedTopics) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nquarantined topics (skipped):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "locator\tfailures\treason")
	for _, q := range res.QuarantinedTopics {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", q.Locator, q.Failures, oneLine(q.Reason))
	}
	if res.Quarantined > len(res.QuarantinedTopics) {
		fmt.Fprintf(tw, "…\t\t%d more (see `starter quarantine list`)\n", res.Quarantined-len(res.QuarantinedTopics))
	}
	return tw.Flush()
}
