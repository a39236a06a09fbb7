// Package estimate predicts how long an optimization will take from what recent optimizations
// of the same policy cost (catalog.OptimizationCost), for dry runs. It is a pure function of
// numbers: the catalog reads the history, the dry run applies the model.
//
// The model is seconds = FixedSeconds + ArrowBytes / BytesPerSecond, per policy: a fixed cost
// per topic (Temporal round trips of lease, read-sort, write-chunks and commit, opening the
// catalog transaction) plus the time to read, merge and write its rows, proportional to their
// Arrow (uncompressed) bytes, which predict the work of compressed inputs of any shape better
// than their object bytes (measured on the bench topics: an IMU-like topic compresses about 6:1,
// an image-like one hardly at all, yet both take about 4 s per GB of Arrow data).
package estimate

import "fmt"

// Defaults, used when no recent optimization of the policy moved at least MinSampleArrowBytes.
// They were measured with bench/ on the project's 2-core machine (see README, Dry run), through
// the real worker on the dev server: about 4.2 s per GB of Arrow data for a full rewrite of the
// 1.1 GB IMU-like topic and 2.5 s per GB for the 500 MB image-like one, and about half a second
// per small topic.
const (
	DefaultBytesPerSecond = 200e6
	DefaultFixedSeconds   = 0.5
	// MinSampleArrowBytes is the smallest optimization (Arrow bytes) whose throughput counts:
	// smaller ones measure mostly the fixed cost.
	MinSampleArrowBytes = 8 << 20
	// HistorySize is how many recent optimizations of a policy the model is made from.
	HistorySize = 20
)

// Sample is the cost of one optimization: the Arrow bytes of its inputs and its seconds.
type Sample struct {
	ArrowBytes int64
	Seconds    float64
}

// Model is the estimate of one policy's optimizations.
type Model struct {
	FixedSeconds   float64
	BytesPerSecond float64 // Arrow bytes
	// Samples is how many optimizations the throughput comes from; 0 = the defaults.
	Samples int
}

// Fit returns the model of the samples (newest first, at most HistorySize are used): the
// throughput is the Arrow bytes of the samples of at least MinSampleArrowBytes divided by their
// seconds beyond the fixed cost (each at least a tenth of its seconds), and the fixed cost the
// default. Without such a sample it returns the defaults.
func Fit(samples []Sample) Model {
	m := Model{FixedSeconds: DefaultFixedSeconds, BytesPerSecond: DefaultBytesPerSecond}
	var bytes, seconds float64
	n := 0
	for i, s := range samples {
		if i == HistorySize {
			break
		}
		if s.ArrowBytes < MinSampleArrowBytes || s.Seconds <= 0 {
			continue
		}
		bytes += float64(s.ArrowBytes)
		seconds += max(s.Seconds-m.FixedSeconds, s.Seconds/10)
		n++
	}
	if n > 0 {
		m.BytesPerSecond, m.Samples = bytes/seconds, n
	}
	return m
}

// Seconds estimates the seconds of an optimization that reads arrowBytes of Arrow data.
func (m Model) Seconds(arrowBytes int64) float64 {
	return m.FixedSeconds + float64(max(arrowBytes, 0))/m.BytesPerSecond
}

// Source says where the model comes from: "3 recent optimizations" or "default".
func (m Model) Source() string {
	switch m.Samples {
	case 0:
		return "default"
	case 1:
		return "1 recent optimization"
	}
	return fmt.Sprintf("%d recent optimizations", m.Samples)
}
