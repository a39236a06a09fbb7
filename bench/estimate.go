package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/estimate"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/workflows"
)

// How good the dry run's estimates are (the aim: within a factor of 2 of the real run). The
// worker job runs `starter store-optimizer --dry-run --json` on the run's fresh catalog before
// the real pass: a catalog without history, so the estimate is the package estimate's default.
// After the pass it reads the optimization's recorded cost (seconds from the lease to the
// commit). The parent then also estimates each shape from the recorded costs of the other
// shapes' runs (estimate.Fit, as a dry run after those optimizations would): the estimate
// once a worker has history, on a topic of another shape.

// dryRunFacts are what a dry run estimated, and what the real run then cost.
type dryRunFacts struct {
	EstimatedSeconds float64 `json:"estimated_seconds"`
	Estimate         string  `json:"estimate"` // where it came from ("default", "2 recent optimizations")
	ArrowBytes       int64   `json:"arrow_bytes"`
	Rows             int64   `json:"rows"`
	// CommitSeconds is the optimization's seconds from the lease to the commit, as the catalog
	// recorded them (what later estimates are fitted to).
	CommitSeconds float64 `json:"commit_seconds"`
}

// runDryRun runs the starter's dry run with env and returns its estimate of the whole run.
func runDryRun(ctx context.Context, starter string, env []string, cfg config) (dryRunFacts, error) {
	var f dryRunFacts
	cmd := exec.CommandContext(ctx, starter, "store-optimizer", "--dry-run", "--json",
		"--max-chunk-size", strconv.FormatInt(cfg.maxChunkSize, 10))
	var out bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return f, fmt.Errorf("starter store-optimizer --dry-run: %w", err)
	}
	var res workflows.StoreOptimizerResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.DryRun == nil || len(res.DryRun.Topics) == 0 {
		return f, fmt.Errorf("starter store-optimizer --dry-run --json: no topic planned (%v):\n%s", err, out.String())
	}
	f.EstimatedSeconds, f.ArrowBytes, f.Rows = res.DryRun.Seconds, res.DryRun.InputArrowBytes, res.DryRun.Rows
	f.Estimate = res.DryRun.Topics[0].Estimate
	return f, nil
}

// recordedSeconds returns the seconds the catalog recorded for the last full optimization.
func recordedSeconds(ctx context.Context, cat *catalog.Catalog) (float64, error) {
	costs, err := cat.RecentCosts(ctx, policy.Full, 1)
	if err != nil || len(costs) == 0 {
		return 0, fmt.Errorf("the recorded cost of the optimization: %v (%d found)", err, len(costs))
	}
	return costs[0].Seconds, nil
}

// printEstimates compares, per shape, the dry run's estimates with the worker job's real
// seconds (the starter's wall time): the default estimate of a catalog without history, and
// the estimate fitted to the recorded costs of the other shapes' runs.
func printEstimates(w io.Writer, reports []jobReport) {
	var worker []jobReport
	for _, r := range reports {
		if r.Job == jobWorker && len(r.Runs) > 0 && r.Runs[0].DryRun != nil {
			worker = append(worker, r)
		}
	}
	if len(worker) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, r := range worker {
		est := median(r.Runs, func(m measurement) float64 { return m.DryRun.EstimatedSeconds })
		commit := median(r.Runs, func(m measurement) float64 { return m.DryRun.CommitSeconds })
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range r.Runs {
			lo, hi = min(lo, m.DryRun.EstimatedSeconds/m.Seconds), max(hi, m.DryRun.EstimatedSeconds/m.Seconds)
		}
		fmt.Fprintf(w, "dry run %s: estimated %.2f s (%s) / real %.2f s = %.2f (runs %.2f–%.2f; lease to commit %.2f s = %.2f)",
			r.Shape, est, r.Runs[0].DryRun.Estimate, r.Seconds, est/r.Seconds, lo, hi, commit, est/commit)
		var others []estimate.Sample
		for _, o := range worker {
			if o.Shape == r.Shape {
				continue
			}
			for _, m := range o.Runs {
				others = append(others, estimate.Sample{ArrowBytes: m.DryRun.ArrowBytes, Rows: m.DryRun.Rows, Seconds: m.DryRun.CommitSeconds})
			}
		}
		if len(others) > 0 {
			model := estimate.Fit(others)
			fitted := model.Seconds(r.Runs[0].DryRun.ArrowBytes, r.Runs[0].DryRun.Rows)
			fmt.Fprintf(w, "; from the other shapes' history (%s) %.2f s = %.2f", model.Source(), fitted, fitted/r.Seconds)
		}
		fmt.Fprintln(w)
	}
}
