package plan

import (
	"fmt"

	"github.com/storeopt/storeopt/policy"
)

// The selection's types live with the policies that make selections (policy/full.go,
// policy/tiered.go, policy/leveled.go): the planner consults the policy value and plans what it
// selected.
type (
	// ChunkFacts is what the selection of a compaction knows of one chunk: catalog facts only.
	ChunkFacts = policy.ChunkFacts
	// Kind says how a plan's outputs are made from its inputs.
	Kind = policy.Kind
	// Selection is which chunks a compaction reads and where its outputs go.
	Selection = policy.Selection
	// SelectOptions configure Select.
	SelectOptions = policy.SelectOptions
)

// The kinds of plan.
const (
	KindMerge       = policy.KindMerge
	KindConcatenate = policy.KindConcatenate
)

// Select chooses the chunks a compaction of policy p (resolved: not Auto) reads, from the
// topic's chunks in catalog order (L1 run first, then L0 in ingestion order): the policy's own
// selection (IOx compactor2's classifier step). Errors: an unknown or unresolved policy.
func Select(p policy.Policy, chunks []ChunkFacts, opts SelectOptions) (Selection, error) {
	if opts.MaxChunkSizeBytes <= 0 {
		opts.MaxChunkSizeBytes = DefaultMaxChunkSizeBytes
	}
	c, ok := policy.Of(p)
	if !ok || !c.Resolved() {
		return Selection{}, fmt.Errorf("plan: no selection for policy %q (auto must be resolved first)", p)
	}
	s, err := c.Select(chunks, opts)
	if err != nil {
		return Selection{}, fmt.Errorf("plan: %w", err)
	}
	s.Policy = c.Name()
	return s, nil
}
