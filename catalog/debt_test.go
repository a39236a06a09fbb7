package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/policy"
)

// The debt the catalog reports is its own rows counted: L0 chunks and bytes, uncompacted chunks
// (a tiered output is not one), the oldest uncompacted chunk's age, the topics over the latest
// trigger, the write signal per topic, and the bytes written per byte ingested.
func TestCompactionDebtCountsTheCatalogsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)

	empty, err := c.DebtTotals(ctx)
	require.NoError(t, err)
	require.Equal(t, catalog.DebtTotals{TopicsByState: map[string]int{"ok": 0, "delay": 0, "stop": 0}, TriggerMinChunks: 2}, empty)

	hot, hotIDs := liveTopic(t, c, "fleet", "imu", 100, 100, 100, 100, 100, 100)
	warm, _ := liveTopic(t, c, "fleet", "gps", 10, 10, 10)
	_, _ = liveTopic(t, c, "fleet", "camera") // no chunk: no debt, no row in WorstTopics
	require.NoError(t, c.SetWriteThresholds(ctx, catalog.WriteThresholds{DelayL0Chunks: 3, StopL0Chunks: 5, MaxDelay: 800 * time.Millisecond}))
	// The hot topic's first chunk was ingested 90 s ago.
	_, err = c.Pool.Exec(ctx, `UPDATE chunks SET ingested_at = now() - interval '90 seconds' WHERE id = $1`, hotIDs[0])
	require.NoError(t, err)

	d, err := c.DebtTotals(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, d.Topics)
	require.EqualValues(t, 9, d.L0Chunks)
	require.EqualValues(t, 630, d.L0Bytes)
	require.EqualValues(t, 9, d.UncompactedChunks)
	require.Equal(t, 6, d.MaxTopicL0Chunks)
	require.Equal(t, 2, d.TriggerMinChunks)
	require.Equal(t, 2, d.TopicsOverTrigger)
	require.Equal(t, map[string]int{"ok": 1, "delay": 1, "stop": 1}, d.TopicsByState)
	require.InDelta(t, 90, d.OldestUncompactedAge.Seconds(), 5)
	require.EqualValues(t, 630, d.IngestedBytes)
	require.Zero(t, d.CompactionWrittenBytes)

	// A run's trigger of 4 L0 chunks: only the hot topic is over it.
	_, err = c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Tiered, MinChunks: 4})
	require.NoError(t, err)

	// A tiered compaction joins the hot topic's chunks 0..3 (the oldest among them) into one L0
	// chunk: four chunks fewer uncompacted, three fewer L0, and the oldest uncompacted one is new.
	stage(t, c, hot, "run-T", hotIDs[0:4], []int{0})
	res, err := c.CommitPlan(ctx, hot, "run-T", catalog.Always(catalog.CommitSpec{Policy: policy.Tiered}), acceptAll)
	require.NoError(t, err)
	require.Equal(t, 4, res.InputChunks)
	_, err = c.Pool.Exec(ctx, `UPDATE optimizations SET output_bytes = 315 WHERE topic_id = $1`, hot)
	require.NoError(t, err)

	d, err = c.DebtTotals(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, d.L0Chunks)
	require.EqualValues(t, 5, d.UncompactedChunks)
	require.Equal(t, 4, d.TriggerMinChunks)
	require.Equal(t, 0, d.TopicsOverTrigger, "3 L0 chunks each, under the trigger of 4")
	require.Less(t, d.OldestUncompactedAge, 30*time.Second)
	require.EqualValues(t, 630, d.IngestedBytes, "a compaction ingests nothing")
	require.EqualValues(t, 315, d.CompactionWrittenBytes)
	require.InDelta(t, 0.5, d.WriteAmplification(), 1e-9)

	worst, err := c.WorstTopics(ctx, 10)
	require.NoError(t, err)
	require.Len(t, worst, 2)
	require.Equal(t, "fleet/imu", worst[0].Locator, "most L0 bytes first among equal counts")
	require.Equal(t, 3, worst[0].L0Chunks)
	require.Equal(t, 2, worst[0].UncompactedChunks)
	require.Equal(t, "fleet/gps", worst[1].Locator)
	require.Equal(t, warm, worst[1].TopicID)

	// The write signal: delay from 3 L0 chunks (linearly up to the stop threshold), stop at 5.
	sig, err := c.WriteSignalOf(ctx, "fleet/gps")
	require.NoError(t, err)
	require.Equal(t, catalog.WriteSignal{TopicID: warm, L0Chunks: 3, State: catalog.WriteDelay, Delay: 266 * time.Millisecond}, sig)
	for i := 3; i < 5; i++ {
		_, err = c.AddChunk(ctx, testChunk(warm, i, "tp_fleet_gps/data/x"+string(rune('0'+i))))
		require.NoError(t, err)
	}
	sig, err = c.WriteSignalOf(ctx, "fleet/gps")
	require.NoError(t, err)
	require.Equal(t, catalog.WriteSignal{TopicID: warm, L0Chunks: 5, State: catalog.WriteStop, Delay: 800 * time.Millisecond}, sig)
	sig, err = c.WriteSignalOf(ctx, "fleet/camera")
	require.NoError(t, err)
	require.Equal(t, catalog.WriteOK, sig.State)
	require.Zero(t, sig.Delay)
	_, err = c.WriteSignalOf(ctx, "fleet/lidar")
	require.ErrorIs(t, err, catalog.ErrNotFound)

	th, err := c.WriteThresholds(ctx)
	require.NoError(t, err)
	require.Equal(t, catalog.WriteThresholds{DelayL0Chunks: 3, StopL0Chunks: 5, MaxDelay: 800 * time.Millisecond}, th)
	require.ErrorIs(t, c.SetWriteThresholds(ctx, catalog.WriteThresholds{DelayL0Chunks: 5, StopL0Chunks: 5}), catalog.ErrInvalid)
}

// A run under auto lists its queue with the most debt first: by the L0 chunks each topic had
// when it was queued, ties in topic ID order, page after page from a (debt, topic) cursor.
func TestListQueuedByDebtTakesTheWorstFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	sizes := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = 100
		}
		return out
	}
	want := map[int][]string{} // chunks → locators
	for i, n := range []int{3, 9, 5, 9, 2} {
		locator := fmt.Sprintf("t%d", i)
		liveTopic(t, c, "debt", locator, sizes(n)...)
		want[n] = append(want[n], "debt/"+locator)
	}
	_, err := c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Auto, MinChunks: 2})
	require.NoError(t, err)

	var got []string
	var debts []int
	afterDebt, afterID := 0, int64(0)
	for {
		page, err := c.ListQueuedByDebt(ctx, afterDebt, afterID, 2, policy.Auto, policy.Scope{})
		require.NoError(t, err)
		for _, q := range page {
			got = append(got, q.Locator)
			debts = append(debts, q.Debt)
		}
		if len(page) < 2 {
			break
		}
		afterDebt, afterID = page[len(page)-1].Debt, page[len(page)-1].TopicID
	}
	require.Equal(t, []int{9, 9, 5, 3, 2}, debts)
	require.Equal(t, []string{want[9][0], want[9][1], want[5][0], want[3][0], want[2][0]}, got)

	// Queued again with more chunks, an unleased topic takes its new count.
	first, err := c.TopicByLocator(ctx, "debt/t0")
	require.NoError(t, err)
	for i := 3; i < 12; i++ {
		_, err := c.AddChunk(ctx, testChunk(first.ID, i, fmt.Sprintf("tp_debt_t0/data/%05d.parquet", i)))
		require.NoError(t, err)
	}
	_, err = c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Auto, MinChunks: 2})
	require.NoError(t, err)
	page, err := c.ListQueuedByDebt(ctx, 0, 0, 1, policy.Auto, policy.Scope{})
	require.NoError(t, err)
	require.Equal(t, []catalog.QueuedTopic{{TopicID: first.ID, Locator: "debt/t0", Bytes: page[0].Bytes, Debt: 12}}, page)
}
