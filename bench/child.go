package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/mempool"
	storeoptmetrics "github.com/storeopt/storeopt/metrics"
)

// jobSpec is what the parent tells a child job.
type jobSpec struct {
	StoreDir         string   `json:"store_dir"`
	Keys             []string `json:"keys,omitempty"`         // read: input chunk keys
	InputGlob        string   `json:"input_glob,omitempty"`   // duckdb: input files
	OutputDir        string   `json:"output_dir,omitempty"`   // duckdb: output and spill directory
	DatabaseURL      string   `json:"database_url,omitempty"` // storeopt: this run's catalog
	TopicID          int64    `json:"topic_id,omitempty"`
	RunToken         string   `json:"run_token,omitempty"`
	MemoryPoolBytes  int64    `json:"memory_pool_bytes,omitempty"`
	MaxChunkSize     int64    `json:"max_chunk_size,omitempty"`
	TopicParallelism int      `json:"topic_parallelism,omitempty"`
	// EncodeWorkers, when > 0, sets compaction.EncodeWorkers and compaction.ReadBackWorkers (the
	// goroutines that encode an output's column chunks and read it back).
	EncodeWorkers int    `json:"encode_workers,omitempty"`
	CPUProfile    string `json:"cpu_profile,omitempty"`
	MemProfile    string `json:"mem_profile,omitempty"`
}

// jobResult is what a child job reports back.
type jobResult struct {
	Rows         int64              `json:"rows,omitempty"`          // read: rows decoded
	OutputFiles  []string           `json:"output_files,omitempty"`  // output chunks in order (absolute paths)
	OutputPrefix string             `json:"output_prefix,omitempty"` // storeopt: the fresh prefix
	Phases       map[string]float64 `json:"phases,omitempty"`        // seconds per phase, measured inside the child
	// PeakRSSBytes is the child's own peak resident set (VmHWM of /proc/self/status at the end of
	// the job): unlike the rusage of the child seen by the parent, it does not include the
	// parent's resident set at the time of the fork (Linux carries the high-water mark of the
	// memory the child shared with its parent until exec into the child's rusage).
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// PeakAnonBytes and PeakFileBytes are the largest RssAnon (anonymous pages: the Go runtime's
	// memory) and RssFile (file-backed pages: the executable's) of /proc/self/status sampled
	// every rssSampleEvery during the job: which of the two the peak is made of.
	PeakAnonBytes int64 `json:"peak_anon_bytes,omitempty"`
	PeakFileBytes int64 `json:"peak_file_bytes,omitempty"`
	// Paths is how the storeopt job's output chunks were written (rewritten or copied).
	Paths *pathBytes `json:"paths,omitempty"`
}

// runChild runs one job in this process and writes its result file.
func runChild(job, specPath, resultPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec jobSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("job spec %s: %w", specPath, err)
	}
	ctx := context.Background()
	if os.Getenv("STOREOPT_BENCH_MEMSTATS") != "" {
		logf("%s job: at start %s", job, memSummary())
		defer func() { logf("%s job: at end %s", job, memSummary()) }()
	}
	stopSampling := sampleRSS()
	var res jobResult
	switch job {
	case jobRead:
		res, err = readJob(ctx, spec)
	case jobStoreopt:
		res, err = storeoptJob(ctx, spec)
	case jobDuckDB:
		res, err = duckdbJob(ctx, spec)
	default:
		err = fmt.Errorf("unknown job")
	}
	res.PeakRSSBytes = peakRSS()
	res.PeakAnonBytes, res.PeakFileBytes = stopSampling()
	// Written even on failure: the parent deletes a failed storeopt run's prefix with it.
	b, merr := json.Marshal(res)
	if merr == nil {
		merr = os.WriteFile(resultPath, b, 0o644)
	}
	if err != nil {
		return err
	}
	return merr
}

// peakRSS returns this process's peak resident set size in bytes (VmHWM), or 0 when unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseVmHWM(string(b))
}

// rssSampleEvery is how often sampleRSS reads the process's resident set.
const rssSampleEvery = 10 * time.Millisecond

// sampleRSS samples this process's RssAnon and RssFile every rssSampleEvery until the returned
// function is called, which returns the largest of each seen (0 when unknown).
func sampleRSS() (stop func() (anon, file int64)) {
	var peakAnon, peakFile int64
	sample := func() {
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			peakAnon = max(peakAnon, statusBytes(string(b), "RssAnon:"))
			peakFile = max(peakFile, statusBytes(string(b), "RssFile:"))
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-finished
		sample()
		return peakAnon, peakFile
	}
}

// parseVmHWM returns the VmHWM line of a /proc/<pid>/status text in bytes (0 when absent).
func parseVmHWM(status string) int64 { return statusBytes(status, "VmHWM:") }

// statusBytes returns the line of a /proc/<pid>/status text named key (with its colon) in bytes
// (0 when absent).
func statusBytes(status, key string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == key && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// memSummary describes the process's memory for profiling (STOREOPT_BENCH_MEMSTATS=1): peak and
// current RSS from /proc/self/status (anonymous and file-backed pages apart) and the Go runtime's
// memory by class (runtime/metrics /memory/classes).
func memSummary() string {
	var rss string
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
				if strings.HasPrefix(line, k+":") {
					rss += strings.Join(strings.Fields(line), " ") + " "
				}
			}
		}
	}
	classes := []struct{ name, metric string }{
		{"heap objects", "/memory/classes/heap/objects:bytes"},
		{"heap unused", "/memory/classes/heap/unused:bytes"},
		{"heap free", "/memory/classes/heap/free:bytes"},
		{"heap released", "/memory/classes/heap/released:bytes"},
		{"stacks", "/memory/classes/heap/stacks:bytes"},
		{"GC metadata", "/memory/classes/metadata/other:bytes"},
		{"spans", "/memory/classes/metadata/mspan/inuse:bytes"},
		{"profiling", "/memory/classes/profiling/buckets:bytes"},
		{"other", "/memory/classes/other:bytes"},
		{"total", "/memory/classes/total:bytes"},
	}
	samples := make([]metrics.Sample, len(classes))
	for i, c := range classes {
		samples[i].Name = c.metric
	}
	metrics.Read(samples)
	parts := make([]string, 0, len(classes))
	for i, c := range classes {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			parts = append(parts, fmt.Sprintf("%s %.1f", c.name, float64(samples[i].Value.Uint64())/(1<<20)))
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("%sGo MiB: %s; allocated in all %.0f MiB, GCs %d", rss, strings.Join(parts, ", "),
		float64(ms.TotalAlloc)/(1<<20), ms.NumGC)
}

// readJob decodes every input chunk once with pqarrow, two files at a time.
func readJob(ctx context.Context, spec jobSpec) (jobResult, error) {
	bucket, err := app.OpenStore(ctx, "file://"+spec.StoreDir)
	if err != nil {
		return jobResult{}, err
	}
	defer bucket.Close()
	st, err := app.ReadObjects(ctx, bucket, spec.Keys, 2)
	if err != nil {
		return jobResult{}, err
	}
	return jobResult{Rows: st.Rows, Phases: map[string]float64{"read": st.Elapsed.Seconds()}}, nil
}

// phaseTimer records the seconds of consecutive phases.
type phaseTimer struct {
	phases map[string]float64
	last   time.Time
}

func newPhaseTimer() *phaseTimer {
	return &phaseTimer{phases: map[string]float64{}, last: time.Now()}
}

func (t *phaseTimer) done(name string) {
	now := time.Now()
	t.phases[name] = now.Sub(t.last).Seconds()
	t.last = now
}

// storeoptJob optimizes the topic through storeopt's activities, called directly (no Temporal):
// Lease, ReadSort, WriteChunks for every group (TopicParallelism at once, like the workflow),
// Commit; then it lists the topic's new chunks from the catalog and splits them by the write
// path they took (pathsOf). With a memory pool it sets the Go runtime's memory limit and GOGC
// as the worker does (app.ApplyMemoryLimit).
func storeoptJob(ctx context.Context, spec jobSpec) (res jobResult, err error) {
	// Like the worker: with a memory pool, the Go memory limit and GOGC follow from it.
	if limit := app.ApplyMemoryLimit(spec.MemoryPoolBytes); limit > 0 {
		logf("storeopt job: Go memory limit %d bytes from the memory pool", limit)
	}
	if spec.EncodeWorkers > 0 {
		compaction.EncodeWorkers, compaction.ReadBackWorkers = spec.EncodeWorkers, spec.EncodeWorkers
	}
	t := newPhaseTimer()
	cat, err := catalog.Open(ctx, spec.DatabaseURL)
	if err != nil {
		return res, err
	}
	defer cat.Close()
	bucket, err := app.OpenStore(ctx, "file://"+spec.StoreDir)
	if err != nil {
		return res, err
	}
	defer bucket.Close()
	t.done("open")
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	ctx = activities.WithRun(ctx, "bench", spec.RunToken)
	pool := mempool.New(spec.MemoryPoolBytes)
	if spec.MemProfile != "" {
		stop := watchPeakHeap(peakProfilePath(spec.MemProfile), pool.Allocator().InUse)
		defer stop()
	}
	// Metrics recorded as a worker with --metrics-address records them (not served: the job
	// measures the data path with its instrumentation on).
	reg := storeoptmetrics.NewRegistry(nil)
	reg.WatchPool(pool)
	defer reg.Close()
	acts := &activities.Activities{Catalog: cat, Bucket: bucket, MemoryPoolBytes: spec.MemoryPoolBytes, MemoryPool: pool,
		Metrics: reg}
	defer func() {
		logf("storeopt job: Arrow allocator high-water mark %.1f MiB", float64(pool.Allocator().HighWater())/(1<<20))
	}()
	lease, err := acts.Lease(ctx, activities.LeaseInput{TopicID: spec.TopicID})
	if err != nil {
		return res, fmt.Errorf("lease: %w", err)
	}
	if lease.Leased { // the activities have no Runs here: a lease left by another job is never taken over
		return res, fmt.Errorf("lease: topic %s is leased by run %s", lease.Locator, lease.Holder.RunID)
	}
	res.OutputPrefix = lease.FreshPrefix
	t.done("lease")
	rs, err := acts.ReadSort(ctx, activities.ReadSortInput{TopicID: spec.TopicID, MaxChunkSizeBytes: spec.MaxChunkSize})
	if err != nil {
		return res, fmt.Errorf("read-sort: %w", err)
	}
	t.done("read_sort")
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(spec.TopicParallelism)
	written := make([]activities.WriteChunksResult, rs.Groups) // each goroutine sets its group's
	for group := range rs.Groups {
		g.Go(func() (err error) {
			if written[group], err = acts.WriteChunks(gctx, activities.WriteChunksInput{TopicID: spec.TopicID, Group: group}); err != nil {
				return fmt.Errorf("write-chunks group %d: %w", group, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	t.done("write_chunks")
	if _, err := acts.Commit(ctx, activities.CommitInput{TopicID: spec.TopicID}); err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	t.done("commit")
	if spec.MemProfile != "" {
		if err := writeHeapProfile(spec.MemProfile); err != nil {
			return res, err
		}
	}
	chunks, err := cat.Chunks(ctx, spec.TopicID)
	if err != nil {
		return res, err
	}
	for _, c := range chunks {
		if !strings.HasPrefix(c.ObjectKey, lease.FreshPrefix+"/") {
			return res, fmt.Errorf("after commit, chunk %s is not under the fresh prefix %s", c.ObjectKey, lease.FreshPrefix)
		}
		res.OutputFiles = append(res.OutputFiles, filepath.Join(spec.StoreDir, c.ObjectKey))
	}
	paths, err := pathsOf(written, chunks)
	if err != nil {
		return res, err
	}
	res.Paths = &paths
	res.Phases = t.phases
	return res, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // up-to-date in-use figures
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// peakProfilePath inserts ".peak" before the extension of a heap profile path.
func peakProfilePath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".peak" + ext
}

// watchPeakHeap samples the live heap (runtime/metrics /gc/heap/live:bytes: the heap marked
// live by the last collection) every 50 ms and, whenever it reaches a new high, writes the in-use
// heap profile (which describes that collection) to path, and reads poolInUse (the Arrow
// allocator's bytes in use) at that sample. The returned function stops the watcher and logs the
// peak and how much of it the allocator counted (the rest: Go memory outside the pool's count).
func watchPeakHeap(path string, poolInUse func() int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		var poolAtPeak int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				logf("storeopt job: peak live heap %.1f MiB, of which the Arrow allocator had %.1f MiB in use at that sample "+
					"(%.1f MiB outside its count) (profile %s)", float64(peak)/(1<<20), float64(poolAtPeak)/(1<<20),
					(float64(peak)-float64(poolAtPeak))/(1<<20), path)
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak {
				peak = live
				poolAtPeak = poolInUse()
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					_ = f.Close()
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}
