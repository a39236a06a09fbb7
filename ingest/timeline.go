package ingest

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// sequenceEpoch is the earliest start of a simulated sequence; the seed picks a start within
// the following day.
var sequenceEpoch = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// topicTimeline decides everything about a topic's timestamps that spans chunks (start, which
// chunks are unsorted, which rows are null), so that chunks can then be generated independently
// and in any order from their own random stream.
type topicTimeline struct {
	spec     TopicSpec
	seed     int64
	index    int   // position of the topic in Options.Topics: selects the random streams
	startNs  int64 // nominal timestamp of the topic's row 0
	periodNs int64
	unsorted map[int]bool  // chunk ordinal → rows shuffled a bit
	nulls    map[int][]int // chunk ordinal → rows (ascending) with a null timestamp
}

func newTopicTimeline(seed int64, index int, spec TopicSpec) *topicTimeline {
	seqRNG := rand.New(rand.NewPCG(uint64(seed), 0))
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)+1))
	tl := &topicTimeline{
		spec:     spec,
		seed:     seed,
		index:    index,
		startNs:  sequenceEpoch + seqRNG.Int64N(86_400)*int64(time.Second) + rng.Int64N(int64(time.Second)),
		periodNs: kinds[spec.Kind].periodNs,
		unsorted: make(map[int]bool),
		nulls:    make(map[int][]int),
	}
	if spec.UnsortedFraction > 0 && spec.Chunks > 0 {
		n := min(spec.Chunks, max(1, int(math.Round(spec.UnsortedFraction*float64(spec.Chunks)))))
		for _, c := range rng.Perm(spec.Chunks)[:n] {
			tl.unsorted[c] = true
		}
	}
	total := int64(spec.Chunks) * int64(spec.RowsPerChunk)
	chosen := make(map[int64]bool, spec.NullTimestamps)
	for len(chosen) < spec.NullTimestamps {
		chosen[rng.Int64N(total)] = true
	}
	for row := range chosen {
		c := int(row / int64(spec.RowsPerChunk))
		tl.nulls[c] = append(tl.nulls[c], int(row%int64(spec.RowsPerChunk)))
	}
	for _, rows := range tl.nulls {
		slices.Sort(rows)
	}
	return tl
}

// chunkRNG is the random stream of one chunk: independent of the order chunks are generated in.
func (tl *topicTimeline) chunkRNG(chunk int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(tl.seed)^0x9e3779b97f4a7c15, uint64(tl.index)<<40|uint64(chunk)))
}

// overlapRows is the number of leading rows of a chunk (not the first) that interleave with
// the previous chunk.
func (tl *topicTimeline) overlapRows(chunk int) int {
	if chunk == 0 {
		return 0
	}
	return min(tl.spec.RowsPerChunk, int(math.Round(tl.spec.Overlap*float64(tl.spec.RowsPerChunk))))
}

// timestamps returns the timestamp_ns values of a chunk and their validity (nil when no row is
// null). Row j of chunk i nominally sits at start + (i*R + j)*period. The first k overlap rows
// are spread at twice the period, half a period early, over [i*R-k-1/2, i*R+k-1/2) periods, so
// they interleave with the previous chunk's last rows (k = 1 included); equal timestamps copy a
// row's predecessor; an unsorted chunk gets a few neighbouring rows swapped.
func (tl *topicTimeline) timestamps(chunk int, rng *rand.Rand) ([]int64, []bool) {
	rows := tl.spec.RowsPerChunk
	first := int64(chunk) * int64(rows)
	k := tl.overlapRows(chunk)
	ts := make([]int64, rows)
	for j := range rows {
		if j < k {
			ts[j] = tl.startNs + (first-int64(k)+2*int64(j))*tl.periodNs - tl.periodNs/2
		} else {
			ts[j] = tl.startNs + (first+int64(j))*tl.periodNs
		}
	}
	if tl.spec.EqualTimestamps && rows >= 2 {
		for range max(1, rows/100) {
			j := 1 + rng.IntN(rows-1)
			ts[j] = ts[j-1]
		}
	}
	var valid []bool
	if nulls := tl.nulls[chunk]; len(nulls) > 0 {
		valid = make([]bool, rows)
		for j := range valid {
			valid[j] = true
		}
		for _, j := range nulls {
			valid[j] = false
			ts[j] = 0
		}
	}
	if tl.unsorted[chunk] && rows >= 2 {
		shuffleABit(ts, valid, max(1, rows/50), rng)
	}
	return ts, valid
}

// shuffleABit swaps up to swaps pairs of neighbouring non-null rows with different timestamps,
// each pair position at most once, and makes sure the non-null timestamps end up out of order
// whenever they are not all equal.
func shuffleABit(ts []int64, valid []bool, swaps int, rng *rand.Rand) {
	isValid := func(j int) bool { return valid == nil || valid[j] }
	done := 0
	for _, j := range rng.Perm(len(ts) - 1) {
		if done == swaps {
			break
		}
		if isValid(j) && isValid(j+1) && ts[j] != ts[j+1] {
			ts[j], ts[j+1] = ts[j+1], ts[j]
			done++
		}
	}
	if !nonNullSorted(ts, valid) {
		return
	}
	prev := -1
	for j := range ts {
		if !isValid(j) {
			continue
		}
		if prev >= 0 && ts[prev] != ts[j] {
			ts[prev], ts[j] = ts[j], ts[prev]
			return
		}
		prev = j
	}
}

// nonNullSorted reports whether the non-null values of ts are in non-decreasing order.
func nonNullSorted(ts []int64, valid []bool) bool {
	prev, seen := int64(0), false
	for j, v := range ts {
		if valid != nil && !valid[j] {
			continue
		}
		if seen && v < prev {
			return false
		}
		prev, seen = v, true
	}
	return true
}
