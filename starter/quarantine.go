package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
)

func newQuarantineCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List or clear topics left out of runs because they keep failing",
		Long: `A topic whose optimization fails with the same input or verification error on 3
consecutive runs is quarantined: runs no longer queue it and report it with its reason. A
committed optimization of the topic (e.g. started by hand) ends its quarantine, and so does
"quarantine clear".`,
	}
	cmd.AddCommand(newQuarantineListCommand(e), newQuarantineClearCommand(e))
	return cmd
}

func newQuarantineListCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Print the quarantined topics: locator, failures, since, reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cat, _, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			var all []catalog.FailureRecord
			for after := int64(0); ; {
				page, err := cat.Quarantined(ctx, after, 1000)
				if err != nil {
					return err
				}
				all = append(all, page...)
				if len(page) < 1000 {
					break
				}
				after = page[len(page)-1].TopicID
			}
			return app.WriteQuarantine(cmd.OutOrStdout(), all)
		},
	}
}

func newQuarantineClearCommand(e *env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clear LOCATOR... | --all",
		Short: "Lift the quarantine of topics so that the next run optimizes them again",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errors.New("give topic locators or --all, not both or neither")
			}
			ctx := cmd.Context()
			cat, _, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			out := cmd.OutOrStdout()
			if all {
				n, err := cat.ClearAllQuarantines(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "cleared the quarantine of %d topics\n", n)
				return nil
			}
			for _, locator := range args {
				t, err := cat.TopicByLocator(ctx, locator)
				if err != nil {
					return fmt.Errorf("quarantine clear %q: %w", locator, err)
				}
				cleared, err := cat.ClearQuarantine(ctx, t.ID)
				if err != nil {
					return err
				}
				if cleared {
					fmt.Fprintf(out, "%s: cleared; the next run queues it again\n", locator)
				} else {
					fmt.Fprintf(out, "%s: not quarantined, no failures recorded\n", locator)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "clear every quarantine")
	return cmd
}
