package activities

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"

	"github.com/storeopt/storeopt/mempool"
)

type runKey struct{}

type runIDs struct{ owner, token string }

// WithRun returns a context under which the activity methods can be called directly, outside a
// Temporal worker (benchmarks, tools): owner and token stand for the workflow ID and run ID that
// own the lease. Inside an activity the workflow execution's IDs are always used instead.
func WithRun(ctx context.Context, owner, token string) context.Context {
	return context.WithValue(ctx, runKey{}, runIDs{owner, token})
}

// run identifies the calling workflow run: lease owner and fencing token.
func run(ctx context.Context) (owner, token string) {
	if activity.IsActivity(ctx) {
		we := activity.GetInfo(ctx).WorkflowExecution
		return we.ID, we.RunID
	}
	ids, _ := ctx.Value(runKey{}).(runIDs)
	return ids.owner, ids.token
}

// heartbeat records progress when running inside an activity.
func heartbeat(ctx context.Context, details any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details)
	}
}

// reserve reserves n bytes of the memory pool, heartbeating while it waits for room so that a
// long wait is not mistaken for a lost worker.
func (a *Activities) reserve(ctx context.Context, n int64) (*mempool.Reservation, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := a.pool().Reserve(wctx, n)
		cancel()
		if err == nil || ctx.Err() != nil {
			return r, err
		}
		heartbeat(ctx, "waiting for memory")
	}
}

// logger returns the activity logger, or slog's default outside an activity.
func logger(ctx context.Context) log.Logger {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	return slogLogger{slog.Default()}
}

type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Debug(msg string, kv ...any) { s.l.Debug(msg, kv...) }
func (s slogLogger) Info(msg string, kv ...any)  { s.l.Info(msg, kv...) }
func (s slogLogger) Warn(msg string, kv ...any)  { s.l.Warn(msg, kv...) }
func (s slogLogger) Error(msg string, kv ...any) { s.l.Error(msg, kv...) }
