//go:build storeopt_faults

package faults

import (
	"fmt"
	"os"
	"slices"
)

// Triggered reports whether STOREOPT_FAULTS sets point to "on" with hits left, and uses one.
func Triggered(point string) bool {
	mu.Lock()
	defer mu.Unlock()
	load()
	return use(point)
}

// use takes one hit of point if it is "on" with hits left; the caller holds mu.
func use(point string) bool {
	r := rules[point]
	if r == nil || r.left == 0 || r.action != "on" {
		return false
	}
	if r.left > 0 {
		r.left--
	}
	return true
}

// TriggeredOn is Triggered for a hit that acts on one object (a chunk ID, an object key): it does
// not act when a hit of one of the points others acted on the same object; when it acts it records
// the object (ActedOn) and writes "storeopt-faults: <point>=on <object>" to stderr.
func TriggeredOn(point, object string, others ...string) bool {
	mu.Lock()
	defer mu.Unlock()
	load()
	for _, o := range others {
		if slices.Contains(acted[o], object) {
			return false
		}
	}
	if !use(point) {
		return false
	}
	acted[point] = append(acted[point], object)
	fmt.Fprintf(os.Stderr, "%s%s=on %s\n", LogPrefix, point, object)
	return true
}

// ActedOn returns the objects that hits of point acted on (TriggeredOn) since STOREOPT_FAULTS
// last changed, in order.
func ActedOn(point string) []string {
	mu.Lock()
	defer mu.Unlock()
	load()
	return slices.Clone(acted[point])
}
