//go:build storeopt_faults

package faults

import (
	"context"
	"errors"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"

	"github.com/storeopt/storeopt/store"
)

func init() {
	blob.DefaultURLMux().RegisterBucket(StoreScheme, storeOpener{})
}

// storeOpener opens "faultfile:///dir" as the file store at dir wrapped by faultStore.
type storeOpener struct{}

func (storeOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	inner := *u
	inner.Scheme = fileblob.Scheme
	b, err := store.OpenFileURL(ctx, &inner)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(&faultStore{b: b}), nil
}

// faultStore is a blob driver that delegates to another bucket, hitting StoreRead before every
// read and StoreWrite before every write.
type faultStore struct{ b *blob.Bucket }

var _ driver.Bucket = (*faultStore)(nil)

func (s *faultStore) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (s *faultStore) As(i any) bool                          { return s.b.As(i) }
func (s *faultStore) ErrorAs(error, any) bool                { return false }
func (s *faultStore) Close() error                           { return s.b.Close() }

func (s *faultStore) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("fault store: signed URLs are not supported")
}

func (s *faultStore) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := Hit(ctx, StoreRead); err != nil {
		return nil, err
	}
	a, err := s.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{CacheControl: a.CacheControl, ContentDisposition: a.ContentDisposition,
		ContentEncoding: a.ContentEncoding, ContentLanguage: a.ContentLanguage, ContentType: a.ContentType,
		Metadata: a.Metadata, CreateTime: a.CreateTime, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (s *faultStore) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := hitAll(ctx, StoreRead, StoreList); err != nil {
		return nil, err
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000 // the driver's choice; blob.ListPage insists on a size
	}
	objs, next, err := s.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (s *faultStore) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	if err := Hit(ctx, StoreRead); err != nil {
		return nil, err
	}
	r, err := s.b.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return faultReader{r}, nil
}

type faultReader struct{ r *blob.Reader }

func (r faultReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r faultReader) Close() error               { return r.r.Close() }
func (r faultReader) As(any) bool                { return false }
func (r faultReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// NewTypedWriter hits StoreWrite when the upload is committed (Close): a failing hit aborts the
// upload, so the object is not written, as when a store refuses an upload.
func (s *faultStore) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	wctx, cancel := context.WithCancel(ctx)
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{BufferSize: opts.BufferSize, CacheControl: opts.CacheControl,
		ContentDisposition: opts.ContentDisposition, ContentEncoding: opts.ContentEncoding,
		ContentLanguage: opts.ContentLanguage, ContentType: contentType, ContentMD5: opts.ContentMD5,
		Metadata: opts.Metadata, IfNotExist: opts.IfNotExist})
	if err != nil {
		cancel()
		return nil, err
	}
	return &faultWriter{ctx: ctx, w: w, cancel: cancel}, nil
}

type faultWriter struct {
	ctx    context.Context
	w      *blob.Writer
	cancel context.CancelFunc
}

func (w *faultWriter) Write(p []byte) (int, error) { return w.w.Write(p) }

func (w *faultWriter) Close() error {
	defer w.cancel()
	if err := Hit(w.ctx, StoreWrite); err != nil {
		w.cancel()
		_ = w.w.Close() // aborted by the cancel: nothing is written
		return err
	}
	return w.w.Close()
}

func (s *faultStore) Copy(ctx context.Context, dstKey, srcKey string, _ *driver.CopyOptions) error {
	if err := Hit(ctx, StoreWrite); err != nil {
		return err
	}
	return s.b.Copy(ctx, dstKey, srcKey, nil)
}

func (s *faultStore) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	if err := hitAll(ctx, StoreWrite, StoreDelete); err != nil {
		return err
	}
	return s.b.Delete(ctx, key)
}

// hitAll hits each point in turn and returns the first error.
func hitAll(ctx context.Context, points ...string) error {
	for _, p := range points {
		if err := Hit(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
