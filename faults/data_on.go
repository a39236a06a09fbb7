//go:build storeopt_faults

package faults

// Triggered reports whether STOREOPT_FAULTS sets point to "on" with hits left, and uses one.
func Triggered(point string) bool {
	mu.Lock()
	defer mu.Unlock()
	load()
	r := rules[point]
	if r == nil || r.left == 0 || r.action != "on" {
		return false
	}
	if r.left > 0 {
		r.left--
	}
	return true
}
