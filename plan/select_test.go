package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/policy"
)

// chunk is a chunk of the test pictures: level, ordinal, size and a timestamp range (lo > hi
// means all-null timestamps).
func chunk(l policy.Level, ord int, size, lo, hi int64) ChunkFacts {
	c := ChunkFacts{ChunkID: int64(100*int(l) + ord), Level: l, Ordinal: ord, SizeBytes: size, Rows: 10}
	if lo > hi {
		c.Nulls = 10
		return c
	}
	c.MinTs, c.MaxTs = &lo, &hi
	return c
}

func picture(t *testing.T, p policy.Policy, max int64, chunks ...ChunkFacts) string {
	t.Helper()
	s, err := Select(p, chunks, SelectOptions{MaxChunkSizeBytes: max})
	require.NoError(t, err)
	return s.Picture(chunks)
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

func TestSelectTieredJoinsNeighbouringSmallChunks(t *testing.T) {
	got := picture(t, policy.Tiered, 1000,
		chunk(policy.L1, 0, 900, 0, 99), // L1: never read by tiered
		chunk(policy.L0, 3, 100, 100, 150),
		chunk(policy.L0, 4, 300, 140, 200),
		chunk(policy.L0, 5, 400, 190, 250),
		chunk(policy.L0, 6, 300, 240, 300), // would take out0 over 1000 bytes: starts out1
		chunk(policy.L0, 7, 100, 290, 350),
		chunk(policy.L0, 8, 700, 340, 400), // large: ends the run of neighbours
		chunk(policy.L0, 9, 100, 390, 450), // alone: nothing to join it with
	)
	require.Equal(t, lines(
		"tiered concatenate",
		"  L1#0 size=900 [0 .. 99]",
		"* L0#3 size=100 [100 .. 150] -> out0",
		"* L0#4 size=300 [140 .. 200] -> out0",
		"* L0#5 size=400 [190 .. 250] -> out0",
		"* L0#6 size=300 [240 .. 300] -> out1",
		"* L0#7 size=100 [290 .. 350] -> out1",
		"  L0#8 size=700 [340 .. 400]",
		"  L0#9 size=100 [390 .. 450]",
	), got)

	nothing := picture(t, policy.Tiered, 1000, chunk(policy.L0, 0, 600, 0, 1), chunk(policy.L0, 1, 100, 2, 3))
	require.NotContains(t, nothing, "*", "one small chunk alone: nothing to do")

	// An earlier tiered output is never joined again: it breaks the run of neighbours.
	rolled := chunk(policy.L0, 1, 300, 140, 200)
	rolled.Rollup = true
	got = picture(t, policy.Tiered, 1000,
		chunk(policy.L0, 0, 100, 100, 150),
		rolled,
		chunk(policy.L0, 5, 100, 190, 250),
		chunk(policy.L0, 6, 100, 240, 300),
	)
	require.Equal(t, lines(
		"tiered concatenate",
		"  L0#0 size=100 [100 .. 150]",
		"  L0#1 size=300 [140 .. 200]",
		"* L0#5 size=100 [190 .. 250] -> out0",
		"* L0#6 size=100 [240 .. 300] -> out0",
	), got)
}

func TestSelectLeveledReadsOnlyTheOverlappingPartOfTheRun(t *testing.T) {
	// Append-mostly: new L0 data overlaps only the end of the run.
	got := picture(t, policy.Leveled, 1000,
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L1, 1, 900, 100, 199),
		chunk(policy.L1, 2, 900, 200, 299),
		chunk(policy.L1, 3, 900, 300, 399),
		chunk(policy.L0, 7, 100, 390, 450),
		chunk(policy.L0, 8, 100, 450, 500),
	)
	require.Equal(t, lines(
		"leveled merge",
		"  L1#0 size=900 [0 .. 99]",
		"  L1#1 size=900 [100 .. 199]",
		"  L1#2 size=900 [200 .. 299]",
		"* L1#3 size=900 [300 .. 399]",
		"* L0#7 size=100 [390 .. 450]",
		"* L0#8 size=100 [450 .. 500]",
		"outputs at L1#3",
	), got)

	// L0 data in the middle of the run: the overlapped chunks and every chunk between them.
	got = picture(t, policy.Leveled, 1000,
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L1, 1, 900, 100, 199),
		chunk(policy.L1, 2, 900, 200, 299),
		chunk(policy.L1, 3, 900, 300, 399),
		chunk(policy.L0, 7, 100, 150, 160),
		chunk(policy.L0, 8, 100, 250, 260),
	)
	require.Equal(t, lines(
		"leveled merge",
		"  L1#0 size=900 [0 .. 99]",
		"* L1#1 size=900 [100 .. 199]",
		"* L1#2 size=900 [200 .. 299]",
		"  L1#3 size=900 [300 .. 399]",
		"* L0#7 size=100 [150 .. 160]",
		"* L0#8 size=100 [250 .. 260]",
		"outputs at L1#1, kept from L1#3",
	), got)
}

func TestSelectLeveledMergesASmallLastChunkInsteadOfLeavingASliver(t *testing.T) {
	// New data after the run, whose last chunk is small: it grows instead of staying a sliver.
	got := picture(t, policy.Leveled, 1000,
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L1, 1, 200, 100, 120),
		chunk(policy.L0, 5, 100, 200, 250),
	)
	require.Equal(t, lines(
		"leveled merge",
		"  L1#0 size=900 [0 .. 99]",
		"* L1#1 size=200 [100 .. 120]",
		"* L0#5 size=100 [200 .. 250]",
		"outputs at L1#1",
	), got)

	// A small last chunk right after the overlapped part joins it too.
	got = picture(t, policy.Leveled, 1000,
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L1, 1, 900, 100, 199),
		chunk(policy.L1, 2, 100, 200, 210),
		chunk(policy.L0, 5, 100, 150, 160),
	)
	require.Equal(t, lines(
		"leveled merge",
		"  L1#0 size=900 [0 .. 99]",
		"* L1#1 size=900 [100 .. 199]",
		"* L1#2 size=100 [200 .. 210]",
		"* L0#5 size=100 [150 .. 160]",
		"outputs at L1#1",
	), got)

	// New data after a large last chunk: nothing of the run is read, outputs go after it.
	s, err := Select(policy.Leveled, []ChunkFacts{
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L0, 3, 100, 200, 250),
	}, SelectOptions{MaxChunkSizeBytes: 1000})
	require.NoError(t, err)
	require.Equal(t, []int{1}, s.Inputs)
	require.Equal(t, 1, s.L1From)
	require.Equal(t, -1, s.L1FirstKept)
	require.Equal(t, int64(99), *s.Before)
}

// A live topic's leveled compaction merges the run's small last chunk only while it is no larger
// than the new L0 bytes (or under SmallChunkBytes/LiveTailFloor): a growing last chunk is not
// rewritten with every small batch of new chunks. Finalized, it is merged as before.
func TestSelectLeveledOfALiveTopicMergesTheLastChunkOnlyWhileCheap(t *testing.T) {
	const max = 1 << 20 // small: < 512 KiB; floor: 1 KiB
	run := []ChunkFacts{
		chunk(policy.L1, 0, 300_000, 0, 99),
		chunk(policy.L0, 7, 100_000, 200, 250),
		chunk(policy.L0, 8, 100_000, 251, 299),
	}
	live := func(chunks ...ChunkFacts) string {
		s, err := Select(policy.Leveled, chunks, SelectOptions{MaxChunkSizeBytes: max, Live: true})
		require.NoError(t, err)
		return s.Picture(chunks)
	}
	require.Equal(t, lines(
		"leveled merge",
		"  L1#0 size=300000 [0 .. 99]",
		"* L0#7 size=100000 [200 .. 250]",
		"* L0#8 size=100000 [251 .. 299]",
		"outputs at L1#1",
	), live(run...), "300 kB of run against 200 kB new: appended after it")
	run[2].SizeBytes = 200_000
	require.Equal(t, lines(
		"leveled merge",
		"* L1#0 size=300000 [0 .. 99]",
		"* L0#7 size=100000 [200 .. 250]",
		"* L0#8 size=200000 [251 .. 299]",
		"outputs at L1#0",
	), live(run...), "300 kB new: the last chunk doubles")
	require.Equal(t, lines(
		"leveled merge",
		"* L1#0 size=1000 [0 .. 99]",
		"* L0#7 size=10 [200 .. 250]",
		"outputs at L1#0",
	), live(chunk(policy.L1, 0, 1000, 0, 99), chunk(policy.L0, 7, 10, 200, 250)), "under the floor: always merged")
	run[2].SizeBytes = 100_000
	require.Equal(t, lines(
		"leveled merge",
		"* L1#0 size=300000 [0 .. 99]",
		"* L0#7 size=100000 [200 .. 250]",
		"* L0#8 size=100000 [251 .. 299]",
		"outputs at L1#0",
	), picture(t, policy.Leveled, max, run...), "finalized: the run does not end in slivers")
}

func TestSelectLeveledNullTimestampsSortLast(t *testing.T) {
	// The run ends in a chunk of null timestamps. L0 rows with timestamps go before it; L0 rows
	// with null timestamps overlap it.
	run := []ChunkFacts{
		chunk(policy.L1, 0, 900, 0, 99),
		chunk(policy.L1, 1, 900, 1, 0), // all null
	}
	s, err := Select(policy.Leveled, append(run, chunk(policy.L0, 4, 100, 200, 250)), SelectOptions{MaxChunkSizeBytes: 1000})
	require.NoError(t, err)
	require.Equal(t, []int{2}, s.Inputs, "the null chunk stays: the new rows sort before it")
	require.Equal(t, 1, s.L1From)
	require.Equal(t, 1, s.L1FirstKept)
	require.True(t, s.AfterRows)
	require.False(t, s.AfterHasNonNull)

	withNulls := chunk(policy.L0, 4, 100, 200, 250)
	withNulls.Nulls = 3
	s, err = Select(policy.Leveled, append(run, withNulls), SelectOptions{MaxChunkSizeBytes: 1000})
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, s.Inputs, "new null timestamps merge with the run's")
	require.Equal(t, 1, s.L1From)
	require.Equal(t, -1, s.L1FirstKept)
}

func TestSelectFullAndErrors(t *testing.T) {
	chunks := []ChunkFacts{chunk(policy.L1, 0, 900, 0, 99), chunk(policy.L0, 0, 10, 5, 6)}
	s, err := Select(policy.Full, chunks, SelectOptions{})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, s.Inputs)
	require.Equal(t, KindMerge, s.Kind)
	require.Equal(t, 0, s.L1From)

	s, err = Select(policy.Leveled, []ChunkFacts{chunk(policy.L1, 0, 900, 0, 99)}, SelectOptions{})
	require.NoError(t, err)
	require.True(t, s.Empty(), "no L0 chunk: nothing to do")

	_, err = Select(policy.Auto, chunks, SelectOptions{})
	require.ErrorContains(t, err, "auto must be resolved")
}

// TestSelectAsksThePolicy checks that Select applies every resolved policy in policy.All and
// refuses the others.
func TestSelectAsksThePolicy(t *testing.T) {
	chunks := []ChunkFacts{{ChunkID: 1, Level: policy.L0, SizeBytes: 1, Rows: 1}, {ChunkID: 2, Level: policy.L0, Ordinal: 1, SizeBytes: 1, Rows: 1}}
	for _, c := range policy.All {
		s, err := Select(c.Name(), chunks, SelectOptions{})
		if !c.Resolved() {
			if err == nil {
				t.Errorf("%s: unresolved, selected %v", c.Name(), s.Inputs)
			}
			continue
		}
		if err != nil || s.Policy != c.Name() || s.Empty() {
			t.Errorf("%s: selection %+v, %v", c.Name(), s, err)
		}
	}
	if _, err := Select("bogus", chunks, SelectOptions{}); err == nil {
		t.Error("bogus policy selected")
	}
}

// A live topic's leveled outputs are cut at three times the new bytes (within the floor and the
// chunk size), so that the last chunk, which the next batch's overlap forces into the next
// compaction, stays small.
func TestLiveOutputBytes(t *testing.T) {
	opts := SelectOptions{MaxChunkSizeBytes: 1 << 20, Live: true}
	require.EqualValues(t, 300_000, policy.LiveOutputBytes(100_000, opts))
	require.EqualValues(t, 1024, policy.LiveOutputBytes(10, opts), "the floor: SmallChunkBytes/LiveTailFloor")
	require.EqualValues(t, 1<<20, policy.LiveOutputBytes(1<<20, opts), "at most the chunk size")
	require.EqualValues(t, policy.DefaultMaxChunkSizeBytes, policy.LiveOutputBytes(1e9, SelectOptions{}))
}
