// Command worker runs a storeopt worker: it polls the storeopt task queue and executes
// StoreOptimizerWorkflow, OptimizeTopicWorkflow and their activities until SIGINT or SIGTERM,
// then stops gracefully (running activities get 30 s to finish).
//
// Configuration comes from flags, each defaulting from an environment variable (see --help).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
}

func newRootCommand() *cobra.Command {
	var cfg app.Config
	cmd := &cobra.Command{
		Use:           "worker",
		Short:         "Run a storeopt worker (executes the optimization workflows and activities)",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.LoadTemporalProfile(); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			logger := cfg.NewLogger()
			if limit := app.ApplyMemoryLimit(cfg.MemoryPoolBytes); limit > 0 {
				logger.Info("Go memory limit set from the memory pool", "limit_bytes", limit)
			}
			ctx := cmd.Context()
			m, err := app.StartMetrics(cfg, logger)
			if err != nil {
				return err
			}
			defer m.Close()
			c, err := app.Dial(ctx, cfg, logger, app.WithMetrics(m))
			if err != nil {
				return err
			}
			defer c.Close()
			err = app.RunWorker(ctx, cfg, c, logger, app.WithMetrics(m))
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil // stopped by a signal during setup
			}
			return err
		},
	}
	cfg.BindFlags(cmd.Flags())
	cfg.BindWorkerFlags(cmd.Flags())
	return cmd
}
