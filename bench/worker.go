package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
)

// jobWorker runs storeopt as it runs in production: the worker binary (a process of its own,
// Temporal SDK included) serves a StoreOptimizerWorkflow pass started by `starter
// store-optimizer`, against a Temporal server at -temporal-address. Not in the default -jobs.
const jobWorker = "worker"

// storeoptBinaries are the worker and starter binaries, built once per invocation and set of
// build tags.
var storeoptBinaries struct {
	sync.Mutex
	built map[string][2]string // build tags → worker, starter
}

// buildStoreopt builds ./worker and ./starter of the repository this bench belongs to into dir.
func buildStoreopt(ctx context.Context, dir string) (worker, starter string, err error) {
	return buildStoreoptTagged(ctx, dir, nil)
}

// buildStoreoptTagged is buildStoreopt with build tags (the binaries go to dir/<tags> then).
func buildStoreoptTagged(ctx context.Context, dir string, tags []string) (worker, starter string, err error) {
	b := &storeoptBinaries
	b.Lock()
	defer b.Unlock()
	key := strings.Join(tags, ",")
	if bins, ok := b.built[key]; ok {
		return bins[0], bins[1], nil
	}
	_, file, _, ok := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "worker")); !ok || err != nil {
		return "", "", fmt.Errorf("building the worker needs the repository %s (run the bench from it)", root)
	}
	if key != "" {
		dir = filepath.Join(dir, key)
	}
	logf("building worker and starter into %s (tags %q)", dir, key)
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", key, "-o", dir+string(os.PathSeparator), "./worker", "./starter")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("go build ./worker ./starter in %s: %w", root, err)
	}
	if b.built == nil {
		b.built = map[string][2]string{}
	}
	bins := [2]string{filepath.Join(dir, "worker"), filepath.Join(dir, "starter")}
	b.built[key] = bins
	return bins[0], bins[1], nil
}

// runWorkerJob starts the worker on a task queue of its own with the run's catalog database,
// the dataset's store and the memory pool, runs one pass with the starter (which waits for it),
// then stops the worker with SIGTERM; before the pass, a dry run estimates it (estimate.go).
// Seconds are the starter's wall time (Temporal scheduling included); CPU seconds and peak RSS
// (VmHWM, read just before SIGTERM) are the worker's.
func runWorkerJob(ctx context.Context, cfg config, d *dataset, dbURL string) (res jobResult, m measurement, err error) {
	worker, starter, err := buildStoreopt(ctx, filepath.Join(d.Dir, "bin"))
	if err != nil {
		return res, m, err
	}
	env := append(os.Environ(),
		app.EnvMemoryPoolSize+"="+strconv.FormatInt(cfg.memoryPool, 10),
		"STOREOPT_DATABASE_URL="+dbURL,
		"STOREOPT_STORE_URL="+d.storeURL(),
		"STOREOPT_TASK_QUEUE=storeopt-bench-"+randomSuffix(),
		"TEMPORAL_ADDRESS="+cfg.temporalAddress,
	)
	w := exec.CommandContext(ctx, worker)
	w.Env, w.Stdout, w.Stderr = env, os.Stderr, os.Stderr
	if err := w.Start(); err != nil {
		return res, m, fmt.Errorf("start worker: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
	}()
	dryRun, err := runDryRun(ctx, starter, env, cfg)
	if err != nil {
		return res, m, err
	}
	start := time.Now()
	s := exec.CommandContext(ctx, starter, "store-optimizer",
		"--max-chunk-size", strconv.FormatInt(cfg.maxChunkSize, 10),
		"--topic-parallelism", strconv.Itoa(cfg.topicParallelism))
	s.Env, s.Stdout, s.Stderr = env, os.Stderr, os.Stderr
	runErr := s.Run()
	m.Seconds = time.Since(start).Seconds()
	m.PeakRSSBytes, m.CPUSeconds = stopWorker(w)
	stopped = true
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		return res, m, err
	}
	defer cat.Close()
	chunks, err := cat.Chunks(ctx, d.TopicID)
	if err != nil {
		return res, m, err
	}
	if runErr == nil {
		if dryRun.CommitSeconds, err = recordedSeconds(ctx, cat); err != nil {
			return res, m, err
		}
		m.DryRun = &dryRun
	}
	for _, c := range chunks {
		res.OutputFiles = append(res.OutputFiles, filepath.Join(d.StoreDir, c.ObjectKey))
	}
	if len(chunks) > 0 && !strings.HasPrefix(chunks[0].ObjectKey, d.Prefix+"/") {
		res.OutputPrefix = strings.SplitN(chunks[0].ObjectKey, "/", 2)[0]
	}
	if runErr != nil {
		return res, m, fmt.Errorf("starter store-optimizer: %w (is a Temporal server running at %s? scripts/dev-server.sh starts one)", runErr, cfg.temporalAddress)
	}
	if res.OutputPrefix == "" {
		return res, m, fmt.Errorf("the pass did not switch the topic to new chunks")
	}
	return res, m, nil
}

// stopWorker stops the worker process w (SIGTERM, then waits for it) and returns its peak
// resident set in bytes (read before it exits) and its CPU seconds (user + system).
func stopWorker(w *exec.Cmd) (peakRSSBytes int64, cpuSeconds float64) {
	peakRSSBytes = vmHWM(w.Process.Pid)
	_ = w.Process.Signal(syscall.SIGTERM)
	_ = w.Wait()
	if ru, ok := w.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		cpuSeconds = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	}
	return peakRSSBytes, cpuSeconds
}

// vmHWM returns the peak resident set size of process pid in bytes (0 when unknown).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return parseVmHWM(string(b))
}

// storeoptEnv is the environment of the worker and starter processes of a bench: this process's
// with the memory pool, the activity slots, the catalog, the store, the task queue and the
// Temporal server set.
func storeoptEnv(cfg config, activities int, dbURL, storeURL, taskQueue string) []string {
	return append(os.Environ(),
		app.EnvMemoryPoolSize+"="+strconv.FormatInt(cfg.memoryPool, 10),
		app.EnvMaxConcurrentActivities+"="+strconv.Itoa(activities),
		"STOREOPT_DATABASE_URL="+dbURL,
		"STOREOPT_STORE_URL="+storeURL,
		"STOREOPT_TASK_QUEUE="+taskQueue,
		"TEMPORAL_ADDRESS="+cfg.temporalAddress,
	)
}
