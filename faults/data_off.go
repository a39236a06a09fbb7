//go:build !storeopt_faults

package faults

// Triggered is always false in builds without the storeopt_faults tag.
func Triggered(string) bool { return false }
