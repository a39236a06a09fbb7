package app

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/workflows"
)

// progressQueryTimeout bounds one progress query: a query waits for a worker to answer it, and
// none may be polling.
const progressQueryTimeout = 5 * time.Second

// QueryProgress asks the latest execution of run workflowID (so across continue-as-new) for its
// progress (workflows.ProgressQuery): the numbers its current details show in the Web UI. It
// fails when no worker answers within 5 s, or the run's history has no query handler yet.
func QueryProgress(ctx context.Context, c client.Client, workflowID string) (workflows.Progress, error) {
	ctx, cancel := context.WithTimeout(ctx, progressQueryTimeout)
	defer cancel()
	var p workflows.Progress
	v, err := c.QueryWorkflow(ctx, workflowID, "", workflows.ProgressQuery)
	if err == nil {
		err = v.Get(&p)
	}
	if err != nil {
		return p, fmt.Errorf("progress of run %s: %w", workflowID, err)
	}
	return p, nil
}

// WatchProgress queries the progress of run workflowID (QueryProgress) every interval until ctx
// is done and calls report with every answer. Queries that fail (no worker yet, the run between
// two executions) are not reported: the next one may succeed, and waiting for the run reports a
// run that failed.
func WatchProgress(ctx context.Context, c client.Client, workflowID string, interval time.Duration, report func(workflows.Progress)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if p, err := QueryProgress(ctx, c, workflowID); err == nil && ctx.Err() == nil {
			report(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
