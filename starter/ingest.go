package main

import (
	"fmt"
	"math"
	"strings"
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
		robots   int
		rows     float64
		perTopic []string
		signal   bool
	)
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Write a synthetic dataset: one sequence of topics, one small Parquet chunk per record batch",
		Long: `Simulate an ingestion service: write one sequence whose topics each have many small Parquet
chunks (with overlapping time ranges, unsorted chunks and null timestamps), record them in
the catalog and finalize the topics. Presets: "test" (a few hundred KB) and "demo" (about
550 MB at --scale 1). A sequence name can be used once: pass a fresh --sequence per call.

With --robots N it records a fleet: N sequences <sequence>_r000… at once, each with the
preset's topics, every topic receiving one chunk every --chunk-interval (or its own
--topic-interval PATH=DURATION) for --live, its chunks spread over the interval so the fleet
writes at an even rate; e.g. 50 robots × 3 topics at one chunk per topic per second:

  starter ingest --preset demo --rows-scale 0.1 --robots 50 --live 10m --chunk-interval 1s`,
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
			if rows != 1 {
				if !(rows > 0) {
					return fmt.Errorf("--rows-scale %v must be positive", rows)
				}
				for i := range opts.Topics {
					opts.Topics[i].RowsPerChunk = max(1, int(math.Round(float64(opts.Topics[i].RowsPerChunk)*rows)))
					opts.Topics[i].NullTimestamps = min(opts.Topics[i].NullTimestamps, opts.Topics[i].RowsPerChunk*opts.Topics[i].Chunks)
				}
			}
			if robots > 0 || signal || len(perTopic) > 0 {
				return ingestFleet(cmd, e, opts, robots, live, interval, perTopic, signal)
			}
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
	f.IntVar(&robots, "robots", 0, "record a fleet of this many robots at once, each a sequence <sequence>_rNNN with the preset's topics (needs --live)")
	f.Float64Var(&rows, "rows-scale", 1, "multiplies every topic's rows per chunk (0.1: chunks a tenth of the preset's size)")
	f.StringArrayVar(&perTopic, "topic-interval", nil, "with --robots: PATH=DURATION, the chunk interval of one topic path (e.g. sensors/gps=5s); repeatable")
	f.BoolVar(&signal, "write-signal", false, "with --robots: poll the catalog's write signal before every chunk and wait as it says (docs/operations.md#the-write-signal)")
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

// ingestFleet is `ingest --robots`: the fleet simulator (ingest.IngestFleet).
func ingestFleet(cmd *cobra.Command, e *env, opts ingest.Options, robots int, live, interval time.Duration, perTopic []string, signal bool) error {
	if robots < 1 || live <= 0 {
		return fmt.Errorf("a fleet needs --robots (at least 1) and --live (its duration); --topic-interval and --write-signal only go with them")
	}
	f := ingest.Fleet{Sequence: opts.Sequence, Robots: robots, Topics: opts.Topics, Interval: interval, Duration: live,
		Seed: opts.Seed, Workers: opts.Workers, WriteSignal: signal, NoFinalize: opts.NoFinalize,
		Intervals: map[string]time.Duration{}}
	for _, pt := range perTopic {
		path, d, ok := strings.Cut(pt, "=")
		dur, err := time.ParseDuration(d)
		if !ok || err != nil || dur <= 0 {
			return fmt.Errorf("--topic-interval %q: want PATH=DURATION with a positive duration, e.g. sensors/gps=5s", pt)
		}
		f.Intervals[path] = dur
	}
	f.Progress = func(s ingest.FleetStats) {
		if int(s.Elapsed.Seconds())%10 == 0 {
			e.logger.Info("fleet ingesting", "chunks", s.Chunks, "bytes", s.Bytes, "chunks_per_s", fmt.Sprintf("%.1f", s.ChunksPerSecond()),
				"max_lag", s.MaxLag.Round(time.Millisecond), "late", s.Late, "delayed", s.Delayed, "stopped", s.Stopped)
		}
	}
	ctx := cmd.Context()
	cat, bucket, closeData, err := openData(ctx, e)
	if err != nil {
		return err
	}
	defer closeData()
	_, st, err := ingest.IngestFleet(ctx, cat, bucket, f)
	if err != nil {
		return fmt.Errorf("ingest fleet %s: %w", opts.Sequence, err)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "robots\t%d (sequences %s_r000…)\n", robots, opts.Sequence)
	fmt.Fprintf(tw, "topics\t%d\n", st.Topics)
	fmt.Fprintf(tw, "chunks\t%d (%.1f per second over %s)\n", st.Chunks, st.ChunksPerSecond(), st.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(tw, "rows\t%d\n", st.Rows)
	fmt.Fprintf(tw, "bytes\t%d\n", st.Bytes)
	fmt.Fprintf(tw, "behind schedule\t%d chunks more than an interval late, the most %s\n", st.Late, st.MaxLag.Round(time.Millisecond))
	if signal {
		fmt.Fprintf(tw, "write signal\t%d chunks delayed, %d stopped, %s waited in all\n", st.Delayed, st.Stopped, st.SignalWait.Round(time.Millisecond))
	}
	return tw.Flush()
}
