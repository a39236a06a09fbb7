package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFitWithoutHistoryTakesTheDefaults(t *testing.T) {
	m := Fit(nil)
	require.Equal(t, Model{FixedSeconds: DefaultFixedSeconds, BytesPerSecond: DefaultBytesPerSecond}, m)
	require.Equal(t, "default", m.Source())
	require.InDelta(t, 0.5+1e9/200e6, m.Seconds(1e9), 1e-9)
	// Small optimizations measure the fixed cost, not the throughput.
	require.Equal(t, m, Fit([]Sample{{ArrowBytes: 1 << 20, Seconds: 3}}))
}

func TestFitTakesTheThroughputOfRecentOptimizations(t *testing.T) {
	// 1 GB in 5.5 s and 0.5 GB in 3 s: 1.5 GB in 5 + 2.5 s beyond the fixed cost.
	m := Fit([]Sample{{ArrowBytes: 1e9, Seconds: 5.5}, {ArrowBytes: 5e8, Seconds: 3}, {ArrowBytes: 1000, Seconds: 9}})
	require.Equal(t, 2, m.Samples)
	require.InDelta(t, 1.5e9/7.5, m.BytesPerSecond, 1e-6)
	require.InDelta(t, 0.5+2e9/(1.5e9/7.5), m.Seconds(2e9), 1e-9)
	require.Equal(t, "2 recent optimizations", m.Source())

	// A sample faster than the fixed cost counts a tenth of its seconds, not zero or less.
	m = Fit([]Sample{{ArrowBytes: 1e8, Seconds: 0.2}})
	require.InDelta(t, 1e8/0.02, m.BytesPerSecond, 1e-6)

	// Only the newest HistorySize samples count.
	var samples []Sample
	for range HistorySize {
		samples = append(samples, Sample{ArrowBytes: 1e8, Seconds: 1.5})
	}
	samples = append(samples, Sample{ArrowBytes: 1e8, Seconds: 100})
	require.InDelta(t, 1e8, Fit(samples).BytesPerSecond, 1e-6)
}
