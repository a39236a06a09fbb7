package app

import (
	"os"
	"runtime/debug"
)

// goHeapHeadroom is the Go memory a worker needs beyond its memory pool: what the process holds
// outside the work the pool accounts for (the runtime and its metadata, what package
// initialization allocated, the catalog's connections, the Temporal client; the storeopt bench
// job holds 8-9 MiB of Go memory before it starts work, STOREOPT_BENCH_MEMSTATS) and a margin for
// it to grow. Garbage has no headroom of its own: the pool's reservations bound what work holds,
// with room to spare (at a 64 MiB pool the bench's IMU rewrite reserves 50 MiB per output and its
// live heap, the process's own included, was 20-55 MiB), and the collector makes its room in what
// the work leaves unused.
const goHeapHeadroom = 16 << 20

// ApplyMemoryLimit bounds the Go runtime of a worker process whose activities share a pool of
// poolBytes (> 0): the soft memory limit is set to the pool plus headroom, unless GOMEMLIMIT is
// set. GOGC keeps Go's default (100), so the heap floats at about twice the live data, below the
// limit when work needs much less than its pool; the limit makes the collector work harder when
// twice the live data would exceed it, so that the process's anonymous memory stays within the
// pool and the headroom (with 48 MiB of headroom the bench's IMU rewrite at a 64 MiB pool peaked at
// 73-79 MiB of anonymous memory). A limit the live data exceeds (work holding more than its
// reservations) is exceeded rather than enforced, the collector then taking up to half the CPU.
// (GOGC 400 was tried: 6 % faster, but every worker then sits at its limit, about 120 MiB more
// resident memory than the live data needs.) It returns the limit applied (0 when none).
func ApplyMemoryLimit(poolBytes int64) int64 {
	if poolBytes <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := poolBytes + goHeapHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}
