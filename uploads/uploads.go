// Package uploads lists and aborts abandoned uploads: uploads a writer began in the object store
// and never finished. A store keeps them outside its object listing, so deleting a prefix's
// objects does not remove them: an incomplete S3 multipart upload (a worker killed while it
// uploaded an output chunk, an ingester that crashed) keeps its parts, and its storage bill,
// until it is aborted. The cleanup routine aborts them after the retention period.
//
// Each kind of store that has such uploads implements Store; Open picks it from the store URL.
// Kinds without them (mem://) have none.
package uploads

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"gocloud.dev/blob"
)

// Upload is one unfinished upload.
type Upload struct {
	// Key is the key of the object the upload would create, as the blob.Bucket names it (without
	// the URL's prefix= parameter).
	Key string
	// ID is the store's upload ID.
	ID string
	// Initiated is when the upload began, by the store's clock.
	Initiated time.Time
}

// Cursor is where a listing resumes: after the upload (Key, ID) in key order. The zero Cursor
// starts at the beginning.
type Cursor struct {
	Key string
	ID  string
}

// Store lists and aborts the unfinished uploads of one kind of object store.
type Store interface {
	// Kind names the kind of upload in reports and logs, e.g. "S3 multipart upload".
	Kind() string
	// ListPage returns up to limit unfinished uploads whose key starts with keyPrefix, in key
	// order after the cursor, the cursor of the next page and whether the listing is done. A
	// page may hold fewer than limit uploads before the end; every upload is listed once even
	// when the caller aborts uploads between pages. limit must be positive. Errors are the
	// store's (retryable).
	ListPage(ctx context.Context, keyPrefix string, after Cursor, limit int) (page []Upload, next Cursor, done bool, err error)
	// Abort discards the upload and everything it holds, and returns the bytes it held as far as
	// the store reports them. An upload that is gone already (completed or aborted meanwhile)
	// is not an error: it returns 0 bytes.
	Abort(ctx context.Context, u Upload) (bytes int64, err error)
}

// Open returns the Store of bucket b, which was opened from storeURL, or nil when that kind of
// store keeps no unfinished uploads. It fails when storeURL is not a URL or when b is not the
// kind of bucket its URL names.
func Open(b *blob.Bucket, storeURL string) (Store, error) {
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, fmt.Errorf("uploads: store URL is not a URL")
	}
	switch u.Scheme {
	case s3Scheme:
		return openS3(b, u)
	default:
		return nil, nil
	}
}
