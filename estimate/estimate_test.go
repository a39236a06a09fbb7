package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFitWithoutHistoryTakesTheDefaults(t *testing.T) {
	m := Fit(nil)
	require.Equal(t, Default(), m)
	require.Equal(t, "default (×1.50)", m.Source())
	// 1.7 GB of Arrow data in 4 M rows: 10 s for the bytes, 2 s for the rows, at the default scale.
	require.InDelta(t, 0.5+1.5*(10+2), m.Seconds(1.7e9, 4e6), 1e-9)
	// Small optimizations measure the fixed cost, not the throughput.
	require.Equal(t, m, Fit([]Sample{{ArrowBytes: 1 << 20, Rows: 1000, Seconds: 3}}))
}

func TestFitScalesTheRatesToRecentOptimizations(t *testing.T) {
	// Work at the default rates: 1.7e9 B + 2e6 rows = 10 + 1 s; 0.34e9 B = 2 s. They took 22.5
	// and 4.5 s: 22 + 4 s beyond the fixed cost for 13 s of work, twice the default rates' time.
	m := Fit([]Sample{{ArrowBytes: 1.7e9, Rows: 2e6, Seconds: 22.5}, {ArrowBytes: 0.34e9, Rows: 0, Seconds: 4.5},
		{ArrowBytes: 1000, Rows: 1e6, Seconds: 9}})
	require.Equal(t, 2, m.Samples)
	require.InDelta(t, 2, m.Scale, 1e-9)
	require.InDelta(t, 0.5+2*(1+1), m.Seconds(1.7e8, 2e6), 1e-9)
	require.Equal(t, "2 recent optimizations (×2.00)", m.Source())

	// A sample faster than the fixed cost counts a tenth of its seconds, not zero or less.
	m = Fit([]Sample{{ArrowBytes: 1.7e8, Seconds: 0.2}})
	require.InDelta(t, 0.02, m.Scale, 1e-9)
	require.Equal(t, "1 recent optimization (×0.02)", m.Source())

	// Only the newest HistorySize samples count.
	var samples []Sample
	for range HistorySize {
		samples = append(samples, Sample{ArrowBytes: 1.7e8, Seconds: 1.5})
	}
	samples = append(samples, Sample{ArrowBytes: 1.7e8, Seconds: 100})
	require.InDelta(t, 1, Fit(samples).Scale, 1e-9)
}

// One optimization of one shape calibrates the other: the bytes and rows weigh as the bench
// topics' CPU seconds say, so a worker twice as slow as the defaults on an IMU-like topic is
// estimated twice as slow on an image-like one.
func TestFitCarriesAcrossShapes(t *testing.T) {
	imu, image := Sample{ArrowBytes: 1.1e9, Rows: 11e6}, Sample{ArrowBytes: 5e8, Rows: 9900}
	d := Default()
	imu.Seconds = d.FixedSeconds + 2*d.work(imu.ArrowBytes, imu.Rows)
	m := Fit([]Sample{imu})
	require.InDelta(t, 2, m.Scale, 1e-9)
	require.InDelta(t, d.FixedSeconds+2*d.work(image.ArrowBytes, image.Rows), m.Seconds(image.ArrowBytes, image.Rows), 1e-9)
}
