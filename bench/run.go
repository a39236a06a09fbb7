package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/storeopt/storeopt/app"
)

// measurement is one run of one job.
type measurement struct {
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// PeakAnonBytes and PeakFileBytes split the peak: the largest anonymous and file-backed
	// resident bytes sampled (jobResult; 0 for jobs not run by a bench child).
	PeakAnonBytes int64              `json:"peak_anon_bytes,omitempty"`
	PeakFileBytes int64              `json:"peak_file_bytes,omitempty"`
	Phases        map[string]float64 `json:"phases,omitempty"`
	Rows          int64              `json:"rows"`
	// DryRun is the dry run's estimate of the worker job's pass (nil for other jobs).
	DryRun *dryRunFacts `json:"dry_run,omitempty"`
	// Paths is how the storeopt job's output chunks were written (nil for other jobs).
	Paths *pathBytes `json:"paths,omitempty"`
	// output facts (not for read)
	Check *outputCheck `json:"-"`
}

// jobReport is the summary of all runs of one job on one dataset.
type jobReport struct {
	Type            string  `json:"type"` // "job"
	Dataset         string  `json:"dataset"`
	Shape           string  `json:"shape"`
	Job             string  `json:"job"`
	InputChunks     int     `json:"input_chunks"`
	InputBytes      int64   `json:"input_bytes"`
	InputArrowBytes int64   `json:"input_arrow_bytes"`
	OutputBytes     int64   `json:"output_bytes"`
	Rows            int64   `json:"rows"`
	RowsMatch       bool    `json:"rows_match"`
	Seconds         float64 `json:"seconds"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	// CPUSecondsPerArrowGB is CPUSeconds per 10^9 bytes of the input's Arrow data (the table's
	// cpu s/GB; null without Arrow bytes): the cost of the path Path names.
	CPUSecondsPerArrowGB *float64 `json:"cpu_seconds_per_arrow_gb"`
	// Paths splits a storeopt job's output by write path (the last run's; every run writes the
	// same plan), Path names the path its bytes took (pathRewrite, pathCopy or pathMixed); null
	// and absent for the other jobs (the worker job's results stay inside the worker).
	Paths             *pathBytes         `json:"paths"`
	Path              string             `json:"path,omitempty"`
	PeakRSSBytes      int64              `json:"peak_rss_bytes"`
	PeakAnonBytes     int64              `json:"peak_anon_bytes"`
	PeakFileBytes     int64              `json:"peak_file_bytes"`
	OutputChunks      int                `json:"output_chunks"`
	Sorted            *bool              `json:"sorted"` // null for read
	SortProblem       string             `json:"sort_problem,omitempty"`
	MetadataPreserved *bool              `json:"metadata_preserved"` // null for read
	MetadataProblem   string             `json:"metadata_problem,omitempty"`
	Phases            map[string]float64 `json:"phases,omitempty"` // medians, seconds
	Runs              []measurement      `json:"runs"`
}

// ratioReport compares storeopt with DuckDB (and with the read floor) on one dataset.
type ratioReport struct {
	Type                      string   `json:"type"` // "ratios"
	Dataset                   string   `json:"dataset"`
	Shape                     string   `json:"shape"`
	SecondsStoreoptOverDuckDB *float64 `json:"seconds_storeopt_over_duckdb"`
	PeakRSSStoreoptOverDuckDB *float64 `json:"peak_rss_storeopt_over_duckdb"`
	SecondsStoreoptOverRead   *float64 `json:"seconds_storeopt_over_read"`
	CPUStoreoptOverRead       *float64 `json:"cpu_storeopt_over_read"`
	CPUStoreoptOverDuckDB     *float64 `json:"cpu_storeopt_over_duckdb"`
}

// run is the parent: prepare each dataset, run each job -runs times in child processes, check
// and report.
func run(ctx context.Context, cfg config) error {
	srv := &server{adminURL: cfg.pgURL}
	if !cfg.keepDatabases {
		defer srv.dropAll(context.WithoutCancel(ctx))
	}
	var reports []jobReport
	var ratios []ratioReport
	for _, shape := range cfg.shapes {
		d, err := prepareDataset(ctx, cfg, srv, shape)
		if err != nil {
			return err
		}
		var dsReports []jobReport
		for _, job := range cfg.jobs {
			r, err := runJob(ctx, cfg, srv, d, job)
			if err != nil {
				return fmt.Errorf("dataset %s, job %s: %w", d.Name, job, err)
			}
			dsReports = append(dsReports, r)
		}
		if !cfg.keepDatabases {
			if err := srv.drop(ctx, d.Template); err != nil {
				return err
			}
		}
		reports = append(reports, dsReports...)
		ratios = append(ratios, ratiosOf(d, dsReports))
	}
	if cfg.jsonOut {
		return printJSON(reports, ratios)
	}
	printTable(os.Stdout, reports, ratios, cfg.memoryPool)
	return nil
}

// runJob runs job cfg.runs times on d and summarizes.
func runJob(ctx context.Context, cfg config, srv *server, d *dataset, job string) (jobReport, error) {
	rep := jobReport{Type: "job", Dataset: d.Name, Shape: d.Params.Shape, Job: job, InputChunks: len(d.Keys),
		InputBytes: d.InputBytes, InputArrowBytes: d.ArrowBytes, RowsMatch: true}
	if job != jobRead {
		sorted, preserved := true, true
		rep.Sorted, rep.MetadataPreserved = &sorted, &preserved
	}
	for r := range cfg.runs {
		m, err := runOnce(ctx, cfg, srv, d, job, r)
		if err != nil {
			return rep, fmt.Errorf("run %d: %w", r+1, err)
		}
		rep.Runs = append(rep.Runs, m)
		rep.Rows = m.Rows
		rep.RowsMatch = rep.RowsMatch && m.Rows == d.Rows
		if c := m.Check; c != nil {
			rep.OutputBytes, rep.OutputChunks = c.Bytes, c.Files
			*rep.Sorted = *rep.Sorted && c.Sorted
			*rep.MetadataPreserved = *rep.MetadataPreserved && c.MetadataPreserved
			rep.SortProblem = firstNonEmpty(rep.SortProblem, c.SortProblem)
			rep.MetadataProblem = firstNonEmpty(rep.MetadataProblem, c.MetadataProblem)
		}
		var paths string
		if m.Paths != nil {
			rep.Paths, rep.Path = m.Paths, m.Paths.path()
			paths = "; " + m.Paths.String()
		}
		logf("%s %s run %d/%d: %.2f s wall, %.2f s cpu, %.0f MiB peak RSS%s, %d rows%s%s",
			d.Name, job, r+1, cfg.runs, m.Seconds, m.CPUSeconds, float64(m.PeakRSSBytes)/(1<<20), rssSplit(m.PeakAnonBytes, m.PeakFileBytes),
			m.Rows, checkSummary(m.Check), paths)
	}
	rep.Seconds = median(rep.Runs, func(m measurement) float64 { return m.Seconds })
	rep.CPUSeconds = median(rep.Runs, func(m measurement) float64 { return m.CPUSeconds })
	rep.CPUSecondsPerArrowGB = perArrowGB(rep.CPUSeconds, rep.InputArrowBytes)
	rep.PeakRSSBytes = int64(median(rep.Runs, func(m measurement) float64 { return float64(m.PeakRSSBytes) }))
	rep.PeakAnonBytes = int64(median(rep.Runs, func(m measurement) float64 { return float64(m.PeakAnonBytes) }))
	rep.PeakFileBytes = int64(median(rep.Runs, func(m measurement) float64 { return float64(m.PeakFileBytes) }))
	rep.Phases = map[string]float64{}
	for name := range rep.Runs[0].Phases {
		rep.Phases[name] = median(rep.Runs, func(m measurement) float64 { return m.Phases[name] })
	}
	return rep, nil
}

// perArrowGB returns v per 10^9 bytes of arrowBytes, nil without bytes.
func perArrowGB(v float64, arrowBytes int64) *float64 {
	if arrowBytes <= 0 {
		return nil
	}
	x := v / (float64(arrowBytes) / 1e9)
	return &x
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func checkSummary(c *outputCheck) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", %d output chunks, %.1f MB, sorted=%t, metadata preserved=%t", c.Files, float64(c.Bytes)/1e6, c.Sorted, c.MetadataPreserved)
}

// runOnce runs one repetition of job in a child process, measures it and checks its output. It
// removes the run's output and its catalog database afterwards.
func runOnce(ctx context.Context, cfg config, srv *server, d *dataset, job string, r int) (m measurement, err error) {
	runDir := filepath.Join(d.Dir, "runs", job+"-"+strconv.Itoa(r+1))
	if err := os.RemoveAll(runDir); err != nil {
		return m, err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return m, err
	}
	defer os.RemoveAll(runDir)
	spec := jobSpec{StoreDir: d.StoreDir}
	env := os.Environ()
	switch job {
	case jobRead:
		spec.Keys = d.Keys
	case jobDuckDB:
		spec.InputGlob = filepath.Join(d.StoreDir, d.Prefix, "data", "*.parquet")
		spec.OutputDir = runDir
	case jobStoreopt, jobWorker:
		db := d.Template + "_" + job + strconv.Itoa(r+1)
		if spec.DatabaseURL, err = srv.create(ctx, db, d.Template); err != nil {
			return m, err
		}
		if !cfg.keepDatabases {
			defer func() {
				if derr := srv.drop(context.WithoutCancel(ctx), db); err == nil {
					err = derr
				}
			}()
		}
		spec.TopicID, spec.RunToken = d.TopicID, "bench-"+randomSuffix()
		spec.MemoryPoolBytes, spec.MaxChunkSize, spec.TopicParallelism = cfg.memoryPool, cfg.maxChunkSize, cfg.topicParallelism
		spec.EncodeWorkers = cfg.encodeWorkers
		spec.CPUProfile = cfg.profilePath(cfg.cpuProfile, d.Params.Shape, r)
		spec.MemProfile = cfg.profilePath(cfg.memProfile, d.Params.Shape, r)
		env = append(env, app.EnvMemoryPoolSize+"="+strconv.FormatInt(cfg.memoryPool, 10))
	}
	var res jobResult
	if job == jobWorker {
		res, m, err = runWorkerJob(ctx, cfg, d, spec.DatabaseURL)
	} else {
		if spec.MemProfile == "" {
			env = withoutMemProfiling(env)
		}
		res, m, err = runChildProcess(ctx, runDir, job, spec, env)
	}
	if res.OutputPrefix != "" {
		// storeopt never modifies old objects: only the run's new prefix has to go.
		defer os.RemoveAll(filepath.Join(d.StoreDir, res.OutputPrefix))
	}
	if err != nil {
		return m, err
	}
	m.Phases, m.Paths = res.Phases, res.Paths
	if job == jobRead {
		m.Rows = res.Rows
		return m, nil
	}
	c, err := checkOutputs(ctx, res.OutputFiles, d.Footer)
	if err != nil {
		return m, err
	}
	m.Check, m.Rows = &c, c.Rows
	return m, nil
}

// jobBinaries builds, once per invocation, the binary that runs the read and storeopt jobs: this
// package built with the tag noduckdb, so that those jobs' peak RSS is not inflated by DuckDB's
// static library (a storeopt worker does not link DuckDB either).
var jobBinaries struct {
	once sync.Once
	path string
	err  error
}

// jobBinary returns the executable that runs job: this binary for duckdb (or when it was itself
// built without DuckDB), else the noduckdb build, made with the go command from this package's
// source directory into dir.
func jobBinary(ctx context.Context, job, dir string) (string, error) {
	self, err := os.Executable()
	if err != nil || job == jobDuckDB || !hasDuckDB {
		return self, err
	}
	jobBinaries.once.Do(func() {
		_, file, _, ok := runtime.Caller(0)
		src := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(src, "noduckdb.go")); !ok || err != nil {
			jobBinaries.err = fmt.Errorf("building the job binary needs the bench's source directory %s (run the bench from the repository)", src)
			return
		}
		out := filepath.Join(dir, "bench-jobs")
		logf("building the job binary without DuckDB: go build -tags noduckdb -o %s", out)
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "noduckdb", "-o", out, ".")
		cmd.Dir, cmd.Stdout, cmd.Stderr = src, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			jobBinaries.err = fmt.Errorf("go build -tags noduckdb in %s: %w", src, err)
			return
		}
		jobBinaries.path = out
	})
	return jobBinaries.path, jobBinaries.err
}

// withoutMemProfiling returns env with the Go runtime's heap profiling sampling turned off
// (GODEBUG memprofilerate=0, unless GODEBUG sets memprofilerate already). The worker does not
// sample (its binary cannot write a heap profile, so the linker turns sampling off); a job
// binary, which can (-memprofile), would otherwise keep a stack of every 512 KiB allocated, about
// 1.5 MiB of the storeopt job's resident memory, which no worker holds.
func withoutMemProfiling(env []string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if strings.Contains(v, "memprofilerate=") {
				return env
			}
			out := slices.Clone(env)
			out[i] = kv + ",memprofilerate=0"
			return out
		}
	}
	return append(slices.Clone(env), "GODEBUG=memprofilerate=0")
}

// runChildProcess runs job in a child process (jobBinary with -job) and measures it: wall time
// here, CPU time and peak RSS from the child's rusage.
func runChildProcess(ctx context.Context, runDir, job string, spec jobSpec, env []string) (jobResult, measurement, error) {
	var res jobResult
	var m measurement
	bin, err := jobBinary(ctx, job, filepath.Dir(filepath.Dir(runDir)))
	if err != nil {
		return res, m, err
	}
	specPath, resultPath := filepath.Join(runDir, "spec.json"), filepath.Join(runDir, "result.json")
	b, err := json.Marshal(spec)
	if err != nil {
		return res, m, err
	}
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		return res, m, err
	}
	cmd := exec.CommandContext(ctx, bin, "-job", job, "-job-spec", specPath, "-job-result", resultPath)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
	start := time.Now()
	runErr := cmd.Run()
	m.Seconds = time.Since(start).Seconds()
	if cmd.ProcessState == nil {
		return res, m, fmt.Errorf("start child process: %w", runErr)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		m.CPUSeconds = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		m.PeakRSSBytes = ru.Maxrss * 1024 // KiB on Linux; replaced by the child's own figure below
	}
	// The result file may exist even when the child failed late; read it for the output prefix.
	if b, err := os.ReadFile(resultPath); err == nil {
		if err := json.Unmarshal(b, &res); err != nil {
			return res, m, fmt.Errorf("job result %s: %w", resultPath, err)
		}
	}
	if res.PeakRSSBytes > 0 {
		m.PeakRSSBytes = res.PeakRSSBytes
	}
	m.PeakAnonBytes, m.PeakFileBytes = res.PeakAnonBytes, res.PeakFileBytes
	if runErr != nil {
		return res, m, fmt.Errorf("child process: %w", runErr)
	}
	return res, m, nil
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
