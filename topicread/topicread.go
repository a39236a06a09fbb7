// Package topicread reads the rows of a time window of a topic, in the topic's global order,
// fetching only what the window needs: the catalog's chunk ranges pick the chunks, their block
// indexes (Qbeast's block ranges) pick the row groups, and only the byte ranges of those blocks
// (plus each chunk's footer) are read from the store. It works on any mix of L0 and L1 chunks:
// blocks are merged by the same rule as every compaction (timestamp_ns, then catalog order, then
// stored row), so a reader sees the rows in the order one full rewrite would store them.
package topicread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/merge"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/verify"
)

// Stats says what a window read did.
type Stats struct {
	Rows   int64 // rows in the window
	Chunks int   // chunks whose blocks were read
	Blocks int   // blocks (row groups) read
	// BytesFetched are the bytes read from the store: footers and blocks.
	BytesFetched int64
	Elapsed      time.Duration
}

// footerGuess is how many bytes at the end of an object are fetched to find its footer in one
// request; a longer footer costs a second request.
const footerGuess = 16 << 10

// batchRows is the size of the record batches a window is read in.
const batchRows = 64 << 10

// batchBytes bounds those batches in bytes of data (a row larger than it is read alone).
const batchBytes = 8 << 20

// Window reads the rows of the topic with from <= timestamp_ns < to (nanoseconds; rows with a
// null timestamp are in no window) and hands them to emit in the topic's global order, in
// batches valid only during the call. The chunk list is one consistent catalog snapshot, so a
// concurrent compaction or append never makes a row appear twice or go missing: objects of
// replaced chunks stay in the store for the cleanup's retention period. Errors: catalog.ErrNotFound
// for an unknown topic; store and decoding errors name the chunk.
func Window(ctx context.Context, cat *catalog.Catalog, b *blob.Bucket, locator string, from, to int64,
	mem memory.Allocator, emit func(arrow.RecordBatch) error) (Stats, error) {
	start := time.Now()
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var st Stats
	topic, err := cat.TopicByLocator(ctx, locator)
	if err != nil {
		return st, err
	}
	chunks, err := cat.Chunks(ctx, topic.ID)
	if err != nil {
		return st, err
	}
	if to <= from {
		return st, nil
	}
	r := &reader{bucket: b, mem: mem, stats: &st}
	defer r.close()
	for pos, c := range chunks {
		if c.RowCount == 0 || c.MinTimestampNs == nil || *c.MinTimestampNs >= to || *c.MaxTimestampNs < from {
			continue
		}
		if err := r.addChunk(ctx, pos, c, from, to); err != nil {
			return st, fmt.Errorf("topic %s: chunk %s: %w", locator, c.ObjectKey, err)
		}
	}
	rng := merge.Range{Lo: &plan.Key{Ts: from}, Hi: &plan.Key{Ts: to}}
	for i, blk := range r.blocks {
		rng.Inputs = append(rng.Inputs, i)
		rng.First = append(rng.First, blk.first)
		rng.ChunkIDs = append(rng.ChunkIDs, blk.chunk.id)
	}
	var read verify.Digest
	err = merge.Merge(ctx, rng, r.open, func(rec arrow.RecordBatch, lo, hi int64) error {
		part := rec.NewSlice(lo, hi)
		defer part.Release()
		st.Rows += hi - lo
		return emit(part)
	}, &read, nil)
	st.Elapsed = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("topic %s: %w", locator, err)
	}
	return st, nil
}

// reader holds the chunks and blocks of one window read.
type reader struct {
	bucket *blob.Bucket
	mem    memory.Allocator
	stats  *Stats
	chunks []*openChunk
	blocks []block // merge inputs, in catalog order then row group order
}

// openChunk is a chunk whose footer was fetched; its blocks are fetched when their source opens.
type openChunk struct {
	id      int64
	key     string
	objects *rangeSet
	chunk   *parquetio.Chunk
}

// block is one row group to read: a merge input.
type block struct {
	chunk    *openChunk
	rowGroup int
	offset   int64 // byte range of its column chunks
	length   int64
	firstRow int64    // stored index of its first row in the chunk
	first    plan.Key // a lower bound of its first key in the window
}

func (r *reader) close() {
	for _, c := range r.chunks {
		c.chunk.Close()
	}
}

// addChunk fetches the footer of chunk c (catalog position pos) and adds its blocks that may hold
// rows of the window.
func (r *reader) addChunk(ctx context.Context, pos int, c catalog.Chunk, from, to int64) error {
	rs := &rangeSet{ctx: ctx, b: r.bucket, key: c.ObjectKey, size: c.SizeBytes, stats: r.stats}
	if err := rs.fetchFooter(); err != nil {
		return err
	}
	pc, err := parquetio.Open(rs, r.mem)
	if err != nil {
		return err
	}
	oc := &openChunk{id: c.ID, key: c.ObjectKey, objects: rs, chunk: pc}
	r.chunks = append(r.chunks, oc)
	blocks, err := pc.Blocks()
	if err != nil {
		return err
	}
	known := c.Blocks
	if len(known) != len(blocks) {
		known = nil // no block index in the catalog (an ingested chunk): the footer's statistics
	}
	var firstRow int64
	added := false
	for rg, fb := range blocks {
		minTs, maxTs, nulls := fb.MinTs, fb.MaxTs, fb.Nulls
		if known != nil {
			minTs, maxTs, nulls = known[rg].MinTs, known[rg].MaxTs, known[rg].Nulls
		}
		unknown := minTs == nil && nulls != fb.Rows
		if fb.Rows > 0 && (unknown || (minTs != nil && *minTs < to && *maxTs >= from)) {
			lo := from
			if minTs != nil {
				lo = max(lo, *minTs)
			}
			r.blocks = append(r.blocks, block{chunk: oc, rowGroup: rg, offset: fb.Offset, length: fb.Length,
				firstRow: firstRow, first: plan.Key{Ts: lo, Input: len(r.blocks), Row: firstRow}})
			added = true
		}
		firstRow += fb.Rows
	}
	if added {
		r.stats.Chunks++
	}
	_ = pos // catalog order is the order of the chunks, and so of the blocks' input positions
	return nil
}

// open fetches block i's bytes and returns it as a merge source (its rows sorted in memory when
// they are not stored in key order).
func (r *reader) open(ctx context.Context, i int) (merge.Source, error) {
	blk := r.blocks[i]
	if err := blk.chunk.objects.fetch(blk.offset, blk.length); err != nil {
		return nil, fmt.Errorf("chunk %s: %w", blk.chunk.key, err)
	}
	r.stats.Blocks++
	run := compaction.RunSpec{RowGroups: []int{blk.rowGroup}, FirstRow: blk.firstRow, Sorted: false}
	return compaction.RunSource(ctx, blk.chunk.chunk, blk.chunk.key, run, parquetio.Limits{Rows: batchRows, Bytes: batchBytes}, r.mem, func() {
		blk.chunk.objects.drop(blk.offset)
	})
}

// rangeSet serves ReadAt from byte ranges of one object fetched with range reads: the footer and
// the blocks being read. A read outside them is fetched on demand (and counted).
type rangeSet struct {
	ctx   context.Context
	b     *blob.Bucket
	key   string
	size  int64
	stats *Stats

	mu     sync.Mutex
	ranges map[int64][]byte // by offset
	off    int64            // Read/Seek position
}

func (s *rangeSet) Size() int64 { return s.size }

// InMemory says that reads are served from memory (parquetio reads column chunks through a small
// buffer instead of copying each one).
func (s *rangeSet) InMemory() bool { return true }

// fetch reads [off, off+n) into the set.
func (s *rangeSet) fetch(off, n int64) error {
	if off < 0 || n <= 0 || off+n > s.size {
		return fmt.Errorf("byte range [%d, %d) outside the object of %d bytes", off, off+n, s.size)
	}
	s.mu.Lock()
	_, have := s.ranges[off]
	s.mu.Unlock()
	if have {
		return nil
	}
	rd, err := s.b.NewRangeReader(s.ctx, s.key, off, n, nil)
	if err != nil {
		return err
	}
	defer rd.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ranges == nil {
		s.ranges = map[int64][]byte{}
	}
	s.ranges[off] = buf
	s.stats.BytesFetched += n
	return nil
}

// drop forgets the range fetched at off.
func (s *rangeSet) drop(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ranges, off)
}

// fetchFooter fetches the object's tail, footer included.
func (s *rangeSet) fetchFooter() error {
	if s.size < 12 {
		return errors.New("not a Parquet file: too small")
	}
	n := min(s.size, footerGuess)
	if err := s.fetch(s.size-n, n); err != nil {
		return err
	}
	s.mu.Lock()
	tail := s.ranges[s.size-n]
	s.mu.Unlock()
	footer := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if need := footer + 8; need > n && need <= s.size {
		return s.fetch(s.size-need, need)
	}
	return nil
}

func (s *rangeSet) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	offsets := make([]int64, 0, len(s.ranges))
	for o := range s.ranges {
		offsets = append(offsets, o)
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] > offsets[j] })
	for _, o := range offsets {
		buf := s.ranges[o]
		if o <= off && off+int64(len(p)) <= o+int64(len(buf)) {
			n := copy(p, buf[off-o:])
			s.mu.Unlock()
			return n, nil
		}
	}
	s.mu.Unlock()
	if off >= s.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.size-off)
	if err := s.fetch(off, n); err != nil {
		return 0, err
	}
	s.mu.Lock()
	buf := s.ranges[off]
	delete(s.ranges, off)
	s.mu.Unlock()
	copied := copy(p, buf)
	if int64(copied) < int64(len(p)) {
		return copied, io.EOF
	}
	return copied, nil
}

func (s *rangeSet) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.off)
	s.off += int64(n)
	return n, err
}

func (s *rangeSet) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative offset %d", offset)
	}
	s.off = offset
	return offset, nil
}
