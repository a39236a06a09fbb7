// Command starter triggers and inspects storeopt:
//
//	starter store-optimizer            one optimization pass; waits and prints a summary
//	starter store-optimizer --time-interval 3600 | --cron '0 3 * * *'
//	                                   create or update the Temporal Schedule instead
//	starter cleanup [--retention-duration 86400]
//	                                   one cleanup pass: delete unreferenced prefixes after the
//	                                   retention; waits and prints a report
//	starter cleanup --time-interval 3600 | --cron '0 4 * * *'
//	                                   create or update the cleanup schedule instead
//	starter quarantine list | clear LOCATOR... | clear --all
//	                                   topics left out of runs because they keep failing
//	starter ingest --preset demo       write a synthetic dataset (many small chunks per topic)
//	starter migrate                    create or upgrade the catalog schema
//	starter report [--json] [--read] [--before snapshot.json]
//	                                   chunks, bytes and optimization time per topic
//
// Exit status: 0 success, 1 at least one topic failed to optimize (or a cleanup could not delete
// a prefix), 2 usage or infrastructure error. Configuration comes from flags, each defaulting from an environment variable (--help).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
)

// Exit statuses.
const (
	exitOK            = 0
	exitTopicFailures = 1
	exitError         = 2
)

// errTopicsFailed is returned by a pass in which at least one topic failed (exit status 1).
var errTopicsFailed = errors.New("some topics failed to optimize")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	os.Exit(exitStatus(err))
}

// exitStatus prints err (unless it is errTopicsFailed, already reported by the summary) and maps
// it to the exit status.
func exitStatus(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errTopicsFailed):
		return exitTopicFailures
	case errors.Is(err, errDeleteFailed): // the report lists the errors
		return exitTopicFailures
	default:
		fmt.Fprintln(os.Stderr, "starter:", err)
		return exitError
	}
}

// env is what every subcommand gets: the configuration and a logger.
type env struct {
	cfg    app.Config
	logger *slog.Logger
}

func newRootCommand() *cobra.Command {
	e := &env{}
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Trigger and inspect storeopt optimization runs",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := e.cfg.LoadTemporalProfile(); err != nil {
				return err
			}
			if err := e.cfg.Validate(); err != nil {
				return err
			}
			e.logger = e.cfg.NewLogger()
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w\n%s", err, cmd.UsageString())
	})
	e.cfg.BindFlags(root.PersistentFlags())
	root.AddCommand(
		newStoreOptimizerCommand(e),
		newCleanupCommand(e),
		newQuarantineCommand(e),
		newIngestCommand(e),
		newFinalizeCommand(e),
		newReadCommand(e),
		newMigrateCommand(e),
		newReportCommand(e),
	)
	return root
}

func newMigrateCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the catalog schema (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := migrateCatalog(cmd.Context(), e); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "catalog %s is up to date\n", app.RedactURL(e.cfg.DatabaseURL))
			return nil
		},
	}
}
