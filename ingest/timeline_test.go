package ingest

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelineIrregularities(t *testing.T) {
	for seed := range int64(20) {
		spec := TopicSpec{Path: "x", Kind: GPS, Chunks: 12, RowsPerChunk: 30, Overlap: 0.1,
			UnsortedFraction: 0.25, EqualTimestamps: true, NullTimestamps: 7}
		tl := newTopicTimeline(seed, 0, spec)
		require.Len(t, tl.unsorted, 3, "round(0.25 × 12) unsorted chunks")

		nulls, unsorted := 0, 0
		var prevMax int64
		for c := range spec.Chunks {
			ts, valid := tl.timestamps(c, tl.chunkRNG(c))
			again, _ := tl.timestamps(c, tl.chunkRNG(c))
			require.Equal(t, ts, again, "a chunk's timestamps depend only on seed, topic and ordinal")

			var present []int64
			for j, v := range ts {
				if valid != nil && !valid[j] {
					nulls++
					continue
				}
				present = append(present, v)
			}
			if !slices.IsSorted(present) {
				unsorted++
				assert.True(t, tl.unsorted[c], "seed %d chunk %d unsorted but not chosen", seed, c)
			} else {
				assert.False(t, tl.unsorted[c], "seed %d chunk %d chosen but sorted", seed, c)
			}
			if c > 0 {
				assert.Less(t, slices.Min(present), prevMax, "seed %d chunk %d must overlap its predecessor", seed, c)
			}
			prevMax = slices.Max(present)
		}
		assert.Equal(t, spec.NullTimestamps, nulls, "seed %d", seed)
		assert.Equal(t, 3, unsorted, "seed %d", seed)
	}
}

func TestShuffleABitAlwaysUnsorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		n := 2 + rng.IntN(6)
		ts := make([]int64, n)
		valid := make([]bool, n)
		for j := range ts {
			ts[j] = int64(rng.IntN(3))
			valid[j] = rng.IntN(4) != 0
		}
		slices.Sort(ts)
		var present []int64
		for j, v := range ts {
			if valid[j] {
				present = append(present, v)
			}
		}
		distinct := len(slices.Compact(slices.Clone(present))) > 1
		shuffleABit(ts, valid, 1+rng.IntN(3), rng)
		assert.Equal(t, !distinct, nonNullSorted(ts, valid), "ts %v valid %v", ts, valid)
	}
}

// With no overlap rows (Overlap 0, or one that rounds to 0 rows), every chunk starts strictly
// after its predecessor ends, whatever else the chunks have (unsorted rows, equal timestamps,
// nulls): what a bench of the copy path (-overlap 0) relies on.
func TestTimelineWithoutOverlapIsDisjoint(t *testing.T) {
	for _, overlap := range []float64{0, 0.01} { // 0.01 × 30 rows rounds to 0 rows
		for seed := range int64(20) {
			spec := TopicSpec{Path: "x", Kind: IMU, Chunks: 12, RowsPerChunk: 30, Overlap: overlap,
				UnsortedFraction: 0.25, EqualTimestamps: true, NullTimestamps: 7}
			tl := newTopicTimeline(seed, 0, spec)
			var prevMax int64
			for c := range spec.Chunks {
				ts, valid := tl.timestamps(c, tl.chunkRNG(c))
				var present []int64
				for j, v := range ts {
					if valid == nil || valid[j] {
						present = append(present, v)
					}
				}
				if c > 0 {
					assert.Greater(t, slices.Min(present), prevMax, "overlap %v seed %d: chunk %d must start after chunk %d ends", overlap, seed, c, c-1)
				}
				prevMax = slices.Max(present)
			}
		}
	}
}
