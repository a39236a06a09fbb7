package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/policy"
)

// liveTopic creates a live (not finalized) topic with chunks of the given sizes, chunk i covering
// timestamps i*100 .. i*100+50, and returns its ID and chunk IDs.
func liveTopic(t *testing.T, c *catalog.Catalog, seq, path string, sizes ...int64) (int64, []int64) {
	t.Helper()
	ctx := context.Background()
	seqID, err := c.CreateSequence(ctx, seq)
	require.NoError(t, err)
	prefix := fmt.Sprintf("tp_%s_%s", seq, path)
	id, err := c.CreateTopic(ctx, seqID, seq+"/"+path, prefix, "parquet")
	require.NoError(t, err)
	var ids []int64
	for i, size := range sizes {
		ch := testChunk(id, i, fmt.Sprintf("%s/data/%05d.parquet", prefix, i))
		ch.SizeBytes = size
		cid, err := c.AddChunk(ctx, ch)
		require.NoError(t, err)
		ids = append(ids, cid)
	}
	return id, ids
}

func queuedLocators(t *testing.T, c *catalog.Catalog, p policy.Policy, scope policy.Scope) []string {
	t.Helper()
	page, err := c.ListQueuedFor(context.Background(), 0, 100, p, scope)
	require.NoError(t, err)
	var out []string
	for _, q := range page {
		out = append(out, q.Locator)
	}
	return out
}

func TestTriggersPerPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	const max = 1000 // small chunk: < 500 bytes
	// live topics
	liveTopic(t, c, "a", "one", 100)                 // one L0 chunk: below the trigger
	liveTopic(t, c, "a", "small", 100, 100, 100)     // three small neighbours
	liveTopic(t, c, "a", "big", 600, 700, 800)       // three big chunks: nothing to join
	liveTopic(t, c, "a", "apart", 100, 900, 100)     // two small chunks, not neighbours
	liveTopic(t, c, "a", "full", 400, 400, 400)      // L0 bytes reach the chunk size
	fin, _ := liveTopic(t, c, "b", "finalized", 100) // finalized, one L0 chunk
	require.NoError(t, c.FinalizeTopic(ctx, fin))

	cases := []struct {
		p    policy.Policy
		want []string
	}{
		{policy.Full, []string{"b/finalized"}},
		{policy.Tiered, []string{"a/small", "a/full"}},
		{policy.Leveled, []string{"a/small", "a/big", "a/apart", "a/full"}},
		{policy.Auto, []string{"a/small", "a/big", "a/apart", "a/full", "b/finalized"}}, // live: --min-chunks L0 chunks; finalized: any
	}
	for _, tc := range cases {
		// A fresh queue for each policy.
		_, err := c.Pool.Exec(ctx, `DELETE FROM optimization_queue`)
		require.NoError(t, err)
		added, err := c.EnqueueTopics(ctx, catalog.Trigger{Policy: tc.p, MinChunks: 2, MaxChunkSizeBytes: max})
		require.NoError(t, err)
		require.Equal(t, len(tc.want), added, "policy %s", tc.p)
		require.ElementsMatch(t, tc.want, queuedLocators(t, c, tc.p, policy.Scope{}), "policy %s", tc.p)
		require.Empty(t, queuedLocators(t, c, policy.Policy("other"), policy.Scope{}))
	}

	// Auto resolves to leveled, live or finalized.
	for locator, want := range map[string]policy.Policy{"a/small": policy.Leveled, "a/big": policy.Leveled, "a/full": policy.Leveled, "b/finalized": policy.Leveled} {
		topic, err := c.TopicByLocator(ctx, locator)
		require.NoError(t, err)
		got, need, err := c.NeedsCompaction(ctx, topic.ID, catalog.Trigger{Policy: policy.Auto, MinChunks: 2, MaxChunkSizeBytes: max})
		require.NoError(t, err)
		require.True(t, need, locator)
		require.Equal(t, want, got, locator)
	}
	topic, err := c.TopicByLocator(ctx, "a/big")
	require.NoError(t, err)
	_, need, err := c.NeedsCompaction(ctx, topic.ID, catalog.Trigger{Policy: policy.Tiered, MinChunks: 2, MaxChunkSizeBytes: max})
	require.NoError(t, err)
	require.False(t, need, "nothing to join")
	_, need, err = c.NeedsCompaction(ctx, topic.ID, catalog.Trigger{Policy: policy.Leveled, MinChunks: 4, MaxChunkSizeBytes: max})
	require.NoError(t, err)
	require.False(t, need, "below a trigger of 4 L0 chunks")
	_, _, err = c.NeedsCompaction(ctx, 999999, catalog.Trigger{})
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = c.EnqueueTopics(ctx, catalog.Trigger{Policy: "bogus"})
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

func TestScopedEnqueueAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	liveTopic(t, c, "s1", "imu", 100, 100)
	liveTopic(t, c, "s1", "gps", 100, 100)
	liveTopic(t, c, "s2", "imu", 100, 100)
	liveTopic(t, c, "s3", "imu", 100, 100)

	tr := catalog.Trigger{Policy: policy.Leveled, Scope: policy.Scope{Sequences: []string{"s1"}, Topics: []string{"s3/imu"}}}
	added, err := c.EnqueueTopics(ctx, tr)
	require.NoError(t, err)
	require.Equal(t, 3, added)
	require.ElementsMatch(t, []string{"s1/imu", "s1/gps", "s3/imu"}, queuedLocators(t, c, policy.Leveled, policy.Scope{}))

	// Another run queues everything; a run scoped to s2 lists only s2's topics.
	added, err = c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Leveled})
	require.NoError(t, err)
	require.Equal(t, 1, added, "only s2/imu was not queued yet")
	require.Equal(t, []string{"s2/imu"}, queuedLocators(t, c, policy.Leveled, policy.Scope{Sequences: []string{"s2"}}))
	require.Equal(t, []string{"s1/gps"}, queuedLocators(t, c, policy.Leveled, policy.Scope{Topics: []string{"s1/gps"}}))
	require.Empty(t, queuedLocators(t, c, policy.Leveled, policy.Scope{Sequences: []string{"none"}}))

	// A queued, unleased topic takes the newer run's policy.
	_, err = c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Tiered, Scope: policy.Scope{Topics: []string{"s2/imu"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"s2/imu"}, queuedLocators(t, c, policy.Tiered, policy.Scope{}))
}

// stage saves a plan reading inputs and stages one output per entry of targets (its target
// ordinal), for run token of topic.
func stage(t *testing.T, c *catalog.Catalog, topicID int64, token string, inputs []int64, targets []int) catalog.Lease {
	t.Helper()
	ctx := context.Background()
	l, err := c.AcquireLeaseFor(ctx, topicID, "optimize/x", token, "tp_NEW_"+token, policy.Tiered)
	require.NoError(t, err)
	require.NoError(t, c.SavePlan(ctx, catalog.PlanRecord{TopicID: topicID, FencingToken: token,
		FreshPrefix: l.FreshPrefix, InputChunkIDs: inputs, Body: []byte(`{}`)}))
	for i, target := range targets {
		ch := testChunk(topicID, i, fmt.Sprintf("%s/data/%05d.parquet", l.FreshPrefix, i))
		ch.Blocks = []catalog.Block{{MinTs: ch.MinTimestampNs, MaxTs: ch.MaxTimestampNs, Rows: 10, Offset: 4, Length: 96,
			Source: "tp_x/data/00001.parquet", TsIndex: &catalog.ByteRange{Offset: 100, Length: 20},
			OffsetIndex: &catalog.ByteRange{Offset: 120, Length: 30}}}
		ch.FooterBytes = 40
		require.NoError(t, c.StageChunk(ctx, token, catalog.StagedChunk{Chunk: ch, TargetOrdinal: &target, Digest: []byte{1}}))
	}
	return l
}

func TestTieredCommitReplacesExactlyItsInputsWhileAppendsGoOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	topicID, ids := liveTopic(t, c, "live", "imu", 100, 100, 100, 100)

	// The plan joins chunks 1 and 2 into one L0 chunk at ordinal 1.
	stage(t, c, topicID, "run-T", ids[1:3], []int{1})

	// Chunks appended after the plan, one of them while the commit's transaction is open: the
	// append must not wait for the commit.
	_, err := c.AddChunk(ctx, testChunk(topicID, 4, "tp_live_imu/data/00004.parquet"))
	require.NoError(t, err)
	var seenInputs []int64
	res, err := c.CommitPlan(ctx, topicID, "run-T", catalog.Always(catalog.CommitSpec{Policy: policy.Tiered}),
		func(plan catalog.PlanRecord, _ []catalog.StagedChunk) error {
			for _, ch := range plan.Inputs {
				seenInputs = append(seenInputs, ch.ID)
			}
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := c.AddChunk(actx, testChunk(topicID, 5, "tp_live_imu/data/00005.parquet"))
			return err
		})
	require.NoError(t, err)
	require.Equal(t, 2, res.InputChunks)
	require.Equal(t, ids[1:3], seenInputs, "verify sees the chunk rows the commit replaces, and only those")

	chunks, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	var got []string
	for _, ch := range chunks {
		got = append(got, fmt.Sprintf("%s:%d:%s", ch.Level, ch.Ordinal, ch.ObjectKey))
	}
	require.Equal(t, []string{
		"L0:0:tp_live_imu/data/00000.parquet",
		"L0:1:tp_NEW_run-T/data/00000.parquet",
		"L0:3:tp_live_imu/data/00003.parquet",
		"L0:4:tp_live_imu/data/00004.parquet",
		"L0:5:tp_live_imu/data/00005.parquet",
	}, got)
	require.Len(t, chunks[1].Blocks, 1)
	require.Equal(t, "tp_x/data/00001.parquet", chunks[1].Blocks[0].Source)
	require.Equal(t, &catalog.ByteRange{Offset: 100, Length: 20}, chunks[1].Blocks[0].TsIndex, "the page index ranges of a block are committed")
	require.Equal(t, &catalog.ByteRange{Offset: 120, Length: 30}, chunks[1].Blocks[0].OffsetIndex)
	require.Equal(t, int64(40), chunks[1].FooterBytes, "the footer's length is committed")
	require.Zero(t, chunks[0].FooterBytes, "an ingested chunk's footer length is unknown")
	topic, err := c.Topic(ctx, topicID)
	require.NoError(t, err)
	require.Equal(t, "tp_live_imu", topic.DataPrefix, "a live topic keeps its data prefix")
	require.Nil(t, topic.FinalizedAt)
	prefixes, err := c.TopicPrefixes(ctx, topicID)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"tp_live_imu", "tp_NEW_run-T"}, prefixes)

	var replaced []string
	rows, _ := c.Pool.Query(ctx, `SELECT object_key FROM replaced_objects ORDER BY object_key`)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		replaced = append(replaced, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"tp_live_imu/data/00001.parquet", "tp_live_imu/data/00002.parquet"}, replaced)
}

func TestCommitRefusesWhenAnInputIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	topicID, ids := liveTopic(t, c, "live", "imu", 100, 100, 100)
	stage(t, c, topicID, "run-A", ids, []int{0})
	_, err := c.Pool.Exec(ctx, `DELETE FROM chunks WHERE id = $1`, ids[2])
	require.NoError(t, err)
	before, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	_, err = c.CommitPlan(ctx, topicID, "run-A", catalog.Always(catalog.CommitSpec{Policy: policy.Tiered}), acceptAll)
	require.ErrorIs(t, err, catalog.ErrChunkSetChanged)
	require.Contains(t, err.Error(), "2 of the plan's 3 input chunks")
	after, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestLeveledCommitShiftsTheSortedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	topicID, ids := liveTopic(t, c, "live", "imu", 100, 100, 100, 100, 100, 100)
	// A first leveled compaction makes chunks 0..3 an L1 run of four chunks.
	stage(t, c, topicID, "run-1", ids[:4], []int{0, 1, 2, 3})
	_, err := c.CommitPlan(ctx, topicID, "run-1", catalog.Always(catalog.CommitSpec{Policy: policy.Leveled}), acceptAll)
	require.NoError(t, err)
	chunks, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	require.Len(t, chunks, 6)
	// A second one merges L1 chunks 1 and 2 with the L0 chunks 4 and 5 into three L1 chunks at
	// ordinals 1..3; L1 chunk 3 moves to 4.
	inputs := []int64{chunks[1].ID, chunks[2].ID, chunks[4].ID, chunks[5].ID}
	keptFirst, keptLast := chunks[0].ObjectKey, chunks[3].ObjectKey
	stage(t, c, topicID, "run-2", inputs, []int{1, 2, 3})
	_, err = c.CommitPlan(ctx, topicID, "run-2", catalog.Always(catalog.CommitSpec{Policy: policy.Leveled, L1ShiftFrom: 3, L1ShiftBy: 1}), acceptAll)
	require.NoError(t, err)
	chunks, err = c.Chunks(ctx, topicID)
	require.NoError(t, err)
	var got []string
	for _, ch := range chunks {
		got = append(got, fmt.Sprintf("%s:%d:%s", ch.Level, ch.Ordinal, ch.ObjectKey))
	}
	require.Equal(t, []string{
		"L1:0:" + keptFirst,
		"L1:1:tp_NEW_run-2/data/00000.parquet",
		"L1:2:tp_NEW_run-2/data/00001.parquet",
		"L1:3:tp_NEW_run-2/data/00002.parquet",
		"L1:4:" + keptLast,
	}, got)
	opts, err := c.Optimizations(ctx, topicID)
	require.NoError(t, err)
	require.Len(t, opts, 2)
	require.Equal(t, policy.Leveled, opts[1].Policy)

	levels, err := c.Levels(ctx)
	require.NoError(t, err)
	require.Equal(t, catalog.LevelCounts{L1Chunks: 5, L1Bytes: 5*1000 + 0 + 1 + 2 + 3}, levels[topicID])
}

func TestMigrationPutsOptimizedTopicsInL1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewEmptyDatabase(t)
	require.NoError(t, catalog.MigrateTo(ctx, dbURL, 2))
	c, err := catalog.Open(ctx, dbURL)
	require.NoError(t, err)
	defer c.Close()
	seq, err := c.CreateSequence(ctx, "old")
	require.NoError(t, err)
	var ids [2]int64
	for i, name := range []string{"optimized", "raw"} {
		err := c.Pool.QueryRow(ctx, `INSERT INTO topics (sequence_id, locator, data_prefix, serialization_format, finalized_at, optimized_at)
			VALUES ($1, $2, $3, 'parquet', now(), CASE WHEN $4 THEN now() END) RETURNING id`,
			seq, "old/"+name, "tp_"+name, i == 0).Scan(&ids[i])
		require.NoError(t, err)
		for o := range 2 {
			_, err := c.Pool.Exec(ctx, `INSERT INTO chunks (topic_id, ordinal, object_key, size_bytes, row_count, arrow_size_bytes)
				VALUES ($1, $2, $3, 10, 1, 10)`, ids[i], o, fmt.Sprintf("tp_%s/data/%05d.parquet", name, o))
			require.NoError(t, err)
		}
	}
	require.NoError(t, catalog.Migrate(ctx, dbURL))
	levels, err := c.Levels(ctx)
	require.NoError(t, err)
	require.Equal(t, catalog.LevelCounts{L1Chunks: 2, L1Bytes: 20}, levels[ids[0]])
	require.Equal(t, catalog.LevelCounts{L0Chunks: 2, L0Bytes: 20}, levels[ids[1]])
	added, err := c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, added, "the raw topic still needs its full compaction, the optimized one not")
}

// Tiered outputs are never joined again: two neighbouring rollup chunks do not trigger tiered.
func TestTieredTriggerSkipsRollups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	topicID, ids := liveTopic(t, c, "live", "imu", 100, 100, 100, 100)
	tr := catalog.Trigger{Policy: policy.Tiered, MinChunks: 2, MaxChunkSizeBytes: 1 << 20}
	_, need, err := c.NeedsCompaction(ctx, topicID, tr)
	require.NoError(t, err)
	require.True(t, need, "four small ingested neighbours")
	stage(t, c, topicID, "run-1", ids[:2], []int{0})
	_, err = c.CommitPlan(ctx, topicID, "run-1", catalog.Always(catalog.CommitSpec{Policy: policy.Tiered}), acceptAll)
	require.NoError(t, err)
	_, need, err = c.NeedsCompaction(ctx, topicID, tr)
	require.NoError(t, err)
	require.True(t, need, "chunks 2 and 3 are still joinable")
	stage(t, c, topicID, "run-2", ids[2:], []int{2})
	_, err = c.CommitPlan(ctx, topicID, "run-2", catalog.Always(catalog.CommitSpec{Policy: policy.Tiered}), acceptAll)
	require.NoError(t, err)
	_, need, err = c.NeedsCompaction(ctx, topicID, tr)
	require.NoError(t, err)
	require.False(t, need, "two rollup chunks: nothing to join")
	_, need, err = c.NeedsCompaction(ctx, topicID, catalog.Trigger{Policy: policy.Leveled, MinChunks: 2})
	require.NoError(t, err)
	require.True(t, need, "leveled merges them")
}

// TestEveryPolicysTriggerAgreesEverywhere checks, for every policy in policy.All, that its trigger
// queues exactly the topics a dry run lists and NeedsCompaction names, each with a resolved policy
// that a commit accepts.
func TestEveryPolicysTriggerAgreesEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	const max = 1000
	liveTopic(t, c, "a", "one", 100)
	liveTopic(t, c, "a", "small", 100, 100, 100)
	liveTopic(t, c, "a", "big", 600, 700, 800)
	liveTopic(t, c, "a", "full", 400, 400, 400)
	fin, _ := liveTopic(t, c, "b", "finalized", 100, 100)
	require.NoError(t, c.FinalizeTopic(ctx, fin))
	locators := []string{"a/one", "a/small", "a/big", "a/full", "b/finalized"}

	for _, pc := range policy.All {
		tr := catalog.Trigger{Policy: pc.Name(), MinChunks: 2, MaxChunkSizeBytes: max}
		_, err := c.Pool.Exec(ctx, `DELETE FROM optimization_queue`)
		require.NoError(t, err)
		listed, err := c.TopicsNeedingCompaction(ctx, tr, 0, 100)
		require.NoError(t, err)
		var want []string
		for _, n := range listed {
			want = append(want, n.Locator)
			require.True(t, n.Policy.Resolved(), "%s resolves %s to %q", pc.Name(), n.Locator, n.Policy)
		}
		added, err := c.EnqueueTopics(ctx, tr)
		require.NoError(t, err)
		require.Equal(t, len(want), added, "policy %s", pc.Name())
		require.ElementsMatch(t, want, queuedLocators(t, c, pc.Name(), policy.Scope{}), "policy %s", pc.Name())
		for _, locator := range locators {
			topic, err := c.TopicByLocator(ctx, locator)
			require.NoError(t, err)
			got, need, err := c.NeedsCompaction(ctx, topic.ID, tr)
			require.NoError(t, err)
			require.Equal(t, slices.Contains(want, locator), need, "policy %s, topic %s", pc.Name(), locator)
			require.True(t, got.Resolved(), "policy %s resolves %s to %q", pc.Name(), locator, got)
		}
	}
}
