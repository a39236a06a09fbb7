package policy

// leveled is OceanBase's leveled L0 → L1 compaction: every L0 chunk is merged with the L1 chunks
// whose time range it overlaps (plus a small last L1 chunk) into new L1 chunks; the other L1
// chunks are kept by reference.
type leveled struct{}

func (leveled) Name() Policy        { return Leveled }
func (leveled) Summary() string     { return "L0 -> L1 merge with the overlapping part of the sorted run" }
func (leveled) Resolved() bool      { return true }
func (leveled) ReplaceAll() bool    { return false }
func (leveled) OutputLevel() Level  { return L1 }
func (leveled) FinalizedOnly() bool { return false }

func (leveled) AlreadyDone(needs, _, _ bool) bool { return !needs }

// Trigger: at least MinChunks L0 chunks.
func (leveled) Trigger(f TriggerSQL) string {
	return `(` + f.L0Count + ` >= ` + f.MinChunks + `)`
}

func (leveled) Applies(TriggerSQL) string { return literal(Leveled) }

func (leveled) Select(chunks []ChunkFacts, opts SelectOptions) (Selection, error) {
	return selectLeveled(chunks, opts), nil
}

// selectLeveled reads every L0 chunk and the L1 chunks whose time range overlaps the L0 chunks'
// (closed ranges, null timestamps after all others), extended to a contiguous part of the run,
// plus the run's last chunk when it is small and would otherwise be left as a sliver next to the
// outputs. The other L1 chunks are kept by reference. Nothing to do without L0 chunks.
func selectLeveled(chunks []ChunkFacts, opts SelectOptions) Selection {
	s := Selection{Kind: KindMerge, L1FirstKept: -1}
	var l1, l0 []int
	for i, c := range chunks {
		if c.Level == L1 {
			l1 = append(l1, i)
		} else {
			l0 = append(l0, i)
		}
	}
	if len(l0) == 0 {
		return s
	}
	var hullLo, hullHi tsBound
	have := false
	for _, i := range l0 {
		lo, hi, ok := span(chunks[i])
		if !ok {
			continue
		}
		if !have || lo.less(hullLo) {
			hullLo = lo
		}
		if !have || hullHi.less(hi) {
			hullHi = hi
		}
		have = true
	}
	// first and last selected L1 positions (in l1), and the insertion point before == count of
	// L1 chunks entirely before the hull.
	first, last, before := -1, -1, 0
	for j, i := range l1 {
		lo, hi, ok := span(chunks[i])
		switch {
		case !ok:
			continue
		case !have || hi.less(hullLo):
			before = j + 1
		case hullHi.less(lo):
		default:
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		first, last = before, before-1 // nothing overlaps: insert after the chunks before the hull
	}
	var l0Bytes int64
	for _, i := range l0 {
		l0Bytes += chunks[i].SizeBytes
	}
	mergeTail := func(tail int64) bool { return mergesLastChunk(tail, l0Bytes, opts) }
	if n := len(l1); n > 0 && last == n-2 && mergeTail(chunks[l1[n-1]].SizeBytes) {
		last = n - 1 // the run's small last chunk next to the outputs
	}
	if last == first-1 && first == len(l1) && first > 0 && mergeTail(chunks[l1[first-1]].SizeBytes) {
		first-- // outputs appended after a small last chunk: merge into it
	}
	for j := first; j <= last; j++ {
		s.Inputs = append(s.Inputs, l1[j])
	}
	s.Inputs = append(s.Inputs, l0...)
	if first < len(l1) {
		s.L1From = chunks[l1[first]].Ordinal
	} else if len(l1) > 0 {
		s.L1From = chunks[l1[len(l1)-1]].Ordinal + 1
	}
	if first > 0 {
		if mx := chunks[l1[first-1]].MaxTs; mx != nil {
			s.Before = mx
		}
	}
	if last+1 < len(l1) {
		s.L1FirstKept = chunks[l1[last+1]].Ordinal
		s.AfterRows = true
		for _, i := range l1[last+1:] {
			if chunks[i].MinTs != nil {
				s.AfterHasNonNull = true
				if s.After == nil {
					s.After = chunks[i].MinTs
				}
			}
		}
	}
	return s
}

// LiveTailFloor divides SmallChunkBytes into the size under which a live topic's last L1 chunk
// is always merged (256 KiB at the default chunk size): rewriting so little costs nothing, and
// it keeps slow topics (a GPS) from ending in slivers.
const LiveTailFloor = 512

// mergesLastChunk reports whether a leveled compaction merging l0Bytes of L0 chunks also rewrites
// the run's last chunk of tail bytes, next to its outputs. Never when the chunk is not small; for
// a finalized topic always (the run does not end in slivers); for a live topic only while the
// chunk is no larger than the L0 bytes joining it or under SmallChunkBytes/LiveTailFloor.
// Rewriting a growing last chunk with every batch of new chunks rewrote each ingested byte once
// per compaction (quadratic in the topic); with the rule a live topic's bytes are written about
// 1.5 times by its leveled compactions (the last chunk doubles, then a new one starts), and the
// finalizing compaction merges the last chunk.
func mergesLastChunk(tail, l0Bytes int64, opts SelectOptions) bool {
	small := SmallChunkBytes(opts.MaxChunkSizeBytes)
	switch {
	case tail >= small:
		return false
	case !opts.Live:
		return true
	}
	return tail <= max(l0Bytes, small/LiveTailFloor)
}

// LiveOutputBytes is the size a leveled compaction of a live topic that merges l0Bytes of L0
// chunks cuts its outputs at, instead of MaxChunkSizeBytes: three times the new bytes (at least
// SmallChunkBytes/LiveTailFloor, at most MaxChunkSizeBytes). Ingested chunks overlap in time a
// little (a chunk's first rows interleave with the previous chunk's last), so each compaction must
// rewrite the run's last chunk, whatever its size; cut this way, that chunk holds at most about
// the last three batches of new chunks, and the chunks before it, which new data no longer
// reaches, are not rewritten again. Outputs of one chunk size grew the last chunk with every
// batch, rewriting the whole topic each time.
func LiveOutputBytes(l0Bytes int64, opts SelectOptions) int64 {
	limit := opts.MaxChunkSizeBytes
	if limit <= 0 {
		limit = DefaultMaxChunkSizeBytes
	}
	return min(limit, max(3*l0Bytes, SmallChunkBytes(limit)/LiveTailFloor))
}
