package store

import (
	"context"
	"fmt"
	"io"

	"github.com/zeebo/xxh3"
	"gocloud.dev/blob"
)

// Copy copies the object src to dst within b as the store copies objects (blob.Bucket.Copy: a
// server-side copy on S3), overwriting dst, and counts dst's bytes in BytesWritten.
func Copy(ctx context.Context, b *blob.Bucket, dst, src string) error {
	if err := b.Copy(ctx, dst, src, nil); err != nil {
		return wrapNotExist(src, err)
	}
	attrs, err := b.Attributes(ctx, dst)
	if err != nil {
		return fmt.Errorf("object %s: attributes after the copy: %w", dst, err)
	}
	bytesWritten.Add(attrs.Size)
	return nil
}

// checksumBuffer is the read buffer of Checksum.
const checksumBuffer = 1 << 20

// ChecksumMemory is what Checksum holds while it reads an object, bytes.
const ChecksumMemory = checksumBuffer

// Checksum reads the object key whole, as the store holds it, and returns the 64-bit XXH3 hash of
// its bytes and their number (counted in BytesRead). The object is streamed, never held whole.
func Checksum(ctx context.Context, b *blob.Bucket, key string) (sum uint64, n int64, err error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return 0, 0, wrapNotExist(key, err)
	}
	defer r.Close()
	h := xxh3.New()
	n, err = io.CopyBuffer(h, r, make([]byte, checksumBuffer))
	countRead(key, n)
	if err != nil {
		return 0, n, fmt.Errorf("object %s: read %d bytes: %w", key, n, err)
	}
	return h.Sum64(), n, nil
}
