package policy

import (
	"fmt"
	"strings"
)

// Policy is a compaction policy's name, as flags, workflow inputs and results, queue rows, plans
// and metric labels carry it. What a policy does is its Compaction (Of).
type Policy string

// The policies' names.
const (
	Full    Policy = "full"
	Tiered  Policy = "tiered"
	Leveled Policy = "leveled"
	Auto    Policy = "auto"
)

// Compaction is one policy: everything storeopt decides by policy is a method here, so that a
// policy is one small component (IOx compactor2's style) and its callers ask it instead of
// switching on its name. Each policy is one file of this package (full.go, tiered.go, leveled.go,
// auto.go), registered in All.
type Compaction interface {
	// Name is the policy's name: its label in metrics, queue rows and workflow results.
	Name() Policy
	// Summary says in a few words what the policy does, for help texts.
	Summary() string
	// Resolved is false for a policy that is only a rule for choosing another one per topic
	// (Auto): it has no selection and no commit of its own.
	Resolved() bool
	// Select chooses the chunks a compaction reads from the topic's chunks in catalog order (L1
	// run first, then L0 in ingestion order). Errors: the policy is not resolved.
	Select(chunks []ChunkFacts, opts SelectOptions) (Selection, error)
	// ReplaceAll is true when a compaction reads and replaces the topic's whole chunk set
	// (the commit then requires the chunk set it planned from and switches the data prefix).
	ReplaceAll() bool
	// OutputLevel is the level of the chunks a compaction writes.
	OutputLevel() Level
	// FinalizedOnly is true when only finalized topics may be leased for a compaction.
	FinalizedOnly() bool
	// AlreadyDone says whether a topic that a run asked to skip if already optimized is done:
	// from whether the policy's trigger still holds for it (needs), whether it is still queued
	// and whether it was ever optimized.
	AlreadyDone(needs, queued, optimized bool) bool
	// Trigger returns the SQL predicate that a topic needs a compaction of the policy, built
	// from the catalog's facts of the topic (docs/design.md#vocabulary: trigger).
	Trigger(f TriggerSQL) string
	// Applies returns the SQL expression naming the resolved policy a compaction applies to the
	// topic.
	Applies(f TriggerSQL) string
}

// TriggerSQL are the catalog's SQL facts of one topic (aliased t, with the trigger's parameters
// in the row aliased p) that trigger predicates are built from. The policy chooses the
// predicate; the catalog owns the schema.
type TriggerSQL struct {
	L0Count     string // number of L0 chunks
	L0Bytes     string // bytes of L0 chunks
	AnyL0       string // the topic has an L0 chunk
	SmallPairL0 string // two neighbouring L0 chunks are both small and neither a tiered output
	Finalized   string // the topic is finalized
	Unoptimized string // the topic was never optimized
	MinChunks   string // the trigger's L0 chunk count
	MaxSize     string // the trigger's target output chunk size, bytes
}

// All lists every policy, in the order the help texts give them.
var All = []Compaction{full{}, tiered{}, leveled{}, auto{}}

// Of returns the policy named p (exactly: Parse reads what users type).
func Of(p Policy) (Compaction, bool) {
	for _, c := range All {
		if c.Name() == p {
			return c, true
		}
	}
	return nil, false
}

// Parse returns the policy named s; "" is Full. Errors name the valid policies.
func Parse(s string) (Policy, error) {
	if s == "" {
		return Full, nil
	}
	if c, ok := Of(Policy(strings.ToLower(strings.TrimSpace(s)))); ok {
		return c.Name(), nil
	}
	names := make([]string, len(All))
	for i, c := range All {
		names[i] = string(c.Name())
	}
	last := len(names) - 1
	return "", fmt.Errorf("unknown policy %q: use %s or %s", s, strings.Join(names[:last], ", "), names[last])
}

// OutputLevel returns the level of the chunks a compaction of policy p writes (L1 for a name
// that is no policy).
func (p Policy) OutputLevel() Level {
	if c, ok := Of(p); ok {
		return c.OutputLevel()
	}
	return L1
}

// ReplaceAll reports whether a compaction of policy p replaces the topic's whole chunk set
// (false for a name that is no policy).
func (p Policy) ReplaceAll() bool {
	c, ok := Of(p)
	return ok && c.ReplaceAll()
}

// Resolved reports whether p names a policy with a selection and a commit of its own.
func (p Policy) Resolved() bool {
	c, ok := Of(p)
	return ok && c.Resolved()
}

// Label is p's label in metrics: its name, "" being full; a name that is no policy is kept.
func (p Policy) Label() string {
	if p == "" {
		return string(Full)
	}
	if c, ok := Of(p); ok {
		return string(c.Name())
	}
	return string(p)
}

// Help describes every policy in All for a flag's help text: "full (…), tiered (…) … or auto (…)".
func Help() string {
	terms := make([]string, len(All))
	for i, c := range All {
		terms[i] = string(c.Name()) + " (" + c.Summary() + ")"
	}
	last := len(terms) - 1
	return strings.Join(terms[:last], ", ") + " or " + terms[last]
}

// literal is the SQL literal of a policy's name.
func literal(p Policy) string { return `'` + string(p) + `'` }
