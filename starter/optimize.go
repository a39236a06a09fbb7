package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
)

func newStoreOptimizerCommand(e *env) *cobra.Command {
	var (
		opts            app.PassOptions
		intervalSeconds int64
		cron            string
	)
	cmd := &cobra.Command{
		Use:   "store-optimizer",
		Short: "Run one optimization pass, or create/update the schedule that runs them",
		Long: `Without --time-interval or --cron: start one StoreOptimizerWorkflow run
("storeopt-run-<ULID>"), wait for it and print a summary. Exit status 1 when a topic failed.

With --time-interval SECONDS (> 0) or --cron EXPR: create the Temporal Schedule
"` + app.ScheduleID + `" (or update it when it exists) to start a run with these options
periodically; a run still going when the next one is due makes the schedule skip that one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if intervalSeconds < 0 {
				return fmt.Errorf("--time-interval %d: must be ≥ 0 seconds", intervalSeconds)
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := app.Dial(ctx, e.cfg, e.logger)
			if err != nil {
				return err
			}
			defer c.Close()
			out := cmd.OutOrStdout()

			interval := time.Duration(intervalSeconds) * time.Second
			if interval > 0 || cron != "" {
				if err := app.EnsureSchedule(ctx, c, e.cfg, opts, interval, cron); err != nil {
					return err
				}
				when := "every " + interval.String()
				if cron != "" {
					when = "on cron " + cron
				}
				fmt.Fprintf(out, "schedule %s starts StoreOptimizerWorkflow on task queue %s %s\n",
					app.ScheduleID, e.cfg.TaskQueue, when)
				return nil
			}

			run, err := app.StartPass(ctx, c, e.cfg, opts)
			if err != nil {
				return err
			}
			e.logger.Info("run started", "workflow_id", run.GetID(), "run_id", run.GetRunID())
			res, err := app.WaitPass(ctx, run)
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return fmt.Errorf("stopped waiting; run %s goes on (see the Web UI or `temporal workflow describe -w %s`)",
						run.GetID(), run.GetID())
				}
				return err
			}
			if err := app.WriteSummary(out, run.GetID(), res); err != nil {
				return err
			}
			if res.Failed > 0 {
				return errTopicsFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.MaxChunkSizeBytes, "max-chunk-size", app.DefaultMaxChunkSizeBytes,
		"soft size limit of one output chunk, bytes")
	f.Int64Var(&intervalSeconds, "time-interval", 0,
		"seconds between scheduled runs; 0 = run one pass now and wait")
	f.StringVar(&cron, "cron", "", "cron expression of scheduled runs (instead of --time-interval)")
	f.IntVar(&opts.MaxConcurrentTopics, "max-concurrent-topics", 0,
		"topics optimized at once; 0 = workflow default")
	f.IntVar(&opts.TopicParallelism, "topic-parallelism", 0,
		"WriteChunks activities of one topic at once; 0 = workflow default")
	f.IntVar(&opts.PageSize, "page-size", 0,
		"queued topics per page (continue-as-new segment); 0 = workflow default")
	cmd.MarkFlagsMutuallyExclusive("time-interval", "cron")
	return cmd
}
