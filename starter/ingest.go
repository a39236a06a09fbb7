package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/ingest"
)

func newIngestCommand(e *env) *cobra.Command {
	var (
		preset   string
		scale    float64
		sequence string
		seed     int64
		workers  int
		live     time.Duration
		interval time.Duration
		noFinal  bool
	)
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Write a synthetic dataset: one sequence of topics, one small Parquet chunk per record batch",
		Long: `Simulate an ingestion service: write one sequence whose topics each have many small Parquet
chunks (with overlapping time ranges, unsorted chunks and null timestamps), record them in
the catalog and finalize the topics. Presets: "test" (a few hundred KB) and "demo" (about
550 MB at --scale 1). A sequence name can be used once: pass a fresh --sequence per call.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := ingest.Preset(preset, scale)
			if err != nil {
				return err
			}
			if sequence != "" {
				opts.Sequence = sequence
			}
			if cmd.Flags().Changed("seed") {
				opts.Seed = seed
			}
			opts.Workers = workers
			opts.NoFinalize = noFinal
			if live < 0 || interval <= 0 {
				return fmt.Errorf("--live %s must not be negative and --chunk-interval %s must be positive", live, interval)
			}
			if live > 0 {
				// One chunk per topic every interval for the duration of the recording.
				opts.ChunkInterval = interval
				for i := range opts.Topics {
					opts.Topics[i].Chunks = max(1, int(live/interval))
					opts.Topics[i].NullTimestamps = min(opts.Topics[i].NullTimestamps, opts.Topics[i].Chunks*opts.Topics[i].RowsPerChunk)
				}
			}
			out := cmd.OutOrStdout()
			last := map[string]int{}
			opts.Progress = func(locator string, done, total int) {
				// Report every tenth of a topic, so a long ingest shows it is alive.
				if step := max(1, total/10); done == total || done-last[locator] >= step {
					last[locator] = done
					e.logger.Info("ingesting", "topic", locator, "chunks", done, "of", total)
				}
			}

			ctx := cmd.Context()
			cat, bucket, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			topics, err := ingest.Ingest(ctx, cat, bucket, opts)
			if err != nil {
				return fmt.Errorf("ingest sequence %s: %w", opts.Sequence, err)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "topic\tprefix\tchunks\trows\tbytes\t")
			for _, t := range topics {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t\n", t.Locator, t.Prefix, t.Chunks, t.Rows, t.Bytes)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&preset, "preset", "test", "dataset preset: test or demo")
	f.Float64Var(&scale, "scale", 1, "multiplies every topic's chunk count")
	f.StringVar(&sequence, "sequence", "", "sequence name (no / or :); default: the preset's")
	f.Int64Var(&seed, "seed", 0, "random seed of the generated data; default: the preset's")
	f.IntVar(&workers, "workers", 0, "chunks encoded and uploaded in parallel; 0 = default")
	f.DurationVar(&live, "live", 0, "record live for this long: every topic receives one chunk every --chunk-interval (the preset's chunk counts are replaced), then is finalized unless --no-finalize")
	f.DurationVar(&interval, "chunk-interval", time.Second, "with --live: time between two chunks of a topic")
	f.BoolVar(&noFinal, "no-finalize", false, "leave the topics live (not finalized); 'starter finalize --sequence NAME' finalizes them later")
	return cmd
}

func newFinalizeCommand(e *env) *cobra.Command {
	var sequence string
	cmd := &cobra.Command{
		Use:   "finalize",
		Short: "Finalize the live topics of a sequence (ingested with --no-finalize)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sequence == "" {
				return fmt.Errorf("--sequence is required")
			}
			ctx := cmd.Context()
			cat, _, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			done, err := ingest.Finalize(ctx, cat, sequence)
			if err != nil {
				return err
			}
			for _, l := range done {
				fmt.Fprintln(cmd.OutOrStdout(), "finalized", l)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sequence, "sequence", "", "sequence whose topics to finalize")
	return cmd
}
