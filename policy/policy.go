// Package policy names storeopt's compaction policies and scopes (docs/design.md#vocabulary) and
// parses them from flags and workflow inputs. It is pure: workflows, activities, the catalog and
// the starter share it.
//
// The policies follow OceanBase's minor compaction and Qbeast's rollup compaction. Each is one
// Compaction value in a file of its own, registered in All: Full (full.go, mosaicod's store
// optimization, the default), Tiered (tiered.go, L0 → L0 rollup of neighbouring small chunks),
// Leveled (leveled.go, L0 → L1 merge with the overlapping L1 chunks) and Auto (auto.go, tiered
// while a topic is live and small, leveled after). A policy knows its selection, its commit
// (replace-all, output level), its trigger and its label; callers ask it, never its name.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DefaultMinChunks is the default trigger: a run queues a topic for tiered, leveled or auto
// compaction only when it has at least this many L0 chunks (OceanBase's minor_compact_trigger).
const DefaultMinChunks = 2

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
