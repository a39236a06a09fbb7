package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/workflows"
)

func newStoreOptimizerCommand(e *env) *cobra.Command {
	var (
		opts            app.PassOptions
		intervalSeconds int64
		cron            string
		asJSON          bool
		progressEvery   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "store-optimizer",
		Short: "Run one optimization pass, or create/update the schedule that runs them",
		Long: `Without --time-interval or --cron: start one StoreOptimizerWorkflow run
("storeopt-run-<ULID>"), wait for it and print a summary. Exit status 1 when a topic failed;
2 (before starting the run) when a --scope names a sequence or topic not in the catalog.

With --time-interval SECONDS (> 0) or --cron EXPR: create the Temporal Schedule
"` + app.ScheduleID + `" (or update it when it exists; on a --task-queue other than
"` + workflows.TaskQueue + `" it is "` + app.ScheduleID + `:<task queue>") to start a run with these options
periodically; a run still going when the next one is due makes the schedule skip that one.

With --dry-run: plan every topic the run would optimize (inputs -> outputs, bytes to read and
write, estimated seconds from the recent optimizations' throughput) and print them, without
queueing, leasing, writing or changing anything (a worker computes the plans: it reads the
catalog and the chunks' footers and timestamp columns only). --json prints the result as JSON.

While it waits, the starter shows the run's progress (its progress query, the numbers of the
run's current details in the Web UI): two bars, topics and bytes finished of the run's queue
with the rate and the ETA, when stderr is a terminal; a log line every --progress-interval
otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			if opts.DryRun && (intervalSeconds != 0 || cron != "") {
				return errors.New("--dry-run runs once: it takes no --time-interval or --cron")
			}
			if intervalSeconds == 0 && cron == "" { // a schedule may name a sequence not ingested yet
				if err := checkScope(cmd.Context(), e, opts.Scope); err != nil {
					return err
				}
			}
			summary := app.WriteSummary
			switch {
			case asJSON:
				summary = app.WriteJSON
			case opts.DryRun:
				summary = app.WriteDryRun
			}
			return workflowJob[workflows.StoreOptimizerResult]{
				what:       "run",
				scheduleID: app.ScheduleIDFor(e.cfg.TaskQueue),
				describe:   "StoreOptimizerWorkflow",
				schedule: func(ctx context.Context, c client.Client, interval time.Duration, cron string) error {
					return app.EnsureSchedule(ctx, c, e.cfg, opts, interval, cron)
				},
				start: func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
					return app.StartPass(ctx, c, e.cfg, opts)
				},
				wait:    app.WaitPass,
				summary: summary,
				progress: func() (progressView, time.Duration) {
					if opts.DryRun {
						return nil, 0 // a dry run plans; it has no queue to finish
					}
					return newProgressView(e, progressEvery)
				},
				failed: func(res workflows.StoreOptimizerResult) error {
					if res.Failed > 0 && !opts.DryRun {
						return errTopicsFailed
					}
					return nil
				},
			}.execute(cmd.Context(), e, cmd.OutOrStdout(), intervalSeconds, cron)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.MaxChunkSizeBytes, "max-chunk-size", app.DefaultMaxChunkSizeBytes,
		"soft size limit of one output chunk, bytes (0 = 256000000)")
	f.Int64Var(&intervalSeconds, "time-interval", 0,
		"seconds between scheduled runs; 0 = run one pass now and wait")
	f.StringVar(&cron, "cron", "", "cron expression of scheduled runs (instead of --time-interval)")
	f.IntVar(&opts.MaxConcurrentTopics, "max-concurrent-topics", 0,
		"topics larger than --max-chunk-size optimized at once; 0 = workflow default (4)")
	f.IntVar(&opts.MaxConcurrentSmallTopics, "max-concurrent-small-topics", 0,
		"topics of at most --max-chunk-size (one output chunk) optimized at once, besides the larger ones; 0 = workflow default (32)")
	f.IntVar(&opts.BatchTopics, "batch-topics", 0,
		"tiny topics (estimated input at most 1 MiB) optimized one after the other by one activity; 0 = workflow default (25), 1 = a topic workflow each")
	f.Int64Var(&opts.BatchTopicBytes, "batch-topic-bytes", 0,
		"the largest estimated input of a topic optimized in a batch (a tiny topic), bytes; 0 = workflow default (1048576)")
	f.IntVar(&opts.TopicParallelism, "topic-parallelism", 0,
		"WriteChunks activities of one topic at once; 0 = workflow default")
	f.IntVar(&opts.PageSize, "page-size", 0,
		"queued topics listed at once (the window of topics in flight slides across pages); 0 = workflow default (100)")
	f.StringVar(&opts.Policy, "policy", "full",
		"compaction policy: "+policy.Help())
	f.IntVar(&opts.MinChunks, "min-chunks", policy.DefaultMinChunks,
		"trigger of tiered, leveled and auto: queue a topic only when it has at least this many L0 chunks")
	f.StringArrayVar(&opts.Scope, "scope", nil,
		"what the run may touch: all (default), sequence:NAME or topic:LOCATOR; repeatable")
	f.BoolVar(&opts.DryRun, "dry-run", false,
		"plan the run's topics and estimate them; queue, lease, write and change nothing")
	f.BoolVar(&asJSON, "json", false, "print the run's result (or the dry run's plans) as JSON")
	f.DurationVar(&progressEvery, "progress-interval", DefaultProgressInterval,
		"while waiting: a progress bar (topics and bytes finished, ETA) on stderr when it is a terminal, else a log line of the run's progress this often; 0 = neither")
	cmd.MarkFlagsMutuallyExclusive("time-interval", "cron")
	return cmd
}
