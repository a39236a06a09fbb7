package app

import (
	"os"
	"runtime/debug"
)

// goHeapHeadroom is the Go heap a worker needs beyond its memory pool: Temporal client, catalog
// connections, plans, and garbage not yet collected.
const goHeapHeadroom = 48 << 20

// ApplyMemoryLimit bounds the Go runtime of a worker process whose activities share a pool of
// poolBytes (> 0): the soft memory limit is set to the pool plus headroom, unless GOMEMLIMIT is
// set. GOGC keeps Go's default (100), so the heap floats at about twice the live data, far below
// the limit when work needs less than its pool; the limit only makes the collector work harder
// when it does not. (GOGC 400 was tried: 6 % faster, but every worker then sits at its limit,
// about 120 MiB more resident memory than the live data needs.) It returns the limit applied
// (0 when none).
func ApplyMemoryLimit(poolBytes int64) int64 {
	if poolBytes <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := poolBytes + goHeapHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}
