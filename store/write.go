package store

import (
	"context"
	"sync/atomic"

	"gocloud.dev/blob"
)

// bytesWritten counts the bytes of the objects this process wrote through this package.
var bytesWritten atomic.Int64

// BytesWritten returns the bytes of the objects this process has written through NewWriter and
// WriteAll so far, counted when an object is complete (its Close succeeded): an aborted or
// failed write counts nothing. A process-wide counter, for metrics and tests.
func BytesWritten() int64 { return bytesWritten.Load() }

// Writer writes one object (blob.Writer) and counts its bytes in BytesWritten once Close
// succeeds. Not safe for concurrent use, like blob.Writer.
type Writer struct {
	w *blob.Writer
	n int64
}

// NewWriter starts the object key in b (blob.Bucket.NewWriter: cancelling ctx aborts the write,
// nothing becomes visible). Errors are b's, unwrapped.
func NewWriter(ctx context.Context, b *blob.Bucket, key string, opts *blob.WriterOptions) (*Writer, error) {
	w, err := b.NewWriter(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w}, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// Close completes the object (or, when the writer's context was cancelled, aborts it) and, when
// that succeeds, adds the object's bytes to BytesWritten.
func (w *Writer) Close() error {
	if err := w.w.Close(); err != nil {
		return err
	}
	bytesWritten.Add(w.n)
	return nil
}

// WriteAll writes p as the object key in b (blob.Bucket.WriteAll) and counts it in BytesWritten.
func WriteAll(ctx context.Context, b *blob.Bucket, key string, p []byte, opts *blob.WriterOptions) error {
	if err := b.WriteAll(ctx, key, p, opts); err != nil {
		return err
	}
	bytesWritten.Add(int64(len(p)))
	return nil
}
