//go:build !storeopt_faults

package faults

import "context"

// Enabled is false in builds without the storeopt_faults tag.
const Enabled = false

// Hit does nothing in builds without the storeopt_faults tag.
func Hit(context.Context, string) error { return nil }
