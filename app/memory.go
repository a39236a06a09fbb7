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
// set, and the collector runs less often (GOGC 400, unless GOGC is set) since the limit, not the
// heap growth ratio, now bounds the heap: fewer collections on the many short-lived buffers of a
// merge. It returns the limit applied (0 when none).
func ApplyMemoryLimit(poolBytes int64) int64 {
	if poolBytes <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := poolBytes + goHeapHeadroom
	debug.SetMemoryLimit(limit)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	return limit
}
