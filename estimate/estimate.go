// Package estimate predicts how long an optimization will take from what recent optimizations
// of the same policy cost (catalog.OptimizationCost), for dry runs. It is a pure function of
// numbers: the catalog reads the history, the dry run applies the model.
//
// The model is seconds = FixedSeconds + Scale × (ArrowBytes / BytesPerSecond + Rows /
// RowsPerSecond), per policy: a fixed cost per topic (Temporal round trips of lease,
// read-sort, write-chunks and commit, opening the catalog transaction) plus the work of reading,
// merging and writing its rows, which has a part per byte of Arrow (uncompressed) data (decoding,
// copying, encoding and compressing values) and a part per row (the merge's key comparisons and
// the per-row work of narrow columns). One term alone misses one of the bench's shapes by about
// 2×: per Arrow byte, the IMU-like topic (11 M narrow rows in 1.1 GB) costs twice what the
// image-like one (9 900 rows with 50 KB payloads in 500 MB) does.
//
// BytesPerSecond and RowsPerSecond are fixed (DefaultBytesPerSecond, DefaultRowsPerSecond: they
// weigh the two parts); the history sets Scale, how much slower (> 1) or faster this worker ran
// its recent optimizations than those rates, so one optimization of any shape calibrates the
// estimates of all shapes. Without history Scale is DefaultScale.
package estimate

import "fmt"

// Defaults. The rates are the CPU seconds of full rewrites of the bench topics (bench/, worker
// job, 2-core machine): 3.0 CPU s for the image-like topic (500 MB of Arrow data, 9 900 rows)
// and 12.2 CPU s for the IMU-like one (1.1 GB, 11 M rows), solved for a cost per byte and a cost
// per row. A worker takes about its CPU seconds on an idle 2-core machine (two output chunks
// are encoded at once) and 1.8–2.5 times them on the project's shared one (bench, three
// sessions); DefaultScale, the scale of a first estimate, sits between the two, so that it is
// within a factor of 2 of either. The history replaces it (Scale). See README, Dry run, for the
// measured ratios of estimate to real seconds.
const (
	DefaultBytesPerSecond = 170e6 // Arrow bytes per second
	DefaultRowsPerSecond  = 2e6
	DefaultScale          = 1.5
	DefaultFixedSeconds   = 0.5
	// MinSampleArrowBytes is the smallest optimization (Arrow bytes) whose throughput counts:
	// smaller ones measure mostly the fixed cost.
	MinSampleArrowBytes = 8 << 20
	// HistorySize is how many recent optimizations of a policy the model is made from.
	HistorySize = 20
)

// Sample is the cost of one optimization: the Arrow bytes and rows of its inputs and its
// seconds from the lease to the commit.
type Sample struct {
	ArrowBytes int64
	Rows       int64
	Seconds    float64
}

// Model is the estimate of one policy's optimizations.
type Model struct {
	FixedSeconds   float64
	BytesPerSecond float64 // Arrow bytes
	RowsPerSecond  float64
	// Scale multiplies the work's seconds at those rates: the recent optimizations' seconds
	// beyond the fixed cost over their work's seconds at the rates; DefaultScale without
	// history.
	Scale float64
	// Samples is how many optimizations Scale comes from; 0 = the defaults.
	Samples int
}

// Default is the model without history.
func Default() Model {
	return Model{FixedSeconds: DefaultFixedSeconds, BytesPerSecond: DefaultBytesPerSecond,
		RowsPerSecond: DefaultRowsPerSecond, Scale: DefaultScale}
}

// Fit returns the model of the samples (newest first, at most HistorySize are used): Scale is
// the seconds beyond the fixed cost (each at least a tenth of its seconds) of the samples of at
// least MinSampleArrowBytes, over the seconds of their work at the default rates. Without such
// a sample it returns Default().
func Fit(samples []Sample) Model {
	m := Default()
	var observed, work float64 // seconds beyond the fixed cost; seconds at the rates (scale 1)
	n := 0
	for i, s := range samples {
		if i == HistorySize {
			break
		}
		if s.ArrowBytes < MinSampleArrowBytes || s.Seconds <= 0 {
			continue
		}
		observed += max(s.Seconds-m.FixedSeconds, s.Seconds/10)
		work += m.work(s.ArrowBytes, s.Rows)
		n++
	}
	if n > 0 && work > 0 {
		m.Scale, m.Samples = observed/work, n
	}
	return m
}

// work is the seconds of reading, merging and writing arrowBytes and rows at the model's rates.
func (m Model) work(arrowBytes, rows int64) float64 {
	return float64(max(arrowBytes, 0))/m.BytesPerSecond + float64(max(rows, 0))/m.RowsPerSecond
}

// Seconds estimates the seconds, from the lease to the commit, of an optimization that reads
// arrowBytes of Arrow data in rows rows.
func (m Model) Seconds(arrowBytes, rows int64) float64 {
	return m.FixedSeconds + m.Scale*m.work(arrowBytes, rows)
}

// Source says where the model comes from: "3 recent optimizations (×2.41)" or "default
// (×1.50)".
func (m Model) Source() string {
	switch m.Samples {
	case 0:
		return fmt.Sprintf("default (×%.2f)", m.Scale)
	case 1:
		return fmt.Sprintf("1 recent optimization (×%.2f)", m.Scale)
	}
	return fmt.Sprintf("%d recent optimizations (×%.2f)", m.Samples, m.Scale)
}
