package main

import (
	"github.com/spf13/cobra"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/policy"
)

func newReportCommand(e *env) *cobra.Command {
	var (
		asJSON   bool
		read     bool
		levels   bool
		before   string
		sequence string
		debt     bool
		top      int
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Print chunks, bytes, rows, optimized_at and first/last timestamp_ns per topic from the catalog",
		Long: `Print one line per topic of the catalog: locator, data prefix, chunks, bytes, rows and
when it was last optimized.

  --sequence NAME    only the topics of this sequence
  --json             write a JSON snapshot instead (keep it to compare later)
  --read             also time reading every chunk of each topic with pqarrow
  --levels           per topic: L0 and L1 chunk counts and bytes instead
  --debt             the compaction debt instead: L0 chunks and bytes waiting, the oldest
                     uncompacted chunk, topics over the trigger, the write signal, write
                     amplification, then the --top topics with the most L0 chunks
  --before FILE      compare with a snapshot taken earlier: chunks, bytes and read seconds
                     before and after (the old objects are still in the store after an
                     optimization, so both sides are really read)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cat, bucket, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			if debt {
				return app.WriteDebtReport(ctx, cmd.OutOrStdout(), cat, top)
			}
			reports, err := app.Report(ctx, cat)
			if err != nil {
				return err
			}
			if sequence != "" {
				locators := make([]string, len(reports))
				for i, r := range reports {
					locators[i] = r.Locator
				}
				if err := app.CheckScope(locators, policy.Scope{Sequences: []string{sequence}}); err != nil {
					return err
				}
				reports = app.InSequence(reports, sequence)
			}
			out := cmd.OutOrStdout()
			switch {
			case before != "":
				snapshot, err := app.ReadReportJSON(before)
				if err != nil {
					return err
				}
				return app.WriteComparison(ctx, out, snapshot, reports, bucket)
			case asJSON:
				return app.WriteReportJSON(out, reports)
			case levels:
				return app.WriteLevelsTable(out, reports)
			default:
				var bench *blob.Bucket
				if read {
					bench = bucket
				}
				return app.WriteReportTable(ctx, out, reports, bench)
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write a JSON snapshot")
	cmd.Flags().BoolVar(&read, "read", false, "time reading every chunk of each topic")
	cmd.Flags().BoolVar(&levels, "levels", false, "per topic: L0 and L1 chunks and bytes")
	cmd.Flags().StringVar(&before, "before", "", "compare with this JSON snapshot (before/after table with read times)")
	cmd.Flags().StringVar(&sequence, "sequence", "", "only the topics of this sequence")
	cmd.Flags().BoolVar(&debt, "debt", false, "the compaction debt: totals and the worst topics")
	cmd.Flags().IntVar(&top, "top", 10, "with --debt: how many of the worst topics to list")
	cmd.MarkFlagsMutuallyExclusive("json", "before", "levels", "debt")
	return cmd
}
