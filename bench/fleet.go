package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
)

// The fleet bench (-jobs fleet) measures whether compaction keeps up with sustained ingestion:
// a fleet of robots (ingest.IngestFleet: -fleet-robots × the demo preset's IMU, GPS and camera
// topics, chunks -fleet-rows-scale of the demo's) records for -fleet-duration, every topic one
// chunk every -fleet-interval, while real worker processes (the binary, -fleet-workers of them
// on one task queue, each with the -memory-pool) serve a run of starter store-optimizer
// --policy auto started every -fleet-schedule (skipped while the previous one runs, as a
// Temporal Schedule's overlap policy skip does). The catalog's compaction debt is sampled all
// along; then the topics are finalized and the runs go on until no L0 chunk is left.
//
// It keeps up when, over the second half of the recording, the L0 chunks per topic show no
// upward trend, the oldest uncompacted chunk is at most three schedule intervals old, the bytes
// written by compactions per byte ingested are at most 2 at the end, and every topic ends as one
// sorted run holding every ingested row. -fleet-search raises the chunk rate by half again until
// a worker count no longer keeps up.

// fleetConfig is the part of the command line the fleet bench reads.
type fleetConfig struct {
	robots    int
	duration  time.Duration
	interval  time.Duration
	schedule  time.Duration
	workers   []int
	rowsScale float64
	minChunks int
	search    bool
	ingesters int
	// activities is each worker's STOREOPT_MAX_CONCURRENT_ACTIVITIES.
	activities int
	// batchBytes is the runs' --batch-topic-bytes (0 = the default).
	batchBytes int64
}

// fleetSample is one look at the catalog's debt during the recording.
type fleetSample struct {
	At               float64 `json:"at_seconds"`
	L0Chunks         int64   `json:"l0_chunks"`
	MeanTopicL0      float64 `json:"mean_topic_l0_chunks"`
	MaxTopicL0       int     `json:"max_topic_l0_chunks"`
	OldestSeconds    float64 `json:"oldest_uncompacted_seconds"`
	OverTrigger      int     `json:"topics_over_trigger"`
	WriteAmplication float64 `json:"write_amplification"`
}

// fleetReport is the outcome of one fleet run.
type fleetReport struct {
	Type        string  `json:"type"` // "fleet"
	Robots      int     `json:"robots"`
	Topics      int     `json:"topics"`
	Workers     int     `json:"workers"`
	Activities  int     `json:"max_concurrent_activities"`
	BatchBytes  int64   `json:"batch_topic_bytes,omitempty"`
	MemoryPool  int64   `json:"memory_pool_bytes"`
	Seconds     float64 `json:"seconds"`
	OfferedRate float64 `json:"offered_chunks_per_second"`
	IngestRate  float64 `json:"ingested_chunks_per_second"`
	IngestBytes int64   `json:"ingested_bytes"`
	LateChunks  int     `json:"late_chunks"`
	Runs        int     `json:"runs"`
	RunsSkipped int     `json:"runs_skipped"`
	// Over the second half of the recording: the L0 chunks per topic (mean, its trend: the mean
	// of the last quarter less the third's, and the most of one topic) and the oldest uncompacted
	// chunk.
	MeanTopicL0   float64 `json:"mean_topic_l0_chunks"`
	TrendTopicL0  float64 `json:"trend_topic_l0_chunks"`
	MaxTopicL0    int     `json:"max_topic_l0_chunks"`
	OldestSeconds float64 `json:"oldest_uncompacted_seconds"`
	// After the finalizing runs.
	DrainSeconds       float64       `json:"drain_seconds"`
	WriteAmplification float64       `json:"write_amplification"`
	SortedRuns         int           `json:"topics_one_sorted_run"`
	WorkerCPUSeconds   float64       `json:"worker_cpu_seconds"`
	WorkerCPU          []float64     `json:"worker_cpu_seconds_each"` // each worker process's share
	WorkerPeakRSS      int64         `json:"worker_peak_rss_bytes"`   // the largest of the workers
	Failures           []string      `json:"failures,omitempty"`
	Samples            []fleetSample `json:"samples,omitempty"`
}

func (r fleetReport) keptUp() bool { return len(r.Failures) == 0 }

// fleetBench runs the fleet for every worker count (and, with -fleet-search, at rising rates).
func fleetBench(ctx context.Context, cfg config, fc fleetConfig) error {
	if cfg.memoryPool == 0 {
		cfg.memoryPool = 256 << 20
	}
	srv := &server{adminURL: cfg.pgURL}
	if !cfg.keepDatabases {
		defer srv.dropAll(context.WithoutCancel(ctx))
	}
	var reports []fleetReport
	for _, workers := range fc.workers {
		robots := fc.robots
		var best *fleetReport
		for {
			rep, err := fleetRun(ctx, cfg, fc, srv, robots, workers)
			if err != nil {
				return err
			}
			reports = append(reports, rep)
			if cfg.jsonOut {
				_ = json.NewEncoder(os.Stdout).Encode(rep)
			} else {
				printFleet(os.Stdout, rep)
			}
			if !rep.keptUp() || !fc.search {
				break
			}
			best = &reports[len(reports)-1]
			robots = max(robots+1, robots*3/2)
		}
		if fc.search {
			if best == nil {
				fmt.Printf("%d worker(s): did not keep up even at %d robots\n", workers, fc.robots)
			} else {
				fmt.Printf("%d worker(s): kept up with %.0f chunks/s (%d robots), not with %.0f\n",
					workers, best.OfferedRate, best.Robots, reports[len(reports)-1].OfferedRate)
			}
		}
	}
	for _, r := range reports {
		if !r.keptUp() && !fc.search {
			return fmt.Errorf("fleet of %d robots, %d worker(s): did not keep up: %s", r.Robots, r.Workers, strings.Join(r.Failures, "; "))
		}
	}
	return nil
}

// fleetRun records one fleet of robots against workers worker processes and checks the outcome.
func fleetRun(ctx context.Context, cfg config, fc fleetConfig, srv *server, robots, workers int) (fleetReport, error) {
	opts, err := ingest.Preset("demo", 1)
	if err != nil {
		return fleetReport{}, err
	}
	for i := range opts.Topics {
		opts.Topics[i].RowsPerChunk = max(1, int(float64(opts.Topics[i].RowsPerChunk)*fc.rowsScale))
	}
	f := ingest.Fleet{Sequence: "fleet", Robots: robots, Topics: opts.Topics, Interval: fc.interval,
		Duration: fc.duration, Seed: cfg.seed, Workers: fc.ingesters}
	rep := fleetReport{Type: "fleet", Robots: robots, Topics: robots * len(opts.Topics), Workers: workers, Activities: fc.activities, BatchBytes: fc.batchBytes,
		MemoryPool: cfg.memoryPool, OfferedRate: float64(robots*len(opts.Topics)) / fc.interval.Seconds()}

	dbURL, err := srv.create(ctx, "storeopt_bench_"+randomSuffix()+"_fleet", "")
	if err != nil {
		return rep, err
	}
	if err := catalog.Migrate(ctx, dbURL); err != nil {
		return rep, err
	}
	dir, err := os.MkdirTemp(cfg.dataDir, "fleet-")
	if err != nil {
		if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
			return rep, err
		}
		if dir, err = os.MkdirTemp(cfg.dataDir, "fleet-"); err != nil {
			return rep, err
		}
	}
	defer os.RemoveAll(dir)
	storeDir := filepath.Join(dir, "store")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return rep, err
	}
	worker, starter, err := buildStoreopt(ctx, filepath.Join(cfg.dataDir, "bin"))
	if err != nil {
		return rep, err
	}
	env := append(storeoptEnv(cfg, fc.activities, dbURL, "file://"+storeDir, "storeopt-fleet-"+randomSuffix()),
		"STOREOPT_LOG_LEVEL=warn")
	var procs []*exec.Cmd
	for i := range workers {
		w := exec.CommandContext(ctx, worker)
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			return rep, err
		}
		defer logFile.Close()
		w.Env, w.Stdout, w.Stderr = env, logFile, logFile
		if err := w.Start(); err != nil {
			return rep, fmt.Errorf("start worker: %w", err)
		}
		procs = append(procs, w)
	}
	stopped := false
	defer func() {
		if !stopped {
			for _, w := range procs {
				_ = w.Process.Kill()
				_ = w.Wait()
			}
		}
	}()

	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		return rep, err
	}
	defer cat.Close()
	bucket, err := app.OpenStore(ctx, "file://"+storeDir)
	if err != nil {
		return rep, err
	}
	defer bucket.Close()

	// The schedule: a run every fc.schedule, skipped while the previous one is still going.
	schedCtx, stopSchedule := context.WithCancel(ctx)
	var schedWG sync.WaitGroup
	var runMu sync.Mutex
	var runErrs []string
	schedWG.Go(func() {
		tick := time.NewTicker(fc.schedule)
		defer tick.Stop()
		running := make(chan struct{}, 1)
		for {
			select {
			case <-schedCtx.Done():
				running <- struct{}{} // wait for the run in flight
				return
			case <-tick.C:
			}
			select {
			case running <- struct{}{}:
			default:
				runMu.Lock()
				rep.RunsSkipped++
				runMu.Unlock()
				continue
			}
			runMu.Lock()
			rep.Runs++
			runMu.Unlock()
			go func() {
				defer func() { <-running }()
				s := exec.CommandContext(ctx, starter, "store-optimizer", "--policy", "auto",
					"--min-chunks", strconv.Itoa(fc.minChunks), "--progress-interval", "0",
					"--max-chunk-size", strconv.FormatInt(cfg.maxChunkSize, 10),
					"--batch-topic-bytes", strconv.FormatInt(fc.batchBytes, 10))
				var out strings.Builder
				s.Env, s.Stdout, s.Stderr = env, io.Discard, &out
				if err := s.Run(); err != nil && ctx.Err() == nil {
					runMu.Lock()
					runErrs = append(runErrs, fmt.Sprintf("%v: %s", err, lastLine(out.String())))
					runMu.Unlock()
				}
			}()
		}
	})
	defer func() {
		stopSchedule()
		schedWG.Wait()
	}()

	// Samples of the debt while the fleet records.
	start := time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var samples []fleetSample
	var sampleWG sync.WaitGroup
	sampleWG.Go(func() {
		tick := time.NewTicker(max(fc.schedule/5, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			d, err := cat.DebtTotals(sampleCtx)
			if err != nil {
				continue
			}
			s := fleetSample{At: time.Since(start).Seconds(), L0Chunks: d.L0Chunks, MaxTopicL0: d.MaxTopicL0Chunks,
				OldestSeconds: d.OldestUncompactedAge.Seconds(), OverTrigger: d.TopicsOverTrigger,
				WriteAmplication: d.WriteAmplification()}
			if d.Topics > 0 {
				s.MeanTopicL0 = float64(d.L0Chunks) / float64(d.Topics)
			}
			samples = append(samples, s)
		}
	})
	logf("fleet: %d robots × %d topics, a chunk every %s each (%.0f chunks/s) for %s; %d worker(s), pool %d MiB; auto every %s",
		robots, len(opts.Topics), fc.interval, rep.OfferedRate, fc.duration, workers, cfg.memoryPool>>20, fc.schedule)
	topics, st, err := ingest.IngestFleet(ctx, cat, bucket, f) // finalizes the topics at the end
	stopSampling()
	sampleWG.Wait()
	if err != nil {
		return rep, err
	}
	rep.IngestRate, rep.IngestBytes, rep.LateChunks = st.ChunksPerSecond(), st.Bytes, st.Late
	rep.Samples = samples
	rep.summarizeSamples(fc)

	// Drain: the runs go on until no topic has an L0 chunk.
	drainStart := time.Now()
	deadline := drainStart.Add(max(10*fc.schedule, 2*time.Minute))
	for {
		d, err := cat.DebtTotals(ctx)
		if err != nil {
			return rep, err
		}
		if d.L0Chunks == 0 {
			rep.WriteAmplification = d.WriteAmplification()
			break
		}
		if time.Now().After(deadline) {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%d L0 chunks left %s after finalizing", d.L0Chunks, time.Since(drainStart).Round(time.Second)))
			rep.WriteAmplification = d.WriteAmplification()
			break
		}
		time.Sleep(time.Second)
	}
	rep.DrainSeconds = time.Since(drainStart).Seconds()
	rep.Seconds = time.Since(start).Seconds()
	stopSchedule()
	schedWG.Wait()
	for _, w := range procs {
		rss, cpu := stopWorker(w)
		rep.WorkerCPUSeconds += cpu
		rep.WorkerCPU = append(rep.WorkerCPU, cpu)
		rep.WorkerPeakRSS = max(rep.WorkerPeakRSS, rss)
	}
	stopped = true

	// Every topic one sorted run with every row.
	for _, t := range topics {
		ok, why, err := oneSortedRun(ctx, cat, t)
		if err != nil {
			return rep, err
		}
		if ok {
			rep.SortedRuns++
		} else if len(rep.Failures) < 5 {
			rep.Failures = append(rep.Failures, why)
		}
	}
	if rep.SortedRuns != len(topics) {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d of %d topics are one sorted run", rep.SortedRuns, len(topics)))
	}
	switch {
	case rep.TrendTopicL0 > max(1, 0.25*rep.MeanTopicL0):
		rep.Failures = append(rep.Failures, fmt.Sprintf("L0 chunks per topic rose by %.1f from the third quarter to the fourth (mean %.1f)", rep.TrendTopicL0, rep.MeanTopicL0))
	}
	if limit := 3 * fc.schedule.Seconds(); rep.OldestSeconds > limit {
		rep.Failures = append(rep.Failures, fmt.Sprintf("the oldest uncompacted chunk was %.0f s old (limit %.0f s)", rep.OldestSeconds, limit))
	}
	if rep.WriteAmplification > 2 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("write amplification %.2f > 2", rep.WriteAmplification))
	}
	if rep.IngestRate < 0.95*rep.OfferedRate {
		rep.Failures = append(rep.Failures, fmt.Sprintf("ingestion wrote %.0f of the %.0f chunks/s offered", rep.IngestRate, rep.OfferedRate))
	}
	runMu.Lock()
	if len(runErrs) > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d runs failed, the first: %s", len(runErrs), runErrs[0]))
	}
	runMu.Unlock()
	return rep, nil
}

// summarizeSamples fills the second-half figures: mean and most L0 chunks per topic, the
// oldest uncompacted chunk, and the trend: the mean L0 chunks per topic over the last quarter of
// the recording less the mean over the third. (Between two runs every topic gains the chunks of a
// schedule interval and a run takes them away: a line fitted through that sawtooth rises or
// falls with where the samples fall in it, means over whole quarters do not.)
func (r *fleetReport) summarizeSamples(fc fleetConfig) {
	d := fc.duration.Seconds()
	var sum, q3, q4 float64
	var n, n3, n4 int
	for _, s := range r.Samples {
		if s.At < d/2 || s.At > d {
			continue
		}
		sum, n = sum+s.MeanTopicL0, n+1
		if s.At < 3*d/4 {
			q3, n3 = q3+s.MeanTopicL0, n3+1
		} else {
			q4, n4 = q4+s.MeanTopicL0, n4+1
		}
		r.MaxTopicL0 = max(r.MaxTopicL0, s.MaxTopicL0)
		r.OldestSeconds = max(r.OldestSeconds, s.OldestSeconds)
	}
	if n > 0 {
		r.MeanTopicL0 = sum / float64(n)
	}
	if n3 > 0 && n4 > 0 {
		r.TrendTopicL0 = q4/float64(n4) - q3/float64(n3)
	}
}

// oneSortedRun checks that the topic has no L0 chunk and that its L1 chunks, in run order, do
// not overlap in time and hold every ingested row.
func oneSortedRun(ctx context.Context, cat *catalog.Catalog, t ingest.IngestedTopic) (bool, string, error) {
	chunks, err := cat.Chunks(ctx, t.TopicID)
	if err != nil {
		return false, "", err
	}
	var rows int64
	var last *int64
	for _, c := range chunks {
		if c.Level != 1 {
			return false, fmt.Sprintf("%s: an L0 chunk left (ordinal %d)", t.Locator, c.Ordinal), nil
		}
		rows += c.RowCount
		if c.MinTimestampNs != nil && last != nil && *c.MinTimestampNs < *last {
			return false, fmt.Sprintf("%s: L1 chunk %d starts at %d, before the previous one ends (%d)", t.Locator, c.Ordinal, *c.MinTimestampNs, *last), nil
		}
		if c.MaxTimestampNs != nil {
			last = c.MaxTimestampNs
		}
	}
	if rows != t.Rows {
		return false, fmt.Sprintf("%s: %d rows in the run, %d ingested", t.Locator, rows, t.Rows), nil
	}
	return true, "", nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func printFleet(w io.Writer, r fleetReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	verdict := "kept up"
	if !r.keptUp() {
		verdict = "did NOT keep up: " + strings.Join(r.Failures, "; ")
	}
	fmt.Fprintf(tw, "fleet\t%d robots, %d topics, %d worker(s) (pool %d MiB, %d activity slots each): %s\n", r.Robots, r.Topics, r.Workers, r.MemoryPool>>20, r.Activities, verdict)
	fmt.Fprintf(tw, "  ingested\t%.1f chunks/s of %.0f offered, %d bytes, %d chunks late\n", r.IngestRate, r.OfferedRate, r.IngestBytes, r.LateChunks)
	fmt.Fprintf(tw, "  runs\t%d started, %d skipped (the previous still running)\n", r.Runs, r.RunsSkipped)
	fmt.Fprintf(tw, "  L0 chunks per topic\tmean %.1f over the second half, %+.1f from its first quarter to its last, most in one topic %d\n", r.MeanTopicL0, r.TrendTopicL0, r.MaxTopicL0)
	fmt.Fprintf(tw, "  oldest uncompacted\t%.1f s (second half)\n", r.OldestSeconds)
	fmt.Fprintf(tw, "  after finalize\t%d of %d topics one sorted run, drained in %.1f s, write amplification %.2f\n", r.SortedRuns, r.Topics, r.DrainSeconds, r.WriteAmplification)
	each := make([]string, len(r.WorkerCPU))
	for i, c := range r.WorkerCPU {
		each[i] = fmt.Sprintf("%.1f", c)
	}
	fmt.Fprintf(tw, "  workers\t%.1f CPU s in all (each: %s), peak RSS %d MiB\n", r.WorkerCPUSeconds, strings.Join(each, ", "), r.WorkerPeakRSS>>20)
	_ = tw.Flush()
}
