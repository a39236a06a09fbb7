package activities_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// storeFault checks that err is a non-retryable ErrTypeStore error whose message names the
// topic, the store (without its secret) and says contains, and returns its StoreFault.
func storeFault(t *testing.T, err error, locator, storeURL, secret, says string) activities.StoreFault {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.Error(t, err)
	require.True(t, errors.As(err, &appErr), "not an application error: %v", err)
	require.Equal(t, activities.ErrTypeStore, appErr.Type(), "%v", err)
	require.True(t, appErr.NonRetryable(), "%v", err)
	msg := appErr.Message()
	require.True(t, strings.HasPrefix(msg, "topic "+locator+": store "+storeURL+": "), "message %q", msg)
	require.Contains(t, msg, says)
	require.NotContains(t, msg, secret)
	var f activities.StoreFault
	require.NoError(t, appErr.Details(&f))
	require.Equal(t, storeURL, f.Store)
	return f
}

// secretStoreURL is the file:// URL of dir with a credential-like query parameter that fileblob
// ignores (not a parameter it knows: only used for the message), and that URL redacted.
func secretStoreURL(dir string) (raw, redacted, secret string) {
	secret = "TOPSECRET-4c1d"
	raw = "file://" + dir + "?token=" + secret
	return raw, "file://" + dir + "?token=xxxxx", secret
}

// TestWrongStoreIsAStoreFault: a worker pointed at a store without the topic's objects fails
// ReadSort at once with a non-retryable store error that names the store and says what to
// change, not with an input fault (which would count toward quarantine and blame the topic).
func TestWrongStoreIsAStoreFault(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 3, RowsPerChunk: 10}})
	empty, emptyURL := testenv.NewBucket(t)
	u, _ := url.Parse(emptyURL)
	raw, redacted, secret := secretStoreURL(u.Path)
	wrong := &activities.Activities{Catalog: a.Catalog, Bucket: empty, StoreURL: raw}
	ctx := activities.WithRun(context.Background(), "test-owner", "run-wrong-store")
	_, err := wrong.Lease(ctx, activities.LeaseInput{TopicID: ts[0].TopicID})
	require.NoError(t, err)
	_, err = wrong.ReadSort(ctx, activities.ReadSortInput{TopicID: ts[0].TopicID})
	f := storeFault(t, err, ts[0].Locator, redacted, secret, "--store-url")
	require.Equal(t, "none of the topic's objects is in the store", f.Cause)

	res, err := wrong.Release(ctx, activities.ReleaseInput{TopicID: ts[0].TopicID, Reason: "read-sort failed",
		ErrorType: activities.ErrTypeStore, Error: err.Error()})
	require.NoError(t, err)
	require.True(t, res.Released)
	require.Zero(t, res.Failures, "a store fault counts toward quarantine")
}

// TestReadOnlyStoreIsAStoreFault: on a store that cannot be written (a read-only bind mount as
// root, read-only modes otherwise) ReadSort plans, and WriteChunks fails at once with a
// non-retryable store error naming the cause; Release still releases the lease.
func TestReadOnlyStoreIsAStoreFault(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 3, RowsPerChunk: 10}})
	u, err := url.Parse(a.StoreURL)
	require.NoError(t, err)
	dir := u.Path
	raw, redacted, secret := secretStoreURL(dir)
	a.StoreURL = raw
	ctx := activities.WithRun(context.Background(), "test-owner", "run-read-only")
	id := ts[0].TopicID
	_, err = a.Lease(ctx, activities.LeaseInput{TopicID: id})
	require.NoError(t, err)
	errno := testenv.ReadOnlyDir(t, dir)
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id})
	require.NoError(t, err)
	require.Equal(t, 1, rs.Groups)
	_, err = a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: 0})
	f := storeFault(t, err, ts[0].Locator, redacted, secret, errno.Error())
	want := map[syscall.Errno]string{syscall.EROFS: "read-only file system", syscall.EACCES: "permission denied"}[errno]
	require.Equal(t, want, f.Cause)
	t.Logf("WriteChunks: %v", err)

	res, err := a.Release(ctx, activities.ReleaseInput{TopicID: id, Reason: "write-chunks failed",
		ErrorType: activities.ErrTypeStore, Error: err.Error()})
	require.NoError(t, err)
	require.True(t, res.Released)
	require.Zero(t, res.Failures)
}
