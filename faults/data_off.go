//go:build !storeopt_faults

package faults

// Triggered is always false in builds without the storeopt_faults tag.
func Triggered(string) bool { return false }

// TriggeredOn is always false in builds without the storeopt_faults tag.
func TriggeredOn(string, string, ...string) bool { return false }

// ActedOn is always empty in builds without the storeopt_faults tag.
func ActedOn(string) []string { return nil }
