package activities_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/memblob"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/store"
)

func smallTopic() []ingest.TopicSpec {
	return []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 2, RowsPerChunk: 10}}
}

func exists(t *testing.T, a *activities.Activities, key string) bool {
	t.Helper()
	ok, err := a.Bucket.Exists(context.Background(), key)
	require.NoError(t, err)
	return ok
}

// leasedTopic sets up a small topic with a live lease of the run "run-live" and returns the
// activities, a context of that run, the topic and the lease.
func leasedTopic(t *testing.T) (*activities.Activities, context.Context, catalog.Topic, activities.LeaseResult) {
	t.Helper()
	a, ts := setup(t, 0, smallTopic())
	ctx := activities.WithRun(context.Background(), "test-owner", "run-live")
	topic, err := a.Catalog.Topic(ctx, ts[0].TopicID)
	require.NoError(t, err)
	lease, err := a.Lease(ctx, activities.LeaseInput{TopicID: ts[0].TopicID})
	require.NoError(t, err)
	return a, ctx, topic, lease
}

// TestCleanupActivities: MarkPrefixes pages through the store's top-level prefixes and marks
// only the unreferenced one; DeleteMarkedPrefixes keeps it during the retention and deletes it
// with retention 0, keeping the topic's prefix and the live lease's fresh prefix.
func TestCleanupActivities(t *testing.T) {
	a, ctx, topic, lease := leasedTopic(t)
	freshKey := store.ChunkKey(lease.FreshPrefix, 0)
	orphan := store.NewPrefix()
	for _, k := range []string{freshKey, store.ChunkKey(orphan, 0), store.MetadataKey(orphan), "README.txt", "other/x"} {
		require.NoError(t, a.Bucket.WriteAll(ctx, k, []byte("x"), nil))
	}

	marked, err := a.MarkPrefixes(ctx, activities.MarkPrefixesInput{PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, activities.MarkPrefixesResult{Prefixes: 3, Referenced: 2, Marked: 1, Ignored: 2}, marked)

	del, err := a.DeleteMarkedPrefixes(ctx, activities.DeleteMarkedPrefixesInput{RetentionDuration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, activities.DeleteMarkedPrefixesResult{Pending: 1}, del)
	require.True(t, exists(t, a, store.MetadataKey(orphan)))

	del, err = a.DeleteMarkedPrefixes(ctx, activities.DeleteMarkedPrefixesInput{PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, activities.DeleteMarkedPrefixesResult{Deleted: 1, DeletedObjects: 2}, del)
	require.False(t, exists(t, a, store.MetadataKey(orphan)))
	require.False(t, exists(t, a, store.ChunkKey(orphan, 0)))
	require.True(t, exists(t, a, freshKey))
	require.True(t, exists(t, a, store.MetadataKey(topic.DataPrefix)))
	require.True(t, exists(t, a, "README.txt"))

	// A deletion the store refuses is counted with its prefix; the mark stays for a later pass.
	_, err = a.Catalog.MarkUnreferenced(ctx, []string{"tp_not-a-ulid"})
	require.NoError(t, err)
	del, err = a.DeleteMarkedPrefixes(ctx, activities.DeleteMarkedPrefixesInput{})
	require.NoError(t, err)
	require.Equal(t, 1, del.DeleteFailed)
	require.Len(t, del.Errors, 1)
	require.Contains(t, del.Errors[0], "prefix tp_not-a-ulid")
	marks, err := a.Catalog.CleanupMarks(ctx, "", 10)
	require.NoError(t, err)
	require.Len(t, marks, 1)

	_, err = a.DeleteMarkedPrefixes(ctx, activities.DeleteMarkedPrefixesInput{RetentionDuration: -time.Second})
	require.ErrorContains(t, err, "negative")
}

// TestReleaseCountsInputFailures: Release counts input failures toward quarantine once per run;
// other failures do not count. The third failure quarantines the topic and EnqueueTopics reports
// it instead of queuing it.
func TestReleaseCountsInputFailures(t *testing.T) {
	a, ts := setup(t, 0, smallTopic())
	id := ts[0].TopicID
	fail := func(token, errType string) activities.ReleaseResult {
		t.Helper()
		ctx := activities.WithRun(context.Background(), "test-owner", token)
		_, err := a.Lease(ctx, activities.LeaseInput{TopicID: id})
		require.NoError(t, err)
		in := activities.ReleaseInput{TopicID: id, Reason: "read-sort failed", ErrorType: errType,
			Error: "topic acts/imu: chunk tp_X/data/00001.parquet: not a Parquet file"}
		res, err := a.Release(ctx, in)
		require.NoError(t, err)
		again, err := a.Release(ctx, in) // a retried Release
		require.NoError(t, err)
		require.Equal(t, res.Failures, again.Failures)
		return res
	}
	require.Equal(t, 1, fail("run-1", activities.ErrTypeInput).Failures)
	require.Zero(t, fail("run-2", activities.ErrTypeLeaseLost).Failures, "a lost lease does not count")
	require.Zero(t, fail("run-3", "").Failures, "a cancellation does not count")
	require.Equal(t, 2, fail("run-4", activities.ErrTypeInput).Failures)
	res := fail("run-5", activities.ErrTypeInput)
	require.Equal(t, 3, res.Failures)
	require.True(t, res.Quarantined)

	enq, err := a.EnqueueTopics(context.Background(), activities.EnqueueTopicsInput{})
	require.NoError(t, err)
	require.Equal(t, 0, enq.Added)
	require.Equal(t, 1, enq.Quarantined)
	require.Len(t, enq.QuarantinedTopics, 1)
	q := enq.QuarantinedTopics[0]
	require.Equal(t, ts[0].Locator, q.Locator)
	require.Equal(t, 3, q.Failures)
	require.Equal(t, activities.ErrTypeInput+": topic acts/imu: chunk tp_X/data/00001.parquet: not a Parquet file", q.Reason)
}

// TestDeleteTempFiles: temporary files of unfinished writes are deleted once older than the
// retention, in a topic's current prefix as in an orphan one; younger ones, and those under a
// live lease's fresh prefix, are kept; objects and entries outside "tp_<ULID>/" prefixes are
// never touched. A store other than file:// has none.
func TestDeleteTempFiles(t *testing.T) {
	a, ctx, topic, lease := leasedTopic(t)
	u, err := url.Parse(a.StoreURL)
	require.NoError(t, err)
	orphan := store.NewPrefix()
	old := time.Now().Add(-2 * time.Hour)
	put := func(key string, modified time.Time) string {
		path := filepath.Join(u.Path, filepath.FromSlash(key))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("partial"), 0o644))
		require.NoError(t, os.Chtimes(path, modified, modified))
		return key
	}
	stale := put(store.ChunkKey(topic.DataPrefix, 0)+".18ece603137b8b02.tmp", old)
	orphaned := put(store.ChunkKey(orphan, 3)+".18ece603137b8b03.tmp", old)
	young := put(store.MetadataKey(topic.DataPrefix)+".18ece603137b8b04.tmp", time.Now())
	inFlight := put(store.ChunkKey(lease.FreshPrefix, 0)+".18ece603137b8b05.tmp", old)
	outside := put("other/x.18ece603137b8b06.tmp", old)
	notTemp := put(store.ChunkKey(orphan, 4)+".tmp", old)

	res, err := a.DeleteTempFiles(ctx, activities.DeleteTempFilesInput{RetentionDuration: time.Hour, PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, activities.DeleteTempFilesResult{Found: 4, Deleted: 2, Pending: 1, InFlight: 1}, res)
	require.False(t, exists(t, a, stale))
	require.False(t, exists(t, a, orphaned))
	for _, k := range []string{young, inFlight, outside, notTemp, store.ChunkKey(topic.DataPrefix, 0), store.MetadataKey(topic.DataPrefix)} {
		require.True(t, exists(t, a, k), "%s deleted", k)
	}

	res, err = a.DeleteTempFiles(ctx, activities.DeleteTempFilesInput{})
	require.NoError(t, err)
	require.Equal(t, activities.DeleteTempFilesResult{Found: 2, Deleted: 1, InFlight: 1}, res, "retention 0: any age")
	require.False(t, exists(t, a, young))

	mem := &activities.Activities{Catalog: a.Catalog, Bucket: memblob.OpenBucket(nil)}
	require.NoError(t, mem.Bucket.WriteAll(ctx, store.ChunkKey(orphan, 0)+".18ece603137b8b07.tmp", []byte("x"), nil))
	res, err = mem.DeleteTempFiles(ctx, activities.DeleteTempFilesInput{})
	require.NoError(t, err)
	require.Equal(t, activities.DeleteTempFilesResult{}, res, "only file:// stores leave temporary files")

	_, err = a.DeleteTempFiles(ctx, activities.DeleteTempFilesInput{RetentionDuration: -time.Second})
	require.ErrorContains(t, err, "negative")
}
