package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
)

// errDeleteFailed is returned by a cleanup pass in which at least one prefix could not be
// deleted (exit status 1).
var errDeleteFailed = errors.New("some prefixes could not be deleted")

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
wait for it and print a report. Exit status 1 when a prefix could not be deleted.

A pass lists every top-level tp_<ULID>/ prefix of the store. A prefix that a topic (its data
prefix), a running optimization (its lease's fresh prefix) or a plan references is kept. An
unreferenced prefix is marked the first time a pass sees it; a marked prefix referenced again is
unmarked; a prefix marked at least --retention-duration seconds ago (catalog database clock) is
checked again and its objects deleted. The old prefix of an optimized topic thus survives one
retention period, so readers that resolved it just before the switch keep working.

With --time-interval SECONDS (> 0) or --cron EXPR: create the Temporal Schedule
"` + app.CleanupScheduleID + `" (or update it when it exists) to run passes with this retention
periodically; a pass still going when the next one is due makes the schedule skip that one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retentionSeconds < 0 {
				return fmt.Errorf("--retention-duration %d: must be ≥ 0 seconds (0 deletes at once)", retentionSeconds)
			}
			if intervalSeconds < 0 {
				return fmt.Errorf("--time-interval %d: must be ≥ 0 seconds", intervalSeconds)
			}
			opts := app.CleanupOptions{RetentionDuration: time.Duration(retentionSeconds) * time.Second}
			ctx := cmd.Context()
			c, err := app.Dial(ctx, e.cfg, e.logger)
			if err != nil {
				return err
			}
			defer c.Close()
			out := cmd.OutOrStdout()

			interval := time.Duration(intervalSeconds) * time.Second
			if interval > 0 || cron != "" {
				if err := app.EnsureCleanupSchedule(ctx, c, e.cfg, opts, interval, cron); err != nil {
					return err
				}
				when := "every " + interval.String()
				if cron != "" {
					when = "on cron " + cron
				}
				fmt.Fprintf(out, "schedule %s starts CleanupWorkflow (retention %s) on task queue %s %s\n",
					app.CleanupScheduleID, opts.RetentionDuration, e.cfg.TaskQueue, when)
				return nil
			}

			run, err := app.StartCleanup(ctx, c, e.cfg, opts)
			if err != nil {
				return err
			}
			e.logger.Info("cleanup started", "workflow_id", run.GetID(), "run_id", run.GetRunID())
			res, err := app.WaitCleanup(ctx, run)
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return fmt.Errorf("stopped waiting; cleanup %s goes on (see the Web UI or `temporal workflow describe -w %s`)",
						run.GetID(), run.GetID())
				}
				return err
			}
			if err := app.WriteCleanupSummary(out, run.GetID(), res); err != nil {
				return err
			}
			if res.DeleteFailed > 0 {
				return errDeleteFailed
			}
			return nil
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
