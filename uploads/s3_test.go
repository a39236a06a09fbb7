package uploads_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/uploads"
)

// listAll pages through every upload under keyPrefix, limit at a time.
func listAll(t *testing.T, st uploads.Store, keyPrefix string, limit int) []uploads.Upload {
	t.Helper()
	var all []uploads.Upload
	var after uploads.Cursor
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "listing does not end")
		page, next, done, err := st.ListPage(context.Background(), keyPrefix, after, limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), limit)
		all = append(all, page...)
		if done {
			return all
		}
		after = next
	}
}

func keys(us []uploads.Upload) []string {
	var ks []string
	for _, u := range us {
		ks = append(ks, u.Key)
	}
	return ks
}

// TestS3Uploads lists the unfinished multipart uploads of a real S3 server (the Versity gateway)
// page by page under a key prefix, aborts one (its part's bytes reported, its parts gone, a
// second abort harmless), and sees the same uploads through a store URL with prefix=.
func TestS3Uploads(t *testing.T) {
	srv := testenv.StartS3(t)
	b, storeURL := srv.NewBucket(t)
	st, err := uploads.Open(b, storeURL)
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Equal(t, "S3 multipart upload", st.Kind())
	c, bucket := testenv.S3Client(t, b, storeURL)
	startUpload := func(key string, partBytes int) string {
		return testenv.StartMultipartUpload(t, b, storeURL, key, partBytes)
	}

	before := time.Now().Add(-time.Minute)
	a := startUpload("tp_A/data/00000.parquet", 1<<20)
	startUpload("tp_A/data/00000.parquet", 1000) // a retry of the same chunk
	startUpload("tp_B/data/00001.parquet", 1000)
	startUpload("tp_C/metadata.json", 1000)
	startUpload("tp_D/data/00000.parquet", 1000)
	startUpload("other/x", 1000)

	want := []string{"tp_A/data/00000.parquet", "tp_A/data/00000.parquet", "tp_B/data/00001.parquet",
		"tp_C/metadata.json", "tp_D/data/00000.parquet"}
	// Pages larger than the most uploads of one key (2) page by key alone: the gateway refuses
	// the upload-ID marker it returns (Versity v1.8.0), which only more than limit uploads of
	// one key need.
	for limit := 3; limit <= 6; limit++ {
		require.Equal(t, want, keys(listAll(t, st, "tp_", limit)), "pages of %d", limit)
	}
	all := listAll(t, st, "tp_", 1000)
	for _, u := range all {
		require.NotEmpty(t, u.ID)
		require.True(t, u.Initiated.After(before), "initiated %v", u.Initiated)
	}
	require.Len(t, listAll(t, st, "", 1000), 6)

	var first uploads.Upload
	for _, u := range all {
		if u.ID == a {
			first = u
		}
	}
	n, err := st.Abort(context.Background(), first)
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), n, "bytes of the aborted upload's part")
	n, err = st.Abort(context.Background(), first)
	require.NoError(t, err, "an upload aborted already is not an error")
	require.Zero(t, n)
	require.Len(t, listAll(t, st, "tp_", 10), 4)
	_, err = c.ListParts(context.Background(), &s3.ListPartsInput{Bucket: aws.String(bucket),
		Key: aws.String(first.Key), UploadId: aws.String(first.ID)})
	require.Error(t, err, "the aborted upload's parts are gone")

	// A store URL with prefix= names keys without the prefix and lists only under it.
	startUpload("sub/tp_C/data/00000.parquet", 1000)
	pb, err := app.OpenStore(context.Background(), storeURL+"&prefix=sub/")
	require.NoError(t, err)
	defer pb.Close()
	pst, err := uploads.Open(pb, storeURL+"&prefix=sub/")
	require.NoError(t, err)
	sub := listAll(t, pst, "tp_", 10)
	require.Equal(t, []string{"tp_C/data/00000.parquet"}, keys(sub))
	n, err = pst.Abort(context.Background(), sub[0])
	require.NoError(t, err)
	require.Equal(t, int64(1000), n)
}

// TestOpenOtherStores: stores without unfinished uploads have no Store.
func TestOpenOtherStores(t *testing.T) {
	b, err := app.OpenStore(context.Background(), "mem://")
	require.NoError(t, err)
	defer b.Close()
	st, err := uploads.Open(b, "mem://")
	require.NoError(t, err)
	require.Nil(t, st)
	_, err = uploads.Open(b, "s3://bucket?region=us-east-1")
	require.ErrorContains(t, err, "not an S3 bucket")
}
