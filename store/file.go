package store

import (
	"context"
	"net/url"
	"os"
	"regexp"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// fileOpener opens file:// stores. Defaults (a URL's query parameters override them, as
// fileblob documents):
//   - NoTempDir: fileblob writes every object to a temporary file and renames it into place; by
//     default the temporary file is in os.TempDir, and when that is on another filesystem than
//     the store (a data disk, a mounted volume, /dev/shm) every write fails with "invalid
//     cross-device link". Next to the final object the rename is always on one filesystem, and
//     atomic. This default holds whatever the URL says: no_tmp_dir cannot be turned off.
//   - Metadata skip: no .attrs sidecar files, whose MD5 over every written byte cost about 8 % of a
//     rewrite's CPU (metadata= in the URL keeps them).
var fileOpener = &fileblob.URLOpener{Options: fileblob.Options{
	NoTempDir: true,
	Metadata:  fileblob.MetadataDontWrite,
}}

// OpenFileURL opens a file:// URL (any query parameter fileblob accepts: metadata, create_dir,
// dir_file_mode, base_url, secret_key_path, no_tmp_dir) with temporary files written next to
// their objects, "<key>.<random>.tmp" (see IsTempKey), and no .attrs sidecars unless the URL
// has metadata=. Every file:// store storeopt opens goes through here.
func OpenFileURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	return fileOpener.OpenBucketURL(ctx, u)
}

// tempKeyRE matches the name fileblob gives the temporary file of a write in progress: the
// object's key, a dot, the time in nanoseconds as hexadecimal, ".tmp".
var tempKeyRE = regexp.MustCompile(`\.[0-9a-f]+\.tmp$`)

// IsTempKey reports whether key is the temporary file of a file:// write that has not finished
// ("<key>.<random>.tmp", next to the object since OpenFileURL): a write in progress, or the
// leftover of a writer that was killed. Such a key is never a chunk or metadata; the cleanup
// routine deletes leftovers older than the retention period.
func IsTempKey(key string) bool { return tempKeyRE.MatchString(key) }

// IsFileStore reports whether b is a file:// store (fileblob) whose directory exists: the only
// kind of store whose writes leave temporary files behind when they are killed.
func IsFileStore(b *blob.Bucket) bool {
	var fi os.FileInfo
	return b.As(&fi)
}
