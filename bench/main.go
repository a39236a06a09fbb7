// Command bench measures storeopt's rewrite of one topic against two references: reading every
// input chunk once with arrow-go (the floor of any rewrite) and DuckDB's
// COPY … ORDER BY timestamp_ns. It generates (or reuses) a simulated topic, runs every job in a
// child process of its own so that peak RSS and CPU time are per job, checks every output (row
// count, global timestamp order, Arrow schema and metadata) and prints a table or JSON lines.
//
// It lives in its own module so that storeopt never depends on DuckDB. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/storeopt/storeopt/app"
)

// Job names.
const (
	jobRead     = "read"
	jobStoreopt = "storeopt"
	jobDuckDB   = "duckdb"
	// jobFleet is not a job of the rewrite bench: -jobs fleet runs the fleet bench (fleet.go).
	jobFleet = "fleet"
)

var allJobs = []string{jobRead, jobStoreopt, jobDuckDB}

// config is the parsed command line of the parent.
type config struct {
	shapes           []string
	size             int64 // target Arrow bytes of the topic; 0 = the shape's default
	chunks           int   // 0 = the shape's default
	overlap          float64
	unsorted         float64
	pageIndex        bool
	rowGroupRows     int
	payload          int
	hugeEvery        int
	hugeRows         int
	hugeBytes        int
	seed             int64
	dataDir          string
	regen            bool
	runs             int
	jobs             []string
	memoryPool       int64
	maxChunkSize     int64
	topicParallelism int
	encodeWorkers    int
	pgURL            string
	jsonOut          bool
	cpuProfile       string
	memProfile       string
	keepDatabases    bool
	temporalAddress  string
}

func main() {
	var cfg config
	var shape, jobs, job, jobSpec, jobResult string
	var levels, readers bool
	var levelsBatch int
	var tp throughputConfig
	var fc fleetConfig
	var fleetWorkers string
	flag.StringVar(&shape, "shape", "all", "dataset shape: imu (narrow IMU rows), image (binary payload rows), skew (small rows and a few huge ones; not in all) or all")
	flag.IntVar(&cfg.hugeEvery, "huge-every", 20, "skew shape: every n-th chunk starts with huge rows")
	flag.IntVar(&cfg.hugeRows, "huge-rows", 4, "skew shape: huge rows at the start of such a chunk")
	flag.IntVar(&cfg.hugeBytes, "huge-bytes", 32<<20, "skew shape: payload of a huge row, bytes (zeros)")
	flag.Int64Var(&cfg.size, "size", 0, "target uncompressed Arrow size of the topic, bytes (0 = 1100000000 for imu, 500000000 for image, 60000000 of small rows for skew)")
	flag.IntVar(&cfg.chunks, "chunks", 0, "number of input chunks (0 = 2000 for imu, 300 for image, 200 for skew)")
	flag.Float64Var(&cfg.overlap, "overlap", 0.05, "fraction (0..1) of each chunk's time span overlapping the previous chunk")
	flag.Float64Var(&cfg.unsorted, "unsorted", 0, "fraction (0..1) of chunks whose rows are slightly out of order")
	flag.BoolVar(&cfg.pageIndex, "page-index", false, "record the chunks with a page index, as a recorder that serves window reads does (with -overlap 0 and chunks of more than half -max-chunk-size, each output passes through)")
	flag.IntVar(&cfg.rowGroupRows, "row-group-rows", 0, "record the chunks in row groups of at most this many rows (0: one row group per chunk)")
	flag.IntVar(&cfg.payload, "payload", 50_000, "binary payload of each image row, bytes (10–100 KB is typical)")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the simulated data")
	flag.StringVar(&cfg.dataDir, "data", filepath.Join(os.TempDir(), "storeopt-bench"), "directory of generated datasets (reused across invocations)")
	flag.BoolVar(&cfg.regen, "regen", false, "regenerate the datasets even when -data holds them")
	flag.IntVar(&cfg.runs, "runs", 3, "repetitions of every job; medians are reported")
	flag.StringVar(&jobs, "jobs", strings.Join(allJobs, ","), "comma-separated jobs to run: read, storeopt, duckdb, and worker (the worker binary through Temporal; not a default)")
	flag.Int64Var(&cfg.memoryPool, "memory-pool", 0, "storeopt memory pool, bytes (Activities.MemoryPoolBytes and STOREOPT_MEMORY_POOL_SIZE); 0 = unlimited")
	flag.Int64Var(&cfg.maxChunkSize, "max-chunk-size", 256_000_000, "storeopt's soft limit of one output chunk, bytes")
	flag.IntVar(&cfg.topicParallelism, "topic-parallelism", 2, "WriteChunks groups run at once by the storeopt job")
	flag.IntVar(&cfg.encodeWorkers, "encode-workers", 0, "goroutines that encode an output's column chunks and read it back in the storeopt job (0: storeopt's default, GOMAXPROCS up to 4)")
	flag.StringVar(&cfg.pgURL, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL URL of a database to connect to for creating and dropping the bench databases")
	flag.BoolVar(&cfg.jsonOut, "json", false, "print one JSON object per job and dataset, and one per dataset with the ratios, instead of the table")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of every storeopt job run to this file (.<shape>.<run> is inserted before the extension when there are several)")
	flag.StringVar(&cfg.memProfile, "memprofile", "", "write a heap profile (in-use and allocations) at the end of every storeopt job run, named like -cpuprofile")
	flag.StringVar(&cfg.temporalAddress, "temporal-address", "127.0.0.1:7233", "Temporal frontend of the worker job (scripts/dev-server.sh starts one)")
	flag.BoolVar(&cfg.keepDatabases, "keep-databases", false, "do not drop the bench databases at the end (debugging)")
	flag.BoolVar(&levels, "levels", false, "run the levels bench instead of the jobs: a 1-second window read (starter read) before optimization and after tiered, leveled and full compactions, and the CPU cost of keeping a live topic compact under auto")
	flag.BoolVar(&readers, "readers", false, "run the readers bench instead of the jobs: a 1-second and a 1-minute window and a scan, read by topicread (starter read) and by DuckDB, on the ingested chunks, on storeopt's output (written with -memory-pool) and on DuckDB's sorted output; bytes fetched and seconds")
	flag.IntVar(&levelsBatch, "levels-batch", 100, "with -levels: chunks appended to the live topic between two auto compactions")
	flag.IntVar(&tp.topics, "throughput", 0, "run the throughput bench instead of the jobs: this many one-chunk topics optimized by one run of the worker binary (needs -temporal-address), topics per second")
	flag.IntVar(&tp.rowsPerChunk, "throughput-rows", 100, "with -throughput: rows of each one-chunk topic")
	flag.Int64Var(&tp.bigSize, "throughput-big", 0, "with -throughput: also one IMU topic of this many Arrow bytes in the same run (a mixed run); 0 = none")
	flag.IntVar(&tp.bigChunks, "throughput-big-chunks", 8000, "with -throughput-big: chunks of the big topic")
	flag.DurationVar(&tp.slowTopic, "throughput-slow", 0, "with -throughput: make one topic slow: the worker is built with the fault points and the first output chunk over a MiB (only a big topic has one) waits this long in its upload")
	flag.IntVar(&tp.maxConcurrentTopics, "max-concurrent-topics", 0, "with -throughput: starter store-optimizer --max-concurrent-topics (0 = the workflow's default)")
	flag.IntVar(&tp.pageSize, "page-size", 0, "with -throughput: starter store-optimizer --page-size (0 = the workflow's default)")
	flag.IntVar(&tp.maxActivities, "max-concurrent-activities", app.DefaultMaxConcurrentActivities, "with -throughput and -jobs fleet: the worker's STOREOPT_MAX_CONCURRENT_ACTIVITIES")
	flag.IntVar(&fc.robots, "fleet-robots", 50, "with -jobs fleet: robots recording at once, each with an IMU, a GPS and a camera topic (the demo preset's)")
	flag.DurationVar(&fc.duration, "fleet-duration", 10*time.Minute, "with -jobs fleet: how long the fleet records")
	flag.DurationVar(&fc.interval, "fleet-interval", time.Second, "with -jobs fleet: time between two chunks of a topic")
	flag.DurationVar(&fc.schedule, "fleet-schedule", 10*time.Second, "with -jobs fleet: a run of starter store-optimizer --policy auto every this long")
	flag.StringVar(&fleetWorkers, "fleet-workers", "1", "with -jobs fleet: comma-separated worker process counts to run the fleet against, e.g. 1,2")
	flag.Float64Var(&fc.rowsScale, "fleet-rows-scale", 0.1, "with -jobs fleet: rows per chunk as a fraction of the demo preset's")
	flag.IntVar(&fc.minChunks, "fleet-min-chunks", 2, "with -jobs fleet: the runs' --min-chunks")
	flag.BoolVar(&fc.search, "fleet-search", false, "with -jobs fleet: raise the robots by half again while the workers keep up, and report the highest chunk rate kept up with")
	flag.Int64Var(&fc.batchBytes, "fleet-batch-bytes", 8<<20, "with -jobs fleet: the runs' --batch-topic-bytes, topics up to this estimated input optimized in batches (0 = the workflow's default, 1 MiB)")
	flag.IntVar(&fc.ingesters, "fleet-ingest-workers", 8, "with -jobs fleet: chunks the simulator writes at once")
	flag.StringVar(&job, "job", "", "internal: run one job in this process")
	flag.StringVar(&jobSpec, "job-spec", "", "internal: job spec file")
	flag.StringVar(&jobResult, "job-result", "", "internal: job result file")
	flag.Parse()

	if job != "" {
		if err := runChild(job, jobSpec, jobResult); err != nil {
			fmt.Fprintf(os.Stderr, "bench job %s: %v\n", job, err)
			os.Exit(1)
		}
		return
	}
	if err := cfg.finish(shape, jobs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if jobs == jobFleet {
		for _, n := range strings.Split(fleetWorkers, ",") {
			w, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil || w < 1 {
				fmt.Fprintf(os.Stderr, "bench: -fleet-workers %q: want worker counts of at least 1\n", fleetWorkers)
				os.Exit(2)
			}
			fc.workers = append(fc.workers, w)
		}
		if fc.robots < 1 || fc.duration <= 0 || fc.interval <= 0 || fc.schedule <= 0 || !(fc.rowsScale > 0) {
			fmt.Fprintln(os.Stderr, "bench: -fleet-robots, -fleet-duration, -fleet-interval, -fleet-schedule and -fleet-rows-scale must be positive")
			os.Exit(2)
		}
		fc.activities = tp.maxActivities
		if err := fleetBench(ctx, cfg, fc); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if tp.topics > 0 {
		if err := throughputBench(ctx, cfg, tp); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if readers {
		if err := readersBench(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if levels {
		if levelsBatch < 1 {
			fmt.Fprintln(os.Stderr, "bench: -levels-batch must be at least 1")
			os.Exit(2)
		}
		if err := levelsBench(ctx, cfg, levelsBatch); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// finish validates the flags and fills the derived fields.
func (c *config) finish(shape, jobs string) error {
	switch shape {
	case shapeIMU, shapeImage, shapeSkew:
		c.shapes = []string{shape}
	case "all":
		c.shapes = []string{shapeIMU, shapeImage}
	default:
		return fmt.Errorf("-shape %q: want imu, image, skew or all", shape)
	}
	for _, j := range strings.Split(jobs, ",") {
		j = strings.TrimSpace(j)
		if !contains(allJobs, j) && j != jobWorker && j != jobFleet {
			return fmt.Errorf("-jobs: unknown job %q (read, storeopt, duckdb, worker)", j)
		}
		if !contains(c.jobs, j) {
			c.jobs = append(c.jobs, j)
		}
	}
	switch {
	case c.size < 0:
		return fmt.Errorf("-size %d is negative", c.size)
	case c.chunks < 0:
		return fmt.Errorf("-chunks %d is negative", c.chunks)
	case c.payload < 1:
		return fmt.Errorf("-payload %d must be positive", c.payload)
	case c.runs < 1:
		return fmt.Errorf("-runs %d must be at least 1", c.runs)
	case c.memoryPool < 0:
		return fmt.Errorf("-memory-pool %d is negative (0 = unlimited)", c.memoryPool)
	case c.maxChunkSize < 1:
		return fmt.Errorf("-max-chunk-size %d must be positive", c.maxChunkSize)
	case c.topicParallelism < 1:
		return fmt.Errorf("-topic-parallelism %d must be at least 1", c.topicParallelism)
	}
	var err error
	for _, p := range []*string{&c.dataDir, &c.cpuProfile, &c.memProfile} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// profilePath returns the profile file of one storeopt run: base itself when the invocation
// has one shape and one run, else base with ".<shape>.<run>" before its extension.
func (c *config) profilePath(base, shape string, run int) string {
	if base == "" || (len(c.shapes) == 1 && c.runs == 1) {
		return base
	}
	ext := filepath.Ext(base)
	return fmt.Sprintf("%s.%s.%d%s", strings.TrimSuffix(base, ext), shape, run+1, ext)
}
