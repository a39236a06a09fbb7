package activities

import "testing"

// The planner's samples are bounded by the pool: a small pool plans from fewer samples (down to
// minPlanSamples), no pool or a large one from maxPlanSamples.
func TestPlanSamplesFollowThePool(t *testing.T) {
	for _, c := range []struct {
		pool, want int64
	}{
		{0, maxPlanSamples},
		{1 << 20, minPlanSamples},
		{64 << 20, 21845}, // 1 MiB of 48-byte samples
		{256 << 20, 87381},
		{1 << 30, maxPlanSamples},
	} {
		if got := planSamples(c.pool); got != c.want {
			t.Errorf("pool %d: %d samples, want %d", c.pool, got, c.want)
		}
	}
}
