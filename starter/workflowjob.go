package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
)

// workflowJob is what store-optimizer and cleanup have in common: either create or update a
// Temporal Schedule that starts the workflow periodically, or start one execution, wait for it
// and print its summary.
type workflowJob[R any] struct {
	what       string // "run", "cleanup": used in messages
	scheduleID string
	schedule   func(ctx context.Context, c client.Client, interval time.Duration, cron string) error
	describe   string // what the schedule starts, for the confirmation line
	start      func(ctx context.Context, c client.Client) (client.WorkflowRun, error)
	wait       func(ctx context.Context, run client.WorkflowRun) (R, error)
	summary    func(w io.Writer, id string, res R) error
	failed     func(res R) error // the error (exit status 1) a result stands for, or nil
	// progress, when set, returns how to show the progress of the execution while the starter
	// waits for it and how often to ask for it (no view: nothing shown).
	progress func() (progressView, time.Duration)
}

// workerCheckInterval is how often a waiting starter checks that some worker polls its task queue.
const workerCheckInterval = 10 * time.Second

// execute dials Temporal and runs the job: a schedule when intervalSeconds > 0 or cron is set,
// else one execution.
func (j workflowJob[R]) execute(ctx context.Context, e *env, out io.Writer, intervalSeconds int64, cron string) error {
	if intervalSeconds < 0 {
		return fmt.Errorf("--time-interval %d: must be ≥ 0 seconds", intervalSeconds)
	}
	c, err := app.Dial(ctx, e.cfg, e.logger)
	if err != nil {
		return err
	}
	defer c.Close()

	interval := time.Duration(intervalSeconds) * time.Second
	if interval > 0 || cron != "" {
		if err := j.schedule(ctx, c, interval, cron); err != nil {
			return err
		}
		when := "every " + interval.String()
		if cron != "" {
			when = "on cron " + cron
		}
		fmt.Fprintf(out, "schedule %s starts %s on task queue %s %s\n", j.scheduleID, j.describe, e.cfg.TaskQueue, when)
		return nil
	}

	run, err := j.start(ctx, c)
	if err != nil {
		return err
	}
	e.logger.Info(j.what+" started", "workflow_id", run.GetID(), "run_id", run.GetRunID())
	warnings, stopProgress := e.logger, func(bool) {}
	if j.progress != nil {
		if view, every := j.progress(); view != nil {
			stopProgress = watchRun(ctx, c, run.GetID(), view, every)
			warnings = e.cfg.NewLoggerTo(view.output()) // above the bar, not through it
		}
	}
	watchCtx, stopWatching := context.WithCancel(ctx)
	go app.WatchWorkers(watchCtx, c, e.cfg.TaskQueue, workerCheckInterval, func(polling bool) {
		if !polling {
			warnings.Warn("no worker polls the task queue: the "+j.what+" waits until one does; start bin/worker with the same --task-queue, --database-url and --store-url",
				"task_queue", e.cfg.TaskQueue)
		}
	})
	res, err := j.wait(ctx, run)
	stopWatching()
	stopProgress(err == nil)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("stopped waiting; %s %s goes on (see the Web UI or `temporal workflow describe -w %s`)",
				j.what, run.GetID(), run.GetID())
		}
		return err
	}
	if err := j.summary(out, run.GetID(), res); err != nil {
		return err
	}
	return j.failed(res)
}
