package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/policy"
)

const (
	inputErr = "StoreoptInputError"
	// two runs' fresh prefixes: the same failure mentions a different one each run
	msgRun1 = "write-chunks: object tp_01HZY3Q4W5E6R7T8Y9ABCDEFGH/data/00000.parquet: timestamp_ns null count differs"
	msgRun2 = "write-chunks: object tp_01HZY3Q4W5E6R7T8Y9ABCDEFGK/data/00000.parquet: timestamp_ns null count differs"
	msgBad  = "read-sort: chunk tp_OLD/data/00003.parquet: not a Parquet file"
)

func recordFailure(t *testing.T, c *catalog.Catalog, topicID int64, token, message string) catalog.FailureRecord {
	t.Helper()
	rec, err := c.RecordFailure(context.Background(), topicID, token, inputErr, message, 0)
	require.NoError(t, err)
	return rec
}

func enqueued(t *testing.T, c *catalog.Catalog) []int64 {
	t.Helper()
	page, err := c.ListQueued(context.Background(), 0, 100)
	require.NoError(t, err)
	ids := []int64{}
	for _, q := range page {
		ids = append(ids, q.TopicID)
	}
	return ids
}

// TestQuarantineAfterConsecutiveFailures: three failures of the same kind in a row quarantine a
// topic; a retried record, another kind of failure and prefixes in the message are handled.
func TestQuarantineAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	other := f.withTopic(t, "run_1/sensors/gps", 1)
	victim := f.topicID

	rec := recordFailure(t, f.c, victim, "run-1", msgRun1)
	require.Equal(t, 1, rec.Failures)
	require.Nil(t, rec.QuarantinedAt)
	require.Equal(t, 1, recordFailure(t, f.c, victim, "run-1", msgRun1).Failures, "a retried record counts once")
	require.Equal(t, 2, recordFailure(t, f.c, victim, "run-2", msgRun2).Failures, "fresh prefixes aside, the same failure")

	rec = recordFailure(t, f.c, victim, "run-3", msgBad)
	require.Equal(t, 1, rec.Failures, "another failure starts a new streak")
	require.Nil(t, rec.QuarantinedAt)
	recordFailure(t, f.c, victim, "run-4", msgBad)
	rec = recordFailure(t, f.c, victim, "run-5", msgBad)
	require.Equal(t, 3, rec.Failures)
	require.NotNil(t, rec.QuarantinedAt)
	require.Equal(t, "run_1/sensors/imu", rec.Locator)
	require.Equal(t, inputErr+": "+msgBad, rec.Reason())

	// Quarantined topics are not queued; the others are.
	added, err := f.c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, added)
	require.Equal(t, []int64{other.topicID}, enqueued(t, f.c))
	q, err := f.c.Quarantined(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, victim, q[0].TopicID)
	require.Equal(t, msgBad, q[0].Message)
	n, err := f.c.QuarantinedCount(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Failing another way keeps the quarantine.
	rec = recordFailure(t, f.c, victim, "run-6", msgRun1)
	require.Equal(t, 1, rec.Failures)
	require.NotNil(t, rec.QuarantinedAt)

	// Clearing it queues the topic again with a fresh streak.
	cleared, err := f.c.ClearQuarantine(ctx, victim)
	require.NoError(t, err)
	require.True(t, cleared)
	_, err = f.c.FailureOf(ctx, victim)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	added, err = f.c.EnqueueUnoptimized(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, added)
	cleared, err = f.c.ClearQuarantine(ctx, victim)
	require.NoError(t, err)
	require.False(t, cleared)

	// A topic quarantined while queued keeps its queue row but is not listed until cleared.
	require.NoError(t, f.c.Enqueue(ctx, victim))
	require.ElementsMatch(t, []int64{other.topicID, victim}, enqueued(t, f.c))
	for _, run := range []string{"run-7", "run-8", "run-9"} {
		recordFailure(t, f.c, victim, run, msgBad)
	}
	require.Equal(t, []int64{other.topicID}, enqueued(t, f.c), "a quarantined topic is not listed")
	queued, err := f.c.IsQueued(ctx, victim)
	require.NoError(t, err)
	require.True(t, queued, "its queue row stays")
	_, err = f.c.ClearQuarantine(ctx, victim)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{other.topicID, victim}, enqueued(t, f.c), "listed again once cleared")

	_, err = f.c.RecordFailure(ctx, 999999, "run-x", inputErr, msgBad, 0)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = f.c.RecordFailure(ctx, victim, "run-x", "", msgBad, 0)
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

// TestQuarantineResetBySuccess: a committed optimization ends the streak and the quarantine.
func TestQuarantineResetBySuccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	rec, err := f.c.RecordFailure(ctx, f.topicID, "run-1", inputErr, msgBad, 1)
	require.NoError(t, err)
	require.NotNil(t, rec.QuarantinedAt, "threshold 1 quarantines at once")

	l := f.lease(t, "run-ok") // a manual optimization of a quarantined topic
	f.planAndStage(t, l, 1)
	_, err = f.c.Commit(ctx, f.topicID, "run-ok", acceptAll)
	require.NoError(t, err)
	_, err = f.c.FailureOf(ctx, f.topicID)
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func TestClearAllQuarantines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	g := f.withTopic(t, "run_1/sensors/gps", 1)
	h := f.withTopic(t, "run_1/sensors/cam", 1)
	for _, run := range []string{"r1", "r2", "r3"} {
		recordFailure(t, f.c, f.topicID, run, msgBad)
		recordFailure(t, f.c, g.topicID, run, msgBad)
	}
	recordFailure(t, f.c, h.topicID, "r1", msgBad)
	n, err := f.c.ClearAllQuarantines(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	rec, err := f.c.FailureOf(ctx, h.topicID)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Failures, "streaks below the threshold are kept")
}

// TestQuarantinedInScope: the scoped count and listing of quarantined topics keep only the
// topics inside the scope (by topic locator or by sequence locator); the zero Scope keeps all.
func TestQuarantinedInScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1) // run_1/sensors/imu in sequence run_1
	inRun1 := f.topicID
	seq2, err := f.c.CreateSequence(ctx, "two1")
	require.NoError(t, err)
	inTwo1, err := f.c.CreateTopic(ctx, seq2, "two1/sensors/gps", "tp_OLD_two1", "parquet")
	require.NoError(t, err)
	f.withTopic(t, "run_1/sensors/camera", 1) // in scope "topic outside", never failed
	for _, id := range []int64{inRun1, inTwo1} {
		for _, run := range []string{"r1", "r2", "r3"} {
			recordFailure(t, f.c, id, run, msgBad)
		}
	}
	ids := func(recs []catalog.FailureRecord) []int64 {
		out := []int64{}
		for _, r := range recs {
			out = append(out, r.TopicID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		scope policy.Scope
		want  []int64
	}{
		{"all", policy.Scope{}, []int64{inRun1, inTwo1}},
		{"topic outside", policy.Scope{Topics: []string{"run_1/sensors/camera"}}, []int64{}},
		{"topic inside", policy.Scope{Topics: []string{"two1/sensors/gps"}}, []int64{inTwo1}},
		{"sequence", policy.Scope{Sequences: []string{"two1"}}, []int64{inTwo1}},
		{"other sequence", policy.Scope{Sequences: []string{"run_1"}}, []int64{inRun1}},
		{"topic and sequence", policy.Scope{Sequences: []string{"two1"}, Topics: []string{"run_1/sensors/imu"}}, []int64{inRun1, inTwo1}},
	} {
		n, err := f.c.QuarantinedCountIn(ctx, tc.scope)
		require.NoError(t, err, tc.name)
		require.Equal(t, len(tc.want), n, tc.name)
		recs, err := f.c.QuarantinedIn(ctx, tc.scope, 0, 10)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, ids(recs), tc.name)
	}
}
