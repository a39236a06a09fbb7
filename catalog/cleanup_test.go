package catalog_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
)

// ageMarks moves every mark's marked_at back by d on the database clock.
func ageMarks(t *testing.T, c *catalog.Catalog, d time.Duration) {
	t.Helper()
	_, err := c.Pool.Exec(context.Background(),
		`UPDATE cleanup_marks SET marked_at = marked_at - $1 * interval '1 microsecond'`, d.Microseconds())
	require.NoError(t, err)
}

func markedPrefixes(t *testing.T, c *catalog.Catalog) []string {
	t.Helper()
	marks, err := c.CleanupMarks(context.Background(), "", 1000)
	require.NoError(t, err)
	out := []string{}
	for _, m := range marks {
		out = append(out, m.Prefix)
	}
	return out
}

func duePrefixes(t *testing.T, c *catalog.Catalog, retention time.Duration) []string {
	t.Helper()
	marks, err := c.DueMarks(context.Background(), retention, "", 1000)
	require.NoError(t, err)
	out := []string{}
	for _, m := range marks {
		out = append(out, m.Prefix)
	}
	return out
}

// deleter counts calls of a DeleteMarked callback and fails them while err is set.
type deleter struct {
	calls int
	err   error
}

func (d *deleter) delete(context.Context) error {
	d.calls++
	return d.err
}

// TestCleanupReferences: prefixes referenced by a topic, a live lease or a plan are never marked;
// an unreferenced one is marked once, and is due by the database clock after the retention.
func TestCleanupReferences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	topic, err := f.c.Topic(ctx, f.topicID)
	require.NoError(t, err)
	live := f.lease(t, "run-live") // queue row: tp_NEW_run-live

	// A plan whose queue row is gone still references its prefix.
	p := f.withTopic(t, "run_1/sensors/gps", 2)
	planned := p.lease(t, "run-planned")
	p.planAndStage(t, planned, 1)
	_, err = f.c.Pool.Exec(ctx, `DELETE FROM optimization_queue WHERE topic_id = $1`, p.topicID)
	require.NoError(t, err)

	listed := []string{topic.DataPrefix, live.FreshPrefix, planned.FreshPrefix, "tp_ORPHAN"}
	res, err := f.c.MarkUnreferenced(ctx, listed)
	require.NoError(t, err)
	require.Equal(t, catalog.MarkResult{Referenced: 3, Marked: 1}, res)
	require.Equal(t, []string{"tp_ORPHAN"}, markedPrefixes(t, f.c))

	res, err = f.c.MarkUnreferenced(ctx, listed)
	require.NoError(t, err)
	require.Equal(t, catalog.MarkResult{Referenced: 3, Pending: 1}, res, "a mark is set once")

	// Retention by the database clock.
	require.Equal(t, []string{"tp_ORPHAN"}, duePrefixes(t, f.c, 0))
	require.Empty(t, duePrefixes(t, f.c, time.Hour))
	pending, err := f.c.PendingMarks(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 1, pending)
	var d deleter
	out, err := f.c.DeleteMarked(ctx, "tp_ORPHAN", time.Hour, d.delete)
	require.NoError(t, err)
	require.Equal(t, catalog.DeleteNotDue, out)
	require.Zero(t, d.calls)

	ageMarks(t, f.c, 2*time.Hour)
	require.Equal(t, []string{"tp_ORPHAN"}, duePrefixes(t, f.c, time.Hour))
	require.Empty(t, duePrefixes(t, f.c, 3*time.Hour))
	pending, err = f.c.PendingMarks(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, pending)

	// A failed deletion keeps the mark; a successful one removes it.
	d.err = errors.New("store unreachable")
	_, err = f.c.DeleteMarked(ctx, "tp_ORPHAN", time.Hour, d.delete)
	require.ErrorContains(t, err, "tp_ORPHAN")
	require.ErrorContains(t, err, "store unreachable")
	require.Equal(t, []string{"tp_ORPHAN"}, markedPrefixes(t, f.c))
	d.err = nil
	out, err = f.c.DeleteMarked(ctx, "tp_ORPHAN", time.Hour, d.delete)
	require.NoError(t, err)
	require.Equal(t, catalog.DeleteDone, out)
	require.Equal(t, 2, d.calls)
	require.Empty(t, markedPrefixes(t, f.c))
	out, err = f.c.DeleteMarked(ctx, "tp_ORPHAN", 0, d.delete)
	require.NoError(t, err)
	require.Equal(t, catalog.DeleteNotMarked, out)
	require.Equal(t, 2, d.calls)

	// Referenced prefixes are never due even when asked directly.
	_, err = f.c.DeleteMarked(ctx, topic.DataPrefix, 0, d.delete)
	require.NoError(t, err)
	require.Equal(t, 2, d.calls)

	_, err = f.c.DueMarks(ctx, -time.Second, "", 10)
	require.ErrorIs(t, err, catalog.ErrInvalid)
}

// TestCleanupAfterCommit: the old prefix of an optimized topic becomes unreferenced at commit;
// the fresh prefix stays referenced as the topic's data prefix.
func TestCleanupAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 3)
	topic, err := f.c.Topic(ctx, f.topicID)
	require.NoError(t, err)
	l := f.lease(t, "run-1")
	f.planAndStage(t, l, 1)
	_, err = f.c.Commit(ctx, f.topicID, "run-1", acceptAll)
	require.NoError(t, err)

	res, err := f.c.MarkUnreferenced(ctx, []string{topic.DataPrefix, l.FreshPrefix})
	require.NoError(t, err)
	require.Equal(t, catalog.MarkResult{Referenced: 1, Marked: 1}, res)
	require.Equal(t, []string{topic.DataPrefix}, markedPrefixes(t, f.c))
}

// TestCleanupUnmarksReferencedAgain: a marked prefix that is referenced again loses its mark,
// whether the next listing or the deletion decision finds the reference; in particular a lease
// stored before the first write of its prefix keeps that prefix from being deleted.
func TestCleanupUnmarksReferencedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	seq, err := f.c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)

	res, err := f.c.MarkUnreferenced(ctx, []string{"tp_A", "tp_B", "tp_LEASED"})
	require.NoError(t, err)
	require.Equal(t, 3, res.Marked)

	// Seen by the next listing.
	_, err = f.c.CreateTopic(ctx, seq, "run_1/again", "tp_A", "parquet")
	require.NoError(t, err)
	res, err = f.c.MarkUnreferenced(ctx, []string{"tp_A", "tp_B"})
	require.NoError(t, err)
	require.Equal(t, catalog.MarkResult{Referenced: 1, Unmarked: 1, Pending: 1}, res)

	// Seen by the deletion decision.
	_, err = f.c.CreateTopic(ctx, seq, "run_1/again2", "tp_B", "parquet")
	require.NoError(t, err)
	var d deleter
	out, err := f.c.DeleteMarked(ctx, "tp_B", 0, d.delete)
	require.NoError(t, err)
	require.Equal(t, catalog.DeleteUnmarked, out)
	require.Zero(t, d.calls)

	// A lease that took the prefix between marking and deleting.
	_, err = f.c.AcquireLease(ctx, f.topicID, "optimize/x", "run-x", "tp_LEASED")
	require.NoError(t, err)
	out, err = f.c.DeleteMarked(ctx, "tp_LEASED", 0, d.delete)
	require.NoError(t, err)
	require.Equal(t, catalog.DeleteUnmarked, out)
	require.Zero(t, d.calls)
	require.Empty(t, markedPrefixes(t, f.c))
}

// TestCleanupConcurrentDeletes: two cleanups deciding on the same prefix delete it once.
func TestCleanupConcurrentDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	_, err := f.c.MarkUnreferenced(ctx, []string{"tp_GONE"})
	require.NoError(t, err)

	var mu sync.Mutex
	calls := 0
	inside := make(chan struct{})
	release := make(chan struct{})
	slow := func(context.Context) error {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(inside)
			<-release
		}
		return nil
	}
	outcomes := make([]catalog.DeleteOutcome, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { outcomes[0], errs[0] = f.c.DeleteMarked(ctx, "tp_GONE", 0, slow) })
	<-inside
	wg.Go(func() { outcomes[1], errs[1] = f.c.DeleteMarked(ctx, "tp_GONE", 0, slow) })
	close(release)
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, []catalog.DeleteOutcome{catalog.DeleteDone, catalog.DeleteNotMarked}, outcomes)
	require.Equal(t, 1, calls)
}
