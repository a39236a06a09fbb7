// Package store names and reaches the objects of a topic in the object store (gocloud.dev/blob):
// data prefixes "tp_<ULID>", chunks "<prefix>/data/NNNNN.parquet" and "<prefix>/metadata.json".
// Every key it builds or accepts is checked to stay inside its prefix, so a hostile catalog value
// can never address an object outside the topic.
package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
	"gocloud.dev/blob"
)

// MetadataFile is the name of a topic's metadata document inside its prefix.
const MetadataFile = "metadata.json"

var prefixRE = regexp.MustCompile(`^tp_[0-9A-HJKMNP-TV-Z]{26}$`)

var (
	entropyMu sync.Mutex
	entropy   = ulid.Monotonic(rand.Reader, 0)
)

// NewPrefix returns a fresh data prefix "tp_<ULID>" (time-ordered, unique within the process and,
// by its 80 random bits, across processes).
func NewPrefix() string {
	entropyMu.Lock()
	defer entropyMu.Unlock()
	return "tp_" + ulid.MustNew(ulid.Timestamp(time.Now()), entropy).String()
}

// CheckPrefix returns an error unless prefix has the form "tp_<ULID>".
func CheckPrefix(prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("data prefix %q is not of the form tp_<ULID>", sanitize(prefix))
	}
	return nil
}

// ChunkKey returns the object key of chunk ordinal (0-based) under prefix:
// "<prefix>/data/NNNNN.parquet" (5 digits, more past 99999).
func ChunkKey(prefix string, ordinal int) string {
	return fmt.Sprintf("%s/data/%05d.parquet", prefix, ordinal)
}

// MetadataKey returns "<prefix>/metadata.json".
func MetadataKey(prefix string) string { return prefix + "/" + MetadataFile }

// CheckKey returns an error unless key is a well-formed object key strictly inside prefix: valid
// UTF-8, no empty, "." or ".." segment, no leading or trailing "/", no backslash or control bytes,
// not the temporary file of an unfinished write (IsTempKey).
func CheckKey(prefix, key string) error {
	if err := CheckPrefix(prefix); err != nil {
		return err
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("object key %q is not valid UTF-8", sanitize(key))
	}
	if !strings.HasPrefix(key, prefix+"/") {
		return fmt.Errorf("object key %q is outside data prefix %s", sanitize(key), prefix)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("object key %q has an empty, \".\" or \"..\" segment", sanitize(key))
		}
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("object key %q contains a control character or backslash", sanitize(key))
		}
	}
	if IsTempKey(key) {
		return fmt.Errorf("object key %q is the temporary file of an unfinished write, not an object", sanitize(key))
	}
	return nil
}

// sanitize shortens s and replaces invalid UTF-8 so it can be quoted in an error message.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// inMemoryLimit is the object size up to which OpenObject reads the whole object into memory
// (one request); larger objects are read with one range request per ReadAt.
const inMemoryLimit = 16 << 20

// Object is an object opened for random access (it satisfies parquet.ReaderAtSeeker).
type Object interface {
	io.ReaderAt
	io.ReadSeeker
	Size() int64
}

// ErrNotExist is wrapped by OpenObject when the object does not exist.
var ErrNotExist = errors.New("object does not exist")

// OpenObject opens key for random access. Objects up to 16 MiB are read whole into memory;
// larger ones are served by range reads. Returns an error wrapping ErrNotExist when key is absent.
func OpenObject(ctx context.Context, b *blob.Bucket, key string) (Object, error) {
	return OpenObjectWith(ctx, b, key, nil)
}

// Allocator hands out and takes back the buffers objects are read into (an Arrow
// memory.Allocator satisfies it).
type Allocator interface {
	Allocate(size int) []byte
	Free(b []byte)
}

// OpenObjectWith is OpenObject with the in-memory copy taken from mem (nil = Go heap); the
// caller calls Release on the result when done, which gives the buffer back to mem.
func OpenObjectWith(ctx context.Context, b *blob.Bucket, key string, mem Allocator) (*OpenedObject, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrapNotExist(key, err)
	}
	defer r.Close()
	size := r.Size()
	if size > inMemoryLimit {
		return &OpenedObject{Object: &rangeObject{ctx: ctx, b: b, key: key, size: size}}, nil
	}
	var data []byte
	if mem != nil {
		data = mem.Allocate(int(size))
	} else {
		data = make([]byte, size)
	}
	n, err := io.ReadFull(r, data)
	countRead(key, int64(n))
	if err != nil {
		if mem != nil {
			mem.Free(data)
		}
		return nil, fmt.Errorf("object %s: read %d bytes: %w", key, size, err)
	}
	return &OpenedObject{Object: &memObject{Reader: bytes.NewReader(data)}, mem: mem, buf: data}, nil
}

// bytesRead counts the bytes this process read from object stores through this package.
var bytesRead atomic.Int64

// BytesRead returns the bytes this process has read from object stores through OpenObject,
// OpenObjectWith and OpenFooter so far (a counter for metrics and for tests of what a
// compaction reads).
func BytesRead() int64 { return bytesRead.Load() }

// readObserver, when set, is told of every read counted by BytesRead: the object key and bytes.
var readObserver atomic.Pointer[func(key string, n int64)]

// ObserveReads calls observe with the key and byte count of every object read counted by
// BytesRead until the returned function is called (for tests of which objects a compaction
// reads; observe must be safe for concurrent use).
func ObserveReads(observe func(key string, n int64)) (stop func()) {
	readObserver.Store(&observe)
	return func() { readObserver.Store(nil) }
}

// countRead counts n bytes read from key.
func countRead(key string, n int64) {
	bytesRead.Add(n)
	if o := readObserver.Load(); o != nil {
		(*o)(key, n)
	}
}

// OpenedObject is an Object whose in-memory copy, if any, goes back to its allocator on Release.
type OpenedObject struct {
	Object
	mem Allocator
	buf []byte
}

// InMemory reports whether the object was read whole into memory (parquetio.InMemory).
func (o *OpenedObject) InMemory() bool {
	m, ok := o.Object.(*memObject)
	return ok && m.InMemory()
}

// Release frees the in-memory copy; the object must not be read afterwards.
func (o *OpenedObject) Release() {
	if o.mem != nil && o.buf != nil {
		o.mem.Free(o.buf)
	}
	o.buf = nil
}

// OpenFooter opens key for reading its footer: every read is a range read, nothing is loaded
// whole.
func OpenFooter(ctx context.Context, b *blob.Bucket, key string) (Object, error) {
	attrs, err := b.Attributes(ctx, key)
	if err != nil {
		return nil, wrapNotExist(key, err)
	}
	return &rangeObject{ctx: ctx, b: b, key: key, size: attrs.Size}, nil
}

func wrapNotExist(key string, err error) error {
	if isNotExist(err) {
		return fmt.Errorf("object %s: %w", key, ErrNotExist)
	}
	return fmt.Errorf("object %s: %w", key, err)
}

type memObject struct{ *bytes.Reader }

func (m *memObject) Size() int64 { return m.Reader.Size() }

// InMemory reports that every byte is in memory (parquetio.InMemory).
func (m *memObject) InMemory() bool { return true }

// rangeObject serves ReadAt with range reads; Read/Seek keep their own offset.
type rangeObject struct {
	ctx  context.Context
	b    *blob.Bucket
	key  string
	size int64
	off  int64
}

func (r *rangeObject) Size() int64 { return r.size }

func (r *rangeObject) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	if off+n > r.size {
		n = r.size - off
	}
	rd, err := r.b.NewRangeReader(r.ctx, r.key, off, n, nil)
	if err != nil {
		return 0, wrapNotExist(r.key, err)
	}
	defer rd.Close()
	got, err := io.ReadFull(rd, p[:n])
	countRead(r.key, int64(got))
	if err == nil && int64(got) < int64(len(p)) {
		err = io.EOF
	}
	return got, err
}

func (r *rangeObject) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.off)
	r.off += int64(n)
	return n, err
}

func (r *rangeObject) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative offset")
	}
	r.off = offset
	return offset, nil
}

// DeletePrefix deletes every object under "<prefix>/", temporary files of unfinished writes
// (IsTempKey) included, and returns how many it deleted. The prefix must be of the form
// tp_<ULID>.
func DeletePrefix(ctx context.Context, b *blob.Bucket, prefix string) (int, error) {
	if err := CheckPrefix(prefix); err != nil {
		return 0, err
	}
	it := b.List(&blob.ListOptions{Prefix: prefix + "/"})
	n := 0
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("list %s/: %w", prefix, err)
		}
		if obj.IsDir {
			continue
		}
		if err := b.Delete(ctx, obj.Key); err != nil && !isNotExist(err) {
			return n, fmt.Errorf("delete %s: %w", obj.Key, err)
		}
		n++
	}
}
