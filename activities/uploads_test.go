package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/uploads"
)

// TestAbortAbandonedUploads on a real S3 server (the Versity gateway): unfinished multipart
// uploads under a topic's prefix and under an orphan prefix are kept inside the retention and
// aborted after it, with the bytes of their parts; the upload under a live lease's fresh prefix
// (a running WriteChunks) is never aborted; keys outside "tp_<ULID>/" are left alone.
func TestAbortAbandonedUploads(t *testing.T) {
	srv := testenv.StartS3(t)
	b, storeURL := srv.NewBucket(t)
	st, err := uploads.Open(b, storeURL)
	require.NoError(t, err)
	cat := pgtest.NewCatalog(t)
	ts, err := ingest.Ingest(context.Background(), cat, b, ingest.Options{Sequence: "acts", Seed: 7, Topics: smallTopic()})
	require.NoError(t, err)
	a := &activities.Activities{Catalog: cat, Bucket: b, Uploads: st, MemoryPool: mempool.New(0)}
	ctx := activities.WithRun(context.Background(), "test-owner", "run-live")
	topic, err := cat.Topic(ctx, ts[0].TopicID)
	require.NoError(t, err)

	orphan := store.NewPrefix()
	other := ingestedTopic(t, a, "other")
	for key, size := range map[string]int{
		store.ChunkKey(topic.DataPrefix, 7): 1000, // e.g. a killed ingester's chunk
		store.ChunkKey(orphan, 0):           2000,
		store.MetadataKey(orphan):           300,
		"other/x":                           10,
		"tp_not-a-ulid/x":                   10,
	} {
		testenv.StartMultipartUpload(t, b, storeURL, key, size)
	}
	lease, err := a.Lease(ctx, activities.LeaseInput{TopicID: other})
	require.NoError(t, err)
	testenv.StartMultipartUpload(t, b, storeURL, store.ChunkKey(lease.FreshPrefix, 0), 50)

	res, err := a.AbortAbandonedUploads(ctx, activities.AbortUploadsInput{RetentionDuration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, activities.AbortUploadsResult{Kind: "S3 multipart upload", Found: 4, InFlight: 1, Pending: 3}, res)

	res, err = a.AbortAbandonedUploads(ctx, activities.AbortUploadsInput{PageSize: 2})
	require.NoError(t, err)
	require.Equal(t, activities.AbortUploadsResult{Kind: "S3 multipart upload", Found: 4, Aborted: 3,
		AbortedBytes: 3300, InFlight: 1}, res)
	var left []string
	for _, u := range testenv.MultipartUploads(t, b, storeURL) {
		left = append(left, aws.ToString(u.Key))
	}
	require.ElementsMatch(t, []string{"other/x", "tp_not-a-ulid/x", store.ChunkKey(lease.FreshPrefix, 0)}, left)

	_, err = a.AbortAbandonedUploads(ctx, activities.AbortUploadsInput{RetentionDuration: -time.Second})
	require.ErrorContains(t, err, "negative")

	// A store without unfinished uploads (file://, mem://) has nothing to do.
	a.Uploads = nil
	res, err = a.AbortAbandonedUploads(ctx, activities.AbortUploadsInput{})
	require.NoError(t, err)
	require.Equal(t, activities.AbortUploadsResult{}, res)
}

// ingestedTopic ingests a second small topic into a's catalog and store and returns its ID.
func ingestedTopic(t *testing.T, a *activities.Activities, sequence string) int64 {
	t.Helper()
	ts, err := ingest.Ingest(context.Background(), a.Catalog, a.Bucket, ingest.Options{Sequence: sequence, Seed: 8, Topics: smallTopic()})
	require.NoError(t, err)
	return ts[0].TopicID
}
