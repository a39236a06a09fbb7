package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/workflows"
)

// errDeleteFailed is returned by a cleanup pass in which at least one prefix or temporary file
// could not be deleted or an unfinished upload not aborted (exit status 1).
var errDeleteFailed = errors.New("some prefixes or temporary files could not be deleted, or uploads not aborted")

func newCleanupCommand(e *env) *cobra.Command {
	var (
		retentionSeconds int64
		intervalSeconds  int64
		cron             string
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete unreferenced data prefixes after a retention period, once or on a schedule",
		Long: `Without --time-interval or --cron: start one CleanupWorkflow pass ("storeopt-cleanup-<ULID>"),
wait for it and print a report. Exit status 1 when a prefix or temporary file could not be deleted
or an unfinished upload not aborted.

A pass lists every top-level tp_<ULID>/ prefix of the store. A prefix that a topic (its data
prefix), a running optimization (its lease's fresh prefix) or a plan references is kept. An
unreferenced prefix is marked the first time a pass sees it; a marked prefix referenced again is
unmarked; a prefix marked at least --retention-duration seconds ago (catalog database clock) is
checked again and its objects deleted. The old prefix of an optimized topic thus survives one
retention period, so readers that resolved it just before the switch keep working. In a file://
store, temporary files that killed writes left behind (<key>.<random>.tmp) are deleted once
they were last written --retention-duration seconds ago, also inside referenced prefixes (never
under a running optimization's fresh prefix). In an S3 store, unfinished multipart uploads (a
killed worker's or ingester's, whose parts S3 keeps and bills) under tp_<ULID>/ keys are aborted
once they were started --retention-duration seconds ago (never a running optimization's).

With --time-interval SECONDS (> 0) or --cron EXPR: create the Temporal Schedule
"` + app.CleanupScheduleID + `" (or update it when it exists; on a --task-queue other than
"` + workflows.TaskQueue + `" it is "` + app.CleanupScheduleID + `:<task queue>") to run passes with this
retention periodically; a pass still going when the next one is due makes the schedule skip that one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retentionSeconds < 0 {
				return fmt.Errorf("--retention-duration %d: must be ≥ 0 seconds (0 deletes at once)", retentionSeconds)
			}
			opts := app.CleanupOptions{RetentionDuration: time.Duration(retentionSeconds) * time.Second}
			return workflowJob[workflows.CleanupResult]{
				what:       "cleanup",
				scheduleID: app.CleanupScheduleIDFor(e.cfg.TaskQueue),
				describe:   fmt.Sprintf("CleanupWorkflow (retention %s)", opts.RetentionDuration),
				schedule: func(ctx context.Context, c client.Client, interval time.Duration, cron string) error {
					return app.EnsureCleanupSchedule(ctx, c, e.cfg, opts, interval, cron)
				},
				start: func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
					return app.StartCleanup(ctx, c, e.cfg, opts)
				},
				wait:    app.WaitCleanup,
				summary: app.WriteCleanupSummary,
				failed: func(res workflows.CleanupResult) error {
					if res.DeleteFailed > 0 || res.TempFilesFailed > 0 || res.UploadsFailed > 0 || res.ReplacedFailed > 0 {
						return errDeleteFailed
					}
					return nil
				},
			}.execute(cmd.Context(), e, cmd.OutOrStdout(), intervalSeconds, cron)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&retentionSeconds, "retention-duration", int64(app.DefaultRetentionDuration/time.Second),
		"seconds an unreferenced prefix stays marked before its objects are deleted; 0 = delete at once")
	f.Int64Var(&intervalSeconds, "time-interval", 0,
		"seconds between scheduled passes; 0 = run one pass now and wait")
	f.StringVar(&cron, "cron", "", "cron expression of scheduled passes (instead of --time-interval)")
	cmd.MarkFlagsMutuallyExclusive("time-interval", "cron")
	return cmd
}
