// Package policy names storeopt's compaction policies and scopes (docs/design.md#vocabulary) and
// parses them from flags and workflow inputs. It is pure: workflows, activities, the catalog and
// the starter share it.
//
// The policies follow OceanBase's minor compaction and Qbeast's rollup compaction:
//
//   - Full (mosaicod's store optimization, the default): a finalized topic is rewritten whole into
//     one sorted run of L1 chunks.
//   - Tiered (OceanBase tiered L0 → L0 compaction, Qbeast rollup): runs of neighbouring small L0
//     chunks are joined into one L0 chunk each; every input becomes its own block(s), rows sorted
//     within each block, its range recorded. No global sort, no L1 input: safe and cheap on a live
//     topic.
//   - Leveled (OceanBase leveled L0 → L1 compaction): every L0 chunk is merged with the L1 chunks
//     whose time range it overlaps (plus a small last L1 chunk) into new L1 chunks; the other L1
//     chunks are kept by reference.
//   - Auto: tiered while a topic is live and its L0 bytes are below the target chunk size;
//     leveled once they reach it or the topic is finalized.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Policy is a compaction policy name.
type Policy string

// The policies.
const (
	Full    Policy = "full"
	Tiered  Policy = "tiered"
	Leveled Policy = "leveled"
	Auto    Policy = "auto"
)

// All lists every policy, in the order the help texts give them.
var All = []Policy{Full, Tiered, Leveled, Auto}

// DefaultMinChunks is the default trigger: a run queues a topic for tiered, leveled or auto
// compaction only when it has at least this many L0 chunks (OceanBase's minor_compact_trigger).
const DefaultMinChunks = 2

// Parse returns the policy named s; "" is Full. Errors name the valid policies.
func Parse(s string) (Policy, error) {
	if s == "" {
		return Full, nil
	}
	p := Policy(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(All, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q: use full, tiered, leveled or auto", s)
}

// Level is a chunk's level: L0 as ingestion (or a tiered compaction) wrote it, L1 a chunk of the
// topic's sorted run (written by a leveled or full compaction).
type Level int

// The levels.
const (
	L0 Level = 0
	L1 Level = 1
)

// String renders "L0" or "L1".
func (l Level) String() string { return fmt.Sprintf("L%d", int(l)) }

// OutputLevel returns the level of the chunks a compaction of policy p writes (p resolved: not
// Auto).
func (p Policy) OutputLevel() Level {
	if p == Tiered {
		return L0
	}
	return L1
}

// Scope is what a run may touch (OceanBase's tenant scopes of a manual minor freeze): every topic,
// or the union of some sequences and some topics.
type Scope struct {
	Sequences []string // sequence locators
	Topics    []string // topic locators "<sequence>/<path>"
}

// All reports whether the scope is every topic.
func (s Scope) All() bool { return len(s.Sequences) == 0 && len(s.Topics) == 0 }

// ErrScope is wrapped by ParseScope's errors.
var ErrScope = errors.New("invalid scope")

// ParseScope parses scope terms: "all", "sequence:NAME" or "topic:LOCATOR" (repeatable; no
// terms, or any "all", is every topic). The terms of a run's input are parsed the same way by
// the starter (for a clear usage error) and by the workflow.
func ParseScope(terms []string) (Scope, error) {
	var s Scope
	all := false
	for _, t := range terms {
		kind, value, ok := strings.Cut(t, ":")
		switch {
		case t == "all":
			all = true
		case ok && kind == "sequence" && value != "" && !strings.ContainsAny(value, "/:"):
			if !slices.Contains(s.Sequences, value) {
				s.Sequences = append(s.Sequences, value)
			}
		case ok && kind == "topic" && strings.Contains(value, "/"):
			if !slices.Contains(s.Topics, value) {
				s.Topics = append(s.Topics, value)
			}
		default:
			return Scope{}, fmt.Errorf("%w %q: use all, sequence:NAME or topic:SEQUENCE/PATH", ErrScope, t)
		}
	}
	if all {
		return Scope{}, nil
	}
	return s, nil
}

// String renders the scope as its terms joined by ",", or "all".
func (s Scope) String() string {
	if s.All() {
		return "all"
	}
	terms := make([]string, 0, len(s.Sequences)+len(s.Topics))
	for _, q := range s.Sequences {
		terms = append(terms, "sequence:"+q)
	}
	for _, t := range s.Topics {
		terms = append(terms, "topic:"+t)
	}
	return strings.Join(terms, ",")
}

// DefaultMaxChunkSizeBytes is the default soft size limit of one output chunk (mosaicod's).
const DefaultMaxChunkSizeBytes = 256_000_000

// SmallChunkBytes is the size below which an L0 chunk counts as small for a tiered compaction of
// outputs of up to maxChunkSizeBytes: half of it. Two neighbouring small chunks always fit into
// one output, so a topic queued for tiered compaction always has something to join.
func SmallChunkBytes(maxChunkSizeBytes int64) int64 {
	if maxChunkSizeBytes <= 0 {
		maxChunkSizeBytes = DefaultMaxChunkSizeBytes
	}
	return maxChunkSizeBytes / 2
}
