package merge

import (
	"strconv"

	"github.com/storeopt/storeopt/faults"
)

// injectBoundaryFaults moves the bounds of the rows [c.pos, c.end) that this output takes from c's
// batch (rows that hold the range's Lo and Hi bounds inside the batch) by one row when a test
// enables the faults MergeDuplicateRow, MergeSkipRow or MergeShiftRange (builds with the
// storeopt_faults tag only): an off-by-one at a range boundary, before any digest is taken, so
// that tests can prove verification catches a row taken by two outputs or by none. n is the
// batch's row count. Each fault acts on one input chunk; the duplicate and the skip never on the
// same one.
func (m *merger) injectBoundaryFaults(c *cursor, n int64) {
	if !faults.Enabled {
		return
	}
	chunk := strconv.FormatInt(c.taken.ChunkID, 10)
	loInside := m.r.Lo != nil && c.pos > 0 && c.pos < n     // rows before Lo in this batch
	hiInside := m.r.Hi != nil && c.end < n && c.end > c.pos // rows at or after Hi in this batch
	switch {
	case loInside && hiInside && faults.TriggeredOn(faults.MergeShiftRange, chunk):
		c.pos--
		c.end--
	case loInside && faults.TriggeredOn(faults.MergeDuplicateRow, chunk, faults.MergeSkipRow):
		c.pos--
	case hiInside && faults.TriggeredOn(faults.MergeSkipRow, chunk, faults.MergeDuplicateRow):
		c.end--
	}
}
