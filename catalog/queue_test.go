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

func TestEnqueueAndListQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	seq, err := c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)

	var finalized []int64
	for i := range 7 {
		id, err := c.CreateTopic(ctx, seq, fmt.Sprintf("run_1/t%d", i), fmt.Sprintf("tp_%d", i), "parquet")
		require.NoError(t, err)
		if i%3 != 2 { // topics 2 and 5 are still being ingested
			require.NoError(t, c.FinalizeTopic(ctx, id))
			finalized = append(finalized, id)
		} else {
			err := c.Enqueue(ctx, id)
			require.ErrorIs(t, err, catalog.ErrNotFound)
			require.ErrorContains(t, err, "not finalized")
		}
	}
	require.ErrorIs(t, c.Enqueue(ctx, 999999), catalog.ErrNotFound)

	// One topic was queued by hand before the scan.
	require.NoError(t, c.Enqueue(ctx, finalized[1]))
	require.NoError(t, c.Enqueue(ctx, finalized[1]), "Enqueue is idempotent")

	added, err := c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Equal(t, len(finalized)-1, added)
	added, err = c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Zero(t, added, "nothing new to queue")
	n, err := c.QueueLength(ctx)
	require.NoError(t, err)
	require.Equal(t, len(finalized), n)

	// Page through by 2.
	var listed []int64
	after := int64(0)
	for {
		page, err := c.ListQueued(ctx, after, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		if len(page) == 0 {
			break
		}
		for _, q := range page {
			topic, err := c.Topic(ctx, q.TopicID)
			require.NoError(t, err)
			require.Equal(t, topic.Locator, q.Locator)
			listed = append(listed, q.TopicID)
		}
		after = page[len(page)-1].TopicID
	}
	require.Equal(t, finalized, listed)

	_, err = c.ListQueued(ctx, 0, 0)
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

func TestEnqueueUnoptimizedSkipsOptimizedTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	l := f.lease(t, "run-A")
	f.planAndStage(t, l, 1)
	_, err := f.c.Commit(ctx, f.topicID, "run-A", acceptAll)
	require.NoError(t, err)

	added, err := f.c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Zero(t, added, "an optimized topic is not queued by the scan")
	require.NoError(t, f.c.Enqueue(ctx, f.topicID), "but it can be queued by hand")
	n, err := f.c.QueueLength(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestAcquireLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 3)

	_, err := f.c.LeaseOf(ctx, f.topicID)
	require.ErrorIs(t, err, catalog.ErrNotFound, "not queued")
	require.NoError(t, f.c.Enqueue(ctx, f.topicID))
	_, err = f.c.LeaseOf(ctx, f.topicID)
	require.ErrorIs(t, err, catalog.ErrNotFound, "queued but not leased")

	first, err := f.c.AcquireLease(ctx, f.topicID, "optimize/imu", "run-A", "tp_FRESH_A")
	require.NoError(t, err)
	require.Equal(t, catalog.Lease{
		TopicID: f.topicID, Locator: "run_1/sensors/imu", Owner: "optimize/imu", FencingToken: "run-A",
		FreshPrefix: "tp_FRESH_A", OldPrefix: "tp_OLD_run_1/sensors/imu", LeasedAt: first.LeasedAt,
	}, first)
	require.False(t, first.LeasedAt.IsZero())

	// A retried call of the same run gets the same lease, fresh prefix of the first call.
	retry, err := f.c.AcquireLease(ctx, f.topicID, "optimize/imu", "run-A", "tp_FRESH_A_RETRY")
	require.NoError(t, err)
	require.Equal(t, first, retry)
	current, err := f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	require.Equal(t, first, current)

	// The run saves a plan and stages a chunk. Another run asking for the lease gets the holder,
	// and nothing changes: only a holder that is gone is taken over, and only TakeOverLease does it.
	f.planAndStage(t, first, 1)
	_, err = f.c.AcquireLease(ctx, f.topicID, "optimize/imu", "run-B", "tp_FRESH_B")
	require.ErrorIs(t, err, catalog.ErrLeased)
	var held *catalog.LeasedError
	require.ErrorAs(t, err, &held)
	require.Equal(t, first, held.Holder, "the holder as it is in the queue row")
	current, err = f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	require.Equal(t, first, current, "a refused acquisition changes nothing")
	_, err = f.c.LoadPlan(ctx, f.topicID, "run-A")
	require.NoError(t, err, "the holder's plan is kept")

	// run-A dies; run-B takes the topic over from it.
	second, err := f.c.TakeOverLease(ctx, f.topicID, "run-A", "optimize/imu", "run-B", "tp_FRESH_B", policy.Full)
	require.NoError(t, err)
	require.Equal(t, "run-B", second.FencingToken)
	require.Equal(t, "tp_FRESH_B", second.FreshPrefix)
	require.Equal(t, "tp_FRESH_A", second.PreviousFreshPrefix, "the dead run's output prefix is reported")
	current, err = f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	second.PreviousFreshPrefix = ""
	require.Equal(t, second, current)
	_, err = f.c.LoadPlan(ctx, f.topicID, "run-A")
	require.ErrorIs(t, err, catalog.ErrNotFound, "the dead run's plan is gone")
	staged, err := f.c.StagedChunks(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Empty(t, staged, "the dead run's staged chunks are gone")

	// A retried takeover (and a retried acquisition) of run-B gets its lease back, and reports no
	// prefix to delete: tp_FRESH_B is run-B's own.
	again, err := f.c.TakeOverLease(ctx, f.topicID, "run-A", "optimize/imu", "run-B", "tp_FRESH_B_RETRY", policy.Full)
	require.NoError(t, err)
	require.Equal(t, current, again)
	again, err = f.c.AcquireLease(ctx, f.topicID, "optimize/imu", "run-B", "tp_FRESH_B_RETRY")
	require.NoError(t, err)
	require.Equal(t, current, again)
	n, err := f.c.QueueLength(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	for _, bad := range []struct{ owner, token, prefix string }{
		{"", "run-C", "tp_C"}, {"o", "", "tp_C"}, {"o", "run-C", ""}, {"o", "run-\xff", "tp_C"},
	} {
		_, err := f.c.AcquireLease(ctx, f.topicID, bad.owner, bad.token, bad.prefix)
		require.ErrorIs(t, err, catalog.ErrInvalid)
	}
	after, err := f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	require.Equal(t, current, after, "refused calls change nothing")
}

// TestTakeOverLeaseIsACompareAndSwap: a takeover succeeds only while the row is still held by the
// run the caller decided to take it from. A holder that changed in between (another taker, a
// commit, a release) is left alone, with its fresh prefix: the caller gets ErrLeaseChanged and
// no prefix to delete.
func TestTakeOverLeaseIsACompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	f.lease(t, "run-A")

	// Two takers both saw run-A; B takes it over first. C's takeover from run-A finds run-B.
	b := f.takeOver(t, "run-A", "run-B")
	require.Equal(t, "tp_NEW_run-A", b.PreviousFreshPrefix)
	f.planAndStage(t, b, 1)
	_, err := f.c.TakeOverLease(ctx, f.topicID, "run-A", "optimize/x", "run-C", "tp_NEW_run-C", policy.Full)
	require.ErrorIs(t, err, catalog.ErrLeaseChanged)
	require.NotErrorIs(t, err, catalog.ErrLeased)
	require.ErrorContains(t, err, `held by run "run-B"`)
	current, err := f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	b.PreviousFreshPrefix = ""
	require.Equal(t, b, current, "run-B keeps its lease")
	_, err = f.c.LoadPlan(ctx, f.topicID, "run-B")
	require.NoError(t, err, "and its plan")

	// The holder releases before the takeover: the row is gone, the takeover changes nothing
	// (and does not queue the topic again).
	released, _, err := f.c.ReleaseLease(ctx, f.topicID, "run-B")
	require.NoError(t, err)
	require.True(t, released)
	_, err = f.c.TakeOverLease(ctx, f.topicID, "run-B", "optimize/x", "run-C", "tp_NEW_run-C", policy.Full)
	require.ErrorIs(t, err, catalog.ErrLeaseChanged)
	queued, err := f.c.IsQueued(ctx, f.topicID)
	require.NoError(t, err)
	require.False(t, queued)

	// Queued but not leased: nothing to take over from either; acquiring it works.
	require.NoError(t, f.c.Enqueue(ctx, f.topicID))
	_, err = f.c.TakeOverLease(ctx, f.topicID, "run-B", "optimize/x", "run-C", "tp_NEW_run-C", policy.Full)
	require.ErrorIs(t, err, catalog.ErrLeaseChanged)
	require.ErrorContains(t, err, "not leased")
	c := f.lease(t, "run-C")
	require.Empty(t, c.PreviousFreshPrefix)

	_, err = f.c.TakeOverLease(ctx, f.topicID, "", "optimize/x", "run-D", "tp_NEW_run-D", policy.Full)
	require.ErrorIs(t, err, catalog.ErrInvalid, "a takeover names its holder")
}

// TestAcquireQueuedLeaseNeverQueuesAgain: a run's lease of a topic it listed fails with
// ErrNotQueued once another run committed (or released) it, instead of queuing it again for a
// second optimization; while it is queued it leases as AcquireLease does.
func TestAcquireQueuedLeaseNeverQueuesAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	_, err := f.c.AcquireQueuedLease(ctx, f.topicID, "optimize/x", "run-A", "tp_A", policy.Full)
	require.ErrorIs(t, err, catalog.ErrNotQueued)
	queued, err := f.c.IsQueued(ctx, f.topicID)
	require.NoError(t, err)
	require.False(t, queued, "not queued again")

	require.NoError(t, f.c.Enqueue(ctx, f.topicID))
	a, err := f.c.AcquireQueuedLease(ctx, f.topicID, "optimize/x", "run-A", "tp_A", policy.Full)
	require.NoError(t, err)
	_, err = f.c.AcquireQueuedLease(ctx, f.topicID, "optimize/x", "run-B", "tp_B", policy.Full)
	require.ErrorIs(t, err, catalog.ErrLeased)
	released, _, err := f.c.ReleaseLease(ctx, f.topicID, a.FencingToken)
	require.NoError(t, err)
	require.True(t, released)
	_, err = f.c.AcquireQueuedLease(ctx, f.topicID, "optimize/x", "run-B", "tp_B", policy.Full)
	require.ErrorIs(t, err, catalog.ErrNotQueued, "released by run-A since run-B listed it")
}

// TestEnqueueDuringACommitDoesNotQueueAgain: a run's EnqueueTopics that starts while another
// run's commit of a topic is in flight (its queue row deleted and the topic switched, not yet
// committed) waits on that queue row and, once the commit is done, must not queue the topic
// again: its snapshot still shows the topic unoptimized, and without a second look it would send
// the topic to a second optimization.
func TestEnqueueDuringACommitDoesNotQueueAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	l := f.lease(t, "run-A")

	// run-A's commit, held open: the same changes Commit makes to the queue, topic and chunks.
	commit, err := f.c.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = commit.Rollback(ctx) }()
	_, err = commit.Exec(ctx, `DELETE FROM optimization_queue WHERE topic_id = $1`, f.topicID)
	require.NoError(t, err)
	_, err = commit.Exec(ctx, `UPDATE chunks SET level = 1 WHERE topic_id = $1`, f.topicID)
	require.NoError(t, err)
	_, err = commit.Exec(ctx, `UPDATE topics SET data_prefix = $2, optimized_at = now(),
		chunk_set_version = chunk_set_version + 1 WHERE id = $1`, f.topicID, l.FreshPrefix)
	require.NoError(t, err)

	type result struct {
		added int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		added, err := f.c.EnqueueUnoptimized(ctx)
		done <- result{added, err}
	}()
	// Wait until the enqueue is blocked on run-A's deleted queue row, then commit run-A.
	require.Eventually(t, func() bool {
		var waiting bool
		err := f.c.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO optimization_queue%')`).Scan(&waiting)
		return err == nil && waiting
	}, 30*time.Second, 10*time.Millisecond, "the enqueue never waited for the commit")
	require.NoError(t, commit.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.Zero(t, r.added, "the topic optimized meanwhile is not queued again")
	queued, err := f.c.IsQueued(ctx, f.topicID)
	require.NoError(t, err)
	require.False(t, queued)
}

// TestConcurrentTakeOversHaveOneWinner: many runs that all decided run-A is gone take its lease
// over at once; exactly one gets it (and run-A's prefix to delete), every other one gets
// ErrLeaseChanged.
func TestConcurrentTakeOversHaveOneWinner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	f.lease(t, "run-A")
	const takers = 8
	type result struct {
		lease catalog.Lease
		err   error
	}
	results := make(chan result, takers)
	for i := range takers {
		go func() {
			token := fmt.Sprintf("run-%d", i)
			l, err := f.c.TakeOverLease(ctx, f.topicID, "run-A", "optimize/x", token, "tp_NEW_"+token, policy.Full)
			results <- result{l, err}
		}()
	}
	var winners []catalog.Lease
	for range takers {
		r := <-results
		if r.err == nil {
			winners = append(winners, r.lease)
			continue
		}
		require.ErrorIs(t, r.err, catalog.ErrLeaseChanged)
	}
	require.Len(t, winners, 1)
	require.Equal(t, "tp_NEW_run-A", winners[0].PreviousFreshPrefix)
	current, err := f.c.LeaseOf(ctx, f.topicID)
	require.NoError(t, err)
	require.Equal(t, winners[0].FencingToken, current.FencingToken)
}

func TestAcquireLeaseQueuesAndRefusesUnfinalized(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)

	// Manual start on an unqueued topic queues it.
	_, err := f.c.AcquireLease(ctx, f.topicID, "optimize/imu", "run-A", "tp_A")
	require.NoError(t, err)
	queued, err := f.c.ListQueued(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, queued, 1)
	require.Equal(t, catalog.QueuedTopic{TopicID: f.topicID, Locator: "run_1/sensors/imu", Bytes: queued[0].Bytes}, queued[0])

	_, err = f.c.AcquireLease(ctx, 999999, "o", "run-A", "tp_A")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.ErrorContains(t, err, "does not exist")

	seq, err := f.c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	open, err := f.c.CreateTopic(ctx, seq, "run_1/live", "tp_L", "parquet")
	require.NoError(t, err)
	_, err = f.c.AcquireLease(ctx, open, "o", "run-A", "tp_A")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.ErrorContains(t, err, "not finalized")
	n, err := f.c.QueueLength(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the unfinalized topic was not queued")
}

func TestReleaseLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	l := f.lease(t, "run-A")
	f.planAndStage(t, l, 2)
	before := f.state(t, "run-A")

	released, prefix, err := f.c.ReleaseLease(ctx, f.topicID, "run-OTHER")
	require.NoError(t, err)
	require.False(t, released)
	require.Empty(t, prefix)
	require.Equal(t, before, f.state(t, "run-A"), "a foreign token changes nothing")

	released, prefix, err = f.c.ReleaseLease(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.True(t, released)
	require.Equal(t, "tp_NEW_run-A", prefix)
	after := f.state(t, "run-A")
	require.Contains(t, after.LeaseErr, "topic not queued")
	require.Zero(t, after.QueueLength)
	require.Contains(t, after.PlanErr, "no plan")
	require.Empty(t, after.Staged)
	require.Equal(t, before.Chunks, after.Chunks, "chunks untouched")
	require.Equal(t, before.Topic, after.Topic, "topic untouched")

	released, _, err = f.c.ReleaseLease(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.False(t, released, "releasing twice does nothing")
}

// TestGiveBackLease: giving back a lease drops the run's plan and staged chunks and clears the
// lease, but keeps the topic queued, so that another run leases it afresh; a foreign token
// changes nothing.
func TestGiveBackLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	l := f.lease(t, "run-A")
	f.planAndStage(t, l, 2)
	before := f.state(t, "run-A")

	given, prefix, err := f.c.GiveBackLease(ctx, f.topicID, "run-OTHER")
	require.NoError(t, err)
	require.False(t, given)
	require.Empty(t, prefix)
	require.Equal(t, before, f.state(t, "run-A"), "a foreign token changes nothing")

	given, prefix, err = f.c.GiveBackLease(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.True(t, given)
	require.Equal(t, "tp_NEW_run-A", prefix)
	after := f.state(t, "run-A")
	require.Contains(t, after.LeaseErr, "queued but not leased")
	require.Equal(t, 1, after.QueueLength, "the topic stays queued")
	require.Contains(t, after.PlanErr, "no plan")
	require.Empty(t, after.Staged)
	require.Equal(t, before.Chunks, after.Chunks, "chunks untouched")
	require.Equal(t, before.Topic, after.Topic, "topic untouched")

	given, _, err = f.c.GiveBackLease(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.False(t, given, "giving back twice does nothing")
	l2 := f.lease(t, "run-B")
	require.Equal(t, "run-B", l2.FencingToken)
	require.Empty(t, l2.PreviousFreshPrefix, "the next lease has no earlier output to delete")
}

// TestQueueBytesAndTotals: a queued topic's Bytes is the sum of its chunks' object sizes (all
// L0 here), its Debt its L0 chunks when queued, and QueueTotals counts and sums what ListQueuedFor lists for a policy and scope.
func TestQueueBytesAndTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 3) // run_1/sensors/imu, chunks of 1000, 1001, 1002 bytes
	g := f.withTopic(t, "run_1/sensors/gps", 2)
	_, err := f.c.EnqueueTopics(ctx, catalog.Trigger{Policy: policy.Full})
	require.NoError(t, err)

	page, err := f.c.ListQueuedFor(ctx, 0, 10, policy.Full, policy.Scope{})
	require.NoError(t, err)
	require.Equal(t, []catalog.QueuedTopic{
		{TopicID: f.topicID, Locator: "run_1/sensors/imu", Bytes: 3003, Debt: 3},
		{TopicID: g.topicID, Locator: "run_1/sensors/gps", Bytes: 2001, Debt: 2},
	}, page)
	n, bytes, err := f.c.QueueTotals(ctx, policy.Full, policy.Scope{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, int64(5004), bytes)

	n, bytes, err = f.c.QueueTotals(ctx, policy.Full, policy.Scope{Topics: []string{"run_1/sensors/gps"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int64(2001), bytes)
	n, bytes, err = f.c.QueueTotals(ctx, policy.Tiered, policy.Scope{})
	require.NoError(t, err)
	require.Zero(t, n, "no topic is queued for tiered")
	require.Zero(t, bytes)
}
