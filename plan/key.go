// Package plan computes the plan of an optimization: which output chunks to write, each described
// by a half-open range of the topic's global row order, which inputs each one reads and how many
// bytes it is estimated to hold. It is a pure function of catalog and footer facts: no I/O.
package plan

import (
	"cmp"
	"fmt"
)

// Key is a position in a topic's global row order (docs/design.md#deterministic-output):
// timestamp_ns ascending, null timestamps after every non-null one, ties broken by the input's
// position in catalog order (ingestion order) and then by the row's index inside its input chunk.
// Every row of a topic has a distinct Key.
type Key struct {
	Null  bool  `json:"n,omitempty"` // timestamp_ns is null
	Ts    int64 `json:"t"`           // timestamp_ns, nanoseconds since the Unix epoch (0 when Null)
	Input int   `json:"i"`           // position of the input chunk in catalog order
	Row   int64 `json:"r"`           // row index inside the input chunk, as stored
}

// Compare returns -1, 0 or +1 as k sorts before, equal to or after o.
func (k Key) Compare(o Key) int {
	if k.Null != o.Null {
		if k.Null {
			return 1
		}
		return -1
	}
	if !k.Null {
		if c := cmp.Compare(k.Ts, o.Ts); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(k.Input, o.Input); c != 0 {
		return c
	}
	return cmp.Compare(k.Row, o.Row)
}

// String renders the key as "ts@input:row" or "null@input:row".
func (k Key) String() string {
	if k.Null {
		return fmt.Sprintf("null@%d:%d", k.Input, k.Row)
	}
	return fmt.Sprintf("%d@%d:%d", k.Ts, k.Input, k.Row)
}

// InRange reports whether k lies in [lo, hi); a nil bound is unbounded.
func InRange(k Key, lo, hi *Key) bool {
	return (lo == nil || k.Compare(*lo) >= 0) && (hi == nil || k.Compare(*hi) < 0)
}
