package app

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob" // mem:// URLs
	"gocloud.dev/blob/s3blob"    // s3:// URLs

	"github.com/storeopt/storeopt/store"
)

// CheckStoreExists refuses a file:// store whose directory does not exist: a worker or a reader
// pointed at the wrong directory would otherwise find no topic's objects. (OpenStore creates the
// directory, which ingestion wants; nothing that only reads must.)
func CheckStoreExists(storeURL string) error {
	u, err := url.Parse(storeURL)
	if err != nil || u.Scheme != fileblob.Scheme {
		return nil
	}
	if _, err := os.Stat(u.Path); err != nil {
		return fmt.Errorf("store URL %s: directory does not exist (give the store the catalog's topics were ingested into)", RedactURL(storeURL))
	}
	return nil
}

// storeCheckTimeout bounds checkStoreReachable's one listing call.
const storeCheckTimeout = 15 * time.Second

// checkStoreReachable refuses an s3:// store the worker cannot list (one key, within
// storeCheckTimeout): an endpoint where nothing listens, a missing bucket or refused credentials
// stop the worker at start with the redacted URL, instead of failing every activity later.
func checkStoreReachable(ctx context.Context, b *blob.Bucket, storeURL string) error {
	u, err := url.Parse(storeURL)
	if err != nil || u.Scheme != s3blob.Scheme {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	ok, err := b.IsAccessible(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("store URL %s: not reachable: %s", RedactURL(storeURL), redactErr(err, storeURL))
	case !ok:
		return fmt.Errorf("store URL %s: bucket does not exist", RedactURL(storeURL))
	}
	return nil
}

// OpenStore opens the object store named by a gocloud.dev/blob URL:
//
//   - file:///abs/dir — a directory, created (with parents) when missing, opened by
//     store.OpenFileURL: each object's temporary file is written next to it (fileblob's
//     no_tmp_dir, whatever the URL says), so a store on another filesystem than $TMPDIR works;
//     no .attrs sidecar files unless the URL has metadata=;
//   - mem:// — an in-memory bucket (tests only: it is empty and private to this process);
//   - s3://bucket?region=…&endpoint=…&use_path_style=true&disable_https=true — S3 or MinIO, with
//     credentials from the usual AWS environment variables.
//
// Errors name the URL through RedactURL, never with its secrets.
func OpenStore(ctx context.Context, storeURL string) (*blob.Bucket, error) {
	u, err := url.Parse(storeURL)
	if err != nil {
		return nil, fmt.Errorf("store URL %s: %v", RedactURL(storeURL), "not a URL")
	}
	if u.Scheme == fileblob.Scheme {
		dir := u.Path
		if dir == "" {
			return nil, fmt.Errorf("store URL %s: no directory (want file:///absolute/dir)", RedactURL(storeURL))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("store URL %s: create directory: %w", RedactURL(storeURL), err)
		}
	}
	var b *blob.Bucket
	if u.Scheme == fileblob.Scheme {
		b, err = store.OpenFileURL(ctx, u)
	} else {
		b, err = blob.OpenBucket(ctx, storeURL)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %s", RedactURL(storeURL), redactErr(err, storeURL))
	}
	return b, nil
}
