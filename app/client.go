package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// DialTimeout is how long Dial keeps retrying an unreachable Temporal frontend.
const DialTimeout = 30 * time.Second

// Dial connects to the Temporal frontend at cfg.TemporalAddress in cfg.Namespace, retrying with
// backoff for up to DialTimeout (the server may still be starting). The client logs through
// logger. It returns the last connection error when the frontend stays unreachable, or ctx's
// error when ctx ends first.
func Dial(ctx context.Context, cfg Config, logger *slog.Logger) (client.Client, error) {
	opts := client.Options{
		HostPort:  cfg.TemporalAddress,
		Namespace: cfg.Namespace,
		Logger:    tlog.NewStructuredLogger(logger),
	}
	deadline := time.Now().Add(DialTimeout)
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("temporal at %s (namespace %s) unreachable after %s: %w",
				cfg.TemporalAddress, cfg.Namespace, DialTimeout, err)
		}
		logger.Warn("temporal not reachable yet, retrying", "address", cfg.TemporalAddress,
			"attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 4*time.Second)
	}
}
