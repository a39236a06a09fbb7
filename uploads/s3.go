package uploads

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
)

// s3Scheme is the URL scheme of gocloud.dev/blob/s3blob.
const s3Scheme = "s3"

// s3Store is the Store of an S3 bucket: its incomplete multipart uploads, reached through the
// *s3.Client the gocloud bucket exposes (blob.Bucket.As).
type s3Store struct {
	client *s3.Client
	bucket string
	// keyPrefix is the store URL's prefix= parameter: the bucket's keys start with it, the
	// blob.Bucket's do not.
	keyPrefix string
}

func openS3(b *blob.Bucket, u *url.URL) (Store, error) {
	var client *s3.Client
	if !b.As(&client) {
		return nil, fmt.Errorf("uploads: store %s://%s is not an S3 bucket", u.Scheme, u.Host)
	}
	return &s3Store{client: client, bucket: u.Host, keyPrefix: u.Query().Get("prefix")}, nil
}

func (s *s3Store) Kind() string { return "S3 multipart upload" }

// ListPage lists with ListMultipartUploads, paging by key: a truncated page ends before the
// uploads of its last key, which the next page (key marker = the key before it) lists again
// whole. Only a page that holds nothing but uploads of one key (at least limit of them) goes on
// with an upload-ID marker. Key markers alone keep working when the caller aborts the uploads
// it was given, and some S3 servers (Versity gateway v1.8.0) refuse the upload-ID marker they
// returned themselves.
func (s *s3Store) ListPage(ctx context.Context, keyPrefix string, after Cursor, limit int) ([]Upload, Cursor, bool, error) {
	if limit <= 0 {
		return nil, after, false, fmt.Errorf("uploads: list page of %d uploads: limit must be positive", limit)
	}
	in := &s3.ListMultipartUploadsInput{
		Bucket:     aws.String(s.bucket),
		Prefix:     aws.String(s.keyPrefix + keyPrefix),
		MaxUploads: aws.Int32(int32(min(limit, 1000))),
	}
	if after.Key != "" {
		in.KeyMarker = aws.String(s.keyPrefix + after.Key)
		if after.ID != "" {
			in.UploadIdMarker = aws.String(after.ID)
		}
	}
	out, err := s.client.ListMultipartUploads(ctx, in)
	if err != nil {
		return nil, after, false, fmt.Errorf("list multipart uploads of bucket %s under %q: %w", s.bucket, s.keyPrefix+keyPrefix, err)
	}
	page := make([]Upload, 0, len(out.Uploads))
	for _, mu := range out.Uploads {
		page = append(page, Upload{Key: strings.TrimPrefix(aws.ToString(mu.Key), s.keyPrefix),
			ID: aws.ToString(mu.UploadId), Initiated: aws.ToTime(mu.Initiated)})
	}
	if !aws.ToBool(out.IsTruncated) {
		return page, Cursor{}, true, nil
	}
	if len(page) == 0 {
		return nil, after, false, fmt.Errorf("list multipart uploads of bucket %s: the store returned an empty truncated page", s.bucket)
	}
	last := page[len(page)-1]
	firstOfLast := len(page) - 1
	for firstOfLast > 0 && page[firstOfLast-1].Key == last.Key {
		firstOfLast--
	}
	if firstOfLast == 0 {
		return page, Cursor{Key: last.Key, ID: last.ID}, false, nil
	}
	page = page[:firstOfLast]
	return page, Cursor{Key: page[len(page)-1].Key}, false, nil
}

// Abort sums the sizes of the upload's parts (ListParts), then aborts it
// (AbortMultipartUpload). NoSuchUpload from either is "gone already".
func (s *s3Store) Abort(ctx context.Context, u Upload) (int64, error) {
	key := aws.String(s.keyPrefix + u.Key)
	var bytes int64
	parts := s3.NewListPartsPaginator(s.client, &s3.ListPartsInput{
		Bucket: aws.String(s.bucket), Key: key, UploadId: aws.String(u.ID)})
	for parts.HasMorePages() {
		page, err := parts.NextPage(ctx)
		if isNoSuchUpload(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("list parts of upload %s of %s: %w", u.ID, u.Key, err)
		}
		for _, p := range page.Parts {
			bytes += aws.ToInt64(p.Size)
		}
	}
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: key, UploadId: aws.String(u.ID)})
	if isNoSuchUpload(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("abort upload %s of %s: %w", u.ID, u.Key, err)
	}
	return bytes, nil
}

func isNoSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return true
	}
	var apiErr interface{ ErrorCode() string }
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload"
}
