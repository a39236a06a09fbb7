package app

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// HasWorkers reports whether any worker polls taskQueue for workflow or activity tasks (as the
// Temporal server saw in the last minutes).
func HasWorkers(ctx context.Context, c client.Client, taskQueue string) (bool, error) {
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.DescribeTaskQueue(ctx, taskQueue, typ)
		if err != nil {
			return false, err
		}
		if len(resp.GetPollers()) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// WatchWorkers checks every interval, until ctx is done, whether a worker polls taskQueue, and
// calls report with the answer after every check: a starter waiting for a run warns when it is
// false, as it would otherwise wait silently forever when no worker is running (or it polls
// another task queue). Checks that fail are not reported (the wait itself reports an unreachable
// server).
func WatchWorkers(ctx context.Context, c client.Client, taskQueue string, interval time.Duration, report func(polling bool)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ok, err := HasWorkers(ctx, c, taskQueue); err == nil {
			report(ok)
		}
	}
}
