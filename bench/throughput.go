package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
)

// The throughput bench (-throughput N) measures orchestration: N one-chunk topics (and, with
// -throughput-big, one large topic among them) optimized by one StoreOptimizerWorkflow run of
// the worker binary against a Temporal server, reported as topics per second.

// throughputFormat changes whenever the generated layout of a throughput dataset changes.
const throughputFormat = 1

// throughputSequences is how many sequences the small topics are spread over; each is ingested
// by a goroutine of its own (the bulk path: ingest.Ingest writes one topic after the other).
const throughputSequences = 4

// bigSequence is the sequence of the big topic of a mixed run.
const bigSequence = "big"

// throughputParams fix a generated throughput dataset.
type throughputParams struct {
	Format       int   `json:"format"`
	Topics       int   `json:"topics"`         // one-chunk topics
	RowsPerChunk int   `json:"rows_per_chunk"` // rows of each small topic's chunk
	BigArrow     int64 `json:"big_arrow_bytes,omitempty"`
	BigChunks    int   `json:"big_chunks,omitempty"`
	BigRows      int   `json:"big_rows_per_chunk,omitempty"`
	Seed         int64 `json:"seed"`
}

func (p throughputParams) name() string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("topics%d-%s", p.Topics, hex.EncodeToString(sum[:6]))
}

// throughputMarker is the marker file of a generated throughput dataset, written last.
type throughputMarker struct {
	Params          throughputParams `json:"params"`
	Tables          []snapshotTable  `json:"tables"`
	GenerateSeconds float64          `json:"generate_seconds"`
}

// throughputConfig is the part of the command line the throughput bench reads.
type throughputConfig struct {
	topics              int
	rowsPerChunk        int
	bigSize             int64
	bigChunks           int
	maxConcurrentTopics int
	pageSize            int
	maxActivities       int
	slowTopic           time.Duration
}

// throughputReport is the outcome of one throughput run.
type throughputReport struct {
	Type          string  `json:"type"` // "throughput"
	Dataset       string  `json:"dataset"`
	SmallTopics   int     `json:"small_topics"`
	BigTopic      bool    `json:"big_topic"`
	BigInputBytes int64   `json:"big_input_bytes,omitempty"`
	SlowTopic     string  `json:"slow_topic,omitempty"` // the simulated slow topic's sleep
	Seconds       float64 `json:"seconds"`              // the starter's wall time
	TopicsPerSec  float64 `json:"topics_per_second"`    // all topics / Seconds
	// SmallDoneSeconds is when the last small topic was committed (from the starter's start);
	// SmallPerSec = small topics / SmallDoneSeconds.
	SmallDoneSeconds float64 `json:"small_done_seconds"`
	SmallPerSec      float64 `json:"small_topics_per_second"`
	// BigDoneSeconds is when the big (or slow) topic was committed; 0 without one.
	BigDoneSeconds float64 `json:"big_done_seconds,omitempty"`
	// SmallAfterBigStart counts the small topics committed after the big topic's lease and
	// before its commit: the run kept going while the big topic ran.
	SmallDuringBig      int     `json:"small_during_big,omitempty"`
	WorkerCPUSeconds    float64 `json:"worker_cpu_seconds"`
	WorkerPeakRSSBytes  int64   `json:"worker_peak_rss_bytes"`
	MaxConcurrentTopics int     `json:"max_concurrent_topics"`
	PageSize            int     `json:"page_size"`
	GenerateSeconds     float64 `json:"generate_seconds,omitempty"`
}

func throughputParamsFor(cfg config, t throughputConfig) throughputParams {
	p := throughputParams{Format: throughputFormat, Topics: t.topics, RowsPerChunk: t.rowsPerChunk, Seed: cfg.seed}
	if t.bigSize > 0 {
		p.BigArrow, p.BigChunks = t.bigSize, t.bigChunks
		rows := float64(t.bigSize) / float64(t.bigChunks) / float64(approxRowBytes(shapeIMU, 0))
		p.BigRows = max(1, int(math.Round(rows)))
	}
	return p
}

// throughputBench prepares (or reuses) the dataset, runs one pass with the worker binary and
// prints the report.
func throughputBench(ctx context.Context, cfg config, t throughputConfig) error {
	srv := &server{adminURL: cfg.pgURL}
	if !cfg.keepDatabases {
		defer srv.dropAll(context.WithoutCancel(ctx))
	}
	p := throughputParamsFor(cfg, t)
	dir := filepath.Join(cfg.dataDir, p.name())
	storeDir := filepath.Join(dir, "store")
	template := "storeopt_bench_" + randomSuffix() + "_many"
	dbURL, err := srv.create(ctx, template, "")
	if err != nil {
		return err
	}
	if err := catalog.Migrate(ctx, dbURL); err != nil {
		return err
	}
	var m throughputMarker
	if b, err := os.ReadFile(filepath.Join(dir, "dataset.json")); err == nil && json.Unmarshal(b, &m) == nil &&
		m.Params == p && !cfg.regen {
		logf("dataset %s: reusing %s", p.name(), dir)
		if err := restoreCatalog(ctx, dbURL, filepath.Join(dir, "catalog"), m.Tables); err != nil {
			return err
		}
		m.GenerateSeconds = 0
	} else if m, err = generateMany(ctx, p, dir, dbURL); err != nil {
		return err
	}
	// The run's own copy: the template stays as generated, and its outputs are removed below.
	runDB := template + "_run"
	runURL, err := srv.create(ctx, runDB, template)
	if err != nil {
		return err
	}
	before, err := prefixes(storeDir)
	if err != nil {
		return err
	}
	defer func() {
		after, _ := prefixes(storeDir)
		for name := range after {
			if !before[name] {
				_ = os.RemoveAll(filepath.Join(storeDir, name))
			}
		}
	}()
	rep, err := runThroughput(ctx, cfg, t, p, dir, "file://"+storeDir, runURL)
	if err != nil {
		return err
	}
	rep.GenerateSeconds = m.GenerateSeconds
	if cfg.jsonOut {
		return json.NewEncoder(os.Stdout).Encode(rep)
	}
	printThroughput(os.Stdout, rep)
	return nil
}

// prefixes lists the top-level names of the store directory.
func prefixes(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(entries))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out, nil
}

// generateMany ingests the small topics (throughputSequences sequences in parallel, one chunk
// each) and the big topic, snapshots the catalog and writes the marker.
func generateMany(ctx context.Context, p throughputParams, dir, dbURL string) (throughputMarker, error) {
	if err := os.RemoveAll(dir); err != nil {
		return throughputMarker{}, err
	}
	storeDir := filepath.Join(dir, "store")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return throughputMarker{}, err
	}
	logf("dataset %s: generating %d one-chunk topics of %d rows%s into %s", p.name(), p.Topics, p.RowsPerChunk,
		map[bool]string{true: fmt.Sprintf(" and a topic of %d chunks × %d rows", p.BigChunks, p.BigRows)}[p.BigChunks > 0], dir)
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		return throughputMarker{}, err
	}
	defer cat.Close()
	bucket, err := app.OpenStore(ctx, "file://"+storeDir)
	if err != nil {
		return throughputMarker{}, err
	}
	defer bucket.Close()
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for s := range throughputSequences {
		opts := ingest.Options{Sequence: fmt.Sprintf("many%d", s), Seed: p.Seed + int64(s), Workers: 1}
		for i := s; i < p.Topics; i += throughputSequences {
			opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("t/%05d", i), Kind: ingest.IMU,
				Chunks: 1, RowsPerChunk: p.RowsPerChunk})
		}
		if len(opts.Topics) == 0 {
			continue
		}
		g.Go(func() error {
			_, err := ingest.Ingest(gctx, cat, bucket, opts)
			return err
		})
	}
	if p.BigChunks > 0 {
		g.Go(func() error {
			_, err := ingest.Ingest(gctx, cat, bucket, ingest.Options{Sequence: bigSequence, Seed: p.Seed,
				Topics: []ingest.TopicSpec{{Path: "sensors/imu", Kind: ingest.IMU, Chunks: p.BigChunks,
					RowsPerChunk: p.BigRows, Overlap: 0.05}}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return throughputMarker{}, fmt.Errorf("generate dataset %s: %w", p.name(), err)
	}
	m := throughputMarker{Params: p, GenerateSeconds: time.Since(start).Seconds()}
	cat.Close()
	if m.Tables, err = snapshotCatalog(ctx, dbURL, filepath.Join(dir, "catalog")); err != nil {
		return m, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	if err := os.WriteFile(filepath.Join(dir, "dataset.json"), b, 0o644); err != nil {
		return m, err
	}
	logf("dataset %s: generated in %.1f s", p.name(), m.GenerateSeconds)
	return m, nil
}

// runThroughput runs one pass over every queued topic of the catalog at dbURL with the worker
// binary (built with the fault points when a slow topic is simulated) and the starter, and reads
// the commit times from the catalog.
func runThroughput(ctx context.Context, cfg config, t throughputConfig, p throughputParams, dir, storeURL, dbURL string) (throughputReport, error) {
	rep := throughputReport{Type: "throughput", Dataset: p.name(), SmallTopics: p.Topics, BigTopic: p.BigChunks > 0,
		MaxConcurrentTopics: t.maxConcurrentTopics, PageSize: t.pageSize}
	var tags []string
	if t.slowTopic > 0 {
		tags = []string{"storeopt_faults"}
		rep.SlowTopic = t.slowTopic.String()
	}
	worker, starter, err := buildStoreoptTagged(ctx, filepath.Join(dir, "bin"), tags)
	if err != nil {
		return rep, err
	}
	env := storeoptEnv(cfg, t.maxActivities, dbURL, storeURL, "storeopt-bench-"+randomSuffix())
	workerEnv := env
	if t.slowTopic > 0 {
		// The first output chunk over a MiB waits in its upload: that topic is the slow one.
		workerEnv = append(workerEnv, "STOREOPT_FAULTS=write-chunks.uploading=sleep:"+t.slowTopic.String()+"*1")
	}
	w := exec.CommandContext(ctx, worker)
	logPath := filepath.Join(dir, "worker.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return rep, err
	}
	defer logFile.Close()
	w.Env, w.Stdout, w.Stderr = workerEnv, logFile, logFile
	if err := w.Start(); err != nil {
		return rep, fmt.Errorf("start worker: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
	}()
	args := []string{"store-optimizer", "--max-chunk-size", strconv.FormatInt(cfg.maxChunkSize, 10),
		"--topic-parallelism", strconv.Itoa(cfg.topicParallelism)}
	if t.maxConcurrentTopics > 0 {
		args = append(args, "--max-concurrent-topics", strconv.Itoa(t.maxConcurrentTopics))
	}
	if t.pageSize > 0 {
		args = append(args, "--page-size", strconv.Itoa(t.pageSize))
	}
	logf("worker log: %s; starter %s", logPath, strings.Join(args, " "))
	start := time.Now()
	s := exec.CommandContext(ctx, starter, args...)
	s.Env, s.Stdout, s.Stderr = env, io.Discard, os.Stderr
	runErr := s.Run()
	rep.Seconds = time.Since(start).Seconds()
	rep.WorkerPeakRSSBytes, rep.WorkerCPUSeconds = stopWorker(w)
	stopped = true
	if runErr != nil {
		return rep, fmt.Errorf("starter store-optimizer: %w (is a Temporal server running at %s? scripts/dev-server.sh starts one)", runErr, cfg.temporalAddress)
	}
	if err := commitTimes(ctx, dbURL, start, &rep); err != nil {
		return rep, err
	}
	total := p.Topics
	if rep.BigTopic {
		total++
	}
	rep.TopicsPerSec = float64(total) / rep.Seconds
	return rep, nil
}

// commitTimes reads every topic's commit time (optimizations.committed_at) and, for the big
// topic (sequence bigSequence) or the simulated slow topic (the topic of the longest
// optimization), its lease time; all topics must have been optimized exactly once.
func commitTimes(ctx context.Context, dbURL string, start time.Time, rep *throughputReport) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	type row struct {
		Locator   string
		Committed time.Time
		Seconds   float64
	}
	rows, _ := conn.Query(ctx, `
		SELECT t.locator, o.committed_at, COALESCE(o.seconds, 0)::float8
		FROM optimizations o JOIN topics t ON t.id = o.topic_id ORDER BY o.committed_at`)
	opt, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return fmt.Errorf("read optimizations: %w", err)
	}
	var unoptimized int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM topics WHERE optimized_at IS NULL`).Scan(&unoptimized); err != nil {
		return err
	}
	want := rep.SmallTopics
	if rep.BigTopic {
		want++
	}
	if len(opt) != want || unoptimized != 0 {
		return fmt.Errorf("%d optimizations recorded and %d topics not optimized, want %d and 0", len(opt), unoptimized, want)
	}
	slow := -1
	switch {
	case rep.BigTopic:
		for i, o := range opt {
			if strings.HasPrefix(o.Locator, bigSequence+"/") {
				slow = i
			}
		}
	case rep.SlowTopic != "":
		for i, o := range opt {
			if slow < 0 || o.Seconds > opt[slow].Seconds {
				slow = i
			}
		}
	}
	var small []time.Time
	for i, o := range opt {
		if i != slow {
			small = append(small, o.Committed)
		}
	}
	sort.Slice(small, func(i, j int) bool { return small[i].Before(small[j]) })
	if len(small) > 0 {
		rep.SmallDoneSeconds = small[len(small)-1].Sub(start).Seconds()
		rep.SmallPerSec = float64(len(small)) / rep.SmallDoneSeconds
	}
	if slow >= 0 {
		b := opt[slow]
		rep.BigDoneSeconds = b.Committed.Sub(start).Seconds()
		leased := b.Committed.Add(-time.Duration(b.Seconds * float64(time.Second)))
		for _, c := range small {
			if c.After(leased) && c.Before(b.Committed) {
				rep.SmallDuringBig++
			}
		}
		if rep.BigTopic {
			if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(c.size_bytes), 0) FROM chunks c JOIN topics t ON t.id = c.topic_id
				WHERE t.locator LIKE $1`, bigSequence+"/%").Scan(&rep.BigInputBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// printThroughput prints one throughput report as a small table.
func printThroughput(w io.Writer, r throughputReport) {
	fmt.Fprintf(w, "throughput bench, dataset %s: %d one-chunk topics", r.Dataset, r.SmallTopics)
	if r.BigTopic {
		fmt.Fprintf(w, " + one topic of %.0f MB", float64(r.BigInputBytes)/1e6)
	}
	if r.SlowTopic != "" {
		fmt.Fprintf(w, " (one made slow: %s before its first output)", r.SlowTopic)
	}
	fmt.Fprintf(w, "\n| %-22s | %s |\n| --- | --- |\n", "measure", "value")
	line := func(k, v string) { fmt.Fprintf(w, "| %-22s | %s |\n", k, v) }
	line("run seconds", fmt.Sprintf("%.1f", r.Seconds))
	line("topics/s (all)", fmt.Sprintf("%.1f", r.TopicsPerSec))
	line("small topics done at s", fmt.Sprintf("%.1f", r.SmallDoneSeconds))
	line("small topics/s", fmt.Sprintf("%.1f", r.SmallPerSec))
	if r.BigDoneSeconds > 0 {
		line("big/slow topic done at s", fmt.Sprintf("%.1f", r.BigDoneSeconds))
		line("small done while it ran", strconv.Itoa(r.SmallDuringBig))
	}
	line("worker cpu s", fmt.Sprintf("%.1f", r.WorkerCPUSeconds))
	line("worker peak RSS MiB", fmt.Sprintf("%.0f", float64(r.WorkerPeakRSSBytes)/(1<<20)))
	line("max concurrent topics", orDefault(r.MaxConcurrentTopics))
	line("page size", orDefault(r.PageSize))
}

func orDefault(n int) string {
	if n == 0 {
		return "default"
	}
	return strconv.Itoa(n)
}
