// Package topicread reads the rows of a time window of a topic, in the topic's global order,
// fetching only what the window needs: the catalog's chunk ranges pick the chunks, their block
// indexes (Qbeast's block ranges) pick the row groups, and of those only the pages that hold the
// window (through the page index: the timestamp column index and every column's offset index) or,
// for a chunk without a page index, the whole blocks are read from the store, with each chunk's
// footer. It works on any mix of L0 and L1 chunks:
// blocks are merged by the same rule as every compaction (timestamp_ns, then catalog order, then
// stored row), so a reader sees the rows in the order one full rewrite would store them.
package topicread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

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
	// Pages is how many of those blocks were read by their pages (through the page index)
	// rather than whole.
	Pages int
	// BytesFetched are the bytes read from the store: footers, page indexes, pages and blocks.
	BytesFetched int64
	// Requests counts the range reads.
	Requests int
	Elapsed  time.Duration
}

// footerGuess is how many bytes at the end of an object are fetched to find its footer in one
// request; a longer footer costs a second request.
const footerGuess = 16 << 10

// batchRows is the size of the record batches a window is read in.
const batchRows = 64 << 10

// batchBytes bounds those batches in bytes of data (a row larger than it is read alone).
const batchBytes = 8 << 20

// pageGap is the largest gap between two byte ranges of pages that is fetched with them, to make
// one request of two.
const pageGap = 4 << 10

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

// block is one row group to read, whole or the rows of some of its pages: a merge input.
type block struct {
	chunk    *openChunk
	rowGroup int
	// ranges are the bytes to fetch: the row group's column chunks, or the pages holding rows
	// [rowsFrom, rowsTo) of it when rowsTo > 0.
	ranges           []parquetio.ByteRange
	rowsFrom, rowsTo int64
	firstRow         int64    // stored index of its first row read in the chunk
	first            plan.Key // a lower bound of its first key in the window
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
	if err := rs.fetchFooter(c, from, to); err != nil {
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
	// The row groups whose timestamp range overlaps the window, and the page indexes of those
	// that have one, fetched together.
	type candidate struct {
		rg       int
		firstRow int64
		lo       int64
	}
	var candidates []candidate
	var indexes []parquetio.ByteRange
	var firstRow int64
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
			candidates = append(candidates, candidate{rg: rg, firstRow: firstRow, lo: lo})
			if pi := pc.PageIndex(rg); pi.Timestamps != nil {
				indexes = append(indexes, *pi.Timestamps, *pi.Offsets)
			}
		}
		firstRow += fb.Rows
	}
	if err := rs.fetchAll(parquetio.Coalesce(indexes, pageGap)); err != nil {
		return err
	}
	// The timestamp pages of the candidates that have a page index, fetched together: they
	// narrow the rows to read to those of the window.
	var tsPages []parquetio.ByteRange
	for _, cand := range candidates {
		ts, paged, err := pc.TimestampPages(cand.rg, from, to)
		if err != nil {
			return err
		}
		if paged {
			tsPages = append(tsPages, ts.Ranges...)
			rs.strict = true
		}
	}
	if err := rs.fetchAll(parquetio.Coalesce(tsPages, pageGap)); err != nil {
		return err
	}
	added := false
	for _, cand := range candidates {
		fb := blocks[cand.rg]
		blk := block{chunk: oc, rowGroup: cand.rg, firstRow: cand.firstRow,
			ranges: []parquetio.ByteRange{{Offset: fb.Offset, Length: fb.Length}}}
		wp, paged, err := pc.WindowPages(ctx, cand.rg, from, to, pageGap)
		if err != nil {
			return err
		}
		if paged {
			if wp.From >= wp.To {
				continue // no page of the row group overlaps the window
			}
			blk.ranges, blk.rowsFrom, blk.rowsTo = wp.Ranges, wp.From, wp.To
			blk.firstRow += wp.From
		}
		blk.first = plan.Key{Ts: cand.lo, Input: len(r.blocks), Row: blk.firstRow}
		r.blocks = append(r.blocks, blk)
		added = true
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
	if err := blk.chunk.objects.fetchAll(blk.ranges); err != nil {
		return nil, fmt.Errorf("chunk %s: %w", blk.chunk.key, err)
	}
	r.stats.Blocks++
	if blk.rowsTo > 0 {
		r.stats.Pages++
	}
	run := compaction.RunSpec{RowGroups: []int{blk.rowGroup}, FirstRow: blk.firstRow, Sorted: false,
		RowsFrom: blk.rowsFrom, RowsTo: blk.rowsTo}
	return compaction.RunSource(ctx, blk.chunk.chunk, blk.chunk.key, run, parquetio.Limits{Rows: batchRows, Bytes: batchBytes}, r.mem, func() {
		for _, rg := range blk.ranges {
			blk.chunk.objects.drop(rg.Offset)
		}
	})
}

// rangeSet serves ReadAt from byte ranges of one object fetched with range reads: the footer, the
// page indexes and the blocks or pages being read. A read that starts inside a range and runs
// past its end gets the range's bytes and io.EOF; a read outside every range is fetched on
// demand (and counted), unless the set is strict (a chunk read by its pages: arrow-go's readers
// read ahead past a page, and a page the page index does not name must not be fetched; a reader
// of rows that gets less than it asked for fails, parquetio.Chunk.RowsOf).
type rangeSet struct {
	ctx    context.Context
	b      *blob.Bucket
	key    string
	size   int64
	stats  *Stats
	strict bool

	mu     sync.Mutex
	ranges []fetched
	off    int64 // Read/Seek position
}

// fetched is one range read from the store.
type fetched struct {
	off int64
	buf []byte
}

func (s *rangeSet) Size() int64 { return s.size }

// InMemory says that reads are served from memory (parquetio reads column chunks through a small
// buffer instead of copying each one).
func (s *rangeSet) InMemory() bool { return true }

// fetchAll reads every range not yet in the set, several at once.
func (s *rangeSet) fetchAll(ranges []parquetio.ByteRange) error {
	g, _ := errgroup.WithContext(s.ctx)
	g.SetLimit(parallelFetches)
	for _, r := range ranges {
		g.Go(func() error { return s.fetch(r.Offset, r.Length) })
	}
	return g.Wait()
}

// parallelFetches is how many range reads of one chunk are in flight at once.
const parallelFetches = 8

// fetch reads [off, off+n) into the set unless a fetched range holds it.
func (s *rangeSet) fetch(off, n int64) error {
	if off < 0 || n <= 0 || off+n > s.size {
		return fmt.Errorf("byte range [%d, %d) outside the object of %d bytes", off, off+n, s.size)
	}
	s.mu.Lock()
	i := s.find(off)
	have := i >= 0 && s.ranges[i].off+int64(len(s.ranges[i].buf)) >= off+n
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
	s.ranges = append(s.ranges, fetched{off: off, buf: buf})
	s.stats.BytesFetched += n
	s.stats.Requests++
	return nil
}

// find returns the index of the range that holds byte off and reaches furthest past it, or -1.
// The caller holds mu.
func (s *rangeSet) find(off int64) int {
	best := -1
	for i, r := range s.ranges {
		end := r.off + int64(len(r.buf))
		if r.off <= off && off < end && (best < 0 || end > s.ranges[best].off+int64(len(s.ranges[best].buf))) {
			best = i
		}
	}
	return best
}

// drop forgets the range fetched at off.
func (s *rangeSet) drop(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ranges = slices.DeleteFunc(s.ranges, func(r fetched) bool { return r.off == off })
}

// fetchFooter fetches the object's tail, footer included. When the catalog knows the length of
// chunk c's footer, it fetches exactly that, together with the page indexes its block index
// names for the blocks that overlap the window [from, to), in one round of requests; otherwise
// the last footerGuess bytes, and more if the footer is longer.
func (s *rangeSet) fetchFooter(c catalog.Chunk, from, to int64) error {
	if s.size < 12 {
		return errors.New("not a Parquet file: too small")
	}
	if c.FooterBytes >= 12 && c.FooterBytes <= s.size {
		ranges := []parquetio.ByteRange{{Offset: s.size - c.FooterBytes, Length: c.FooterBytes}}
		for _, b := range c.Blocks {
			if b.MinTs == nil || *b.MinTs >= to || *b.MaxTs < from || b.TsIndex == nil || b.OffsetIndex == nil {
				continue
			}
			for _, r := range []*catalog.ByteRange{b.TsIndex, b.OffsetIndex} {
				if r.Offset >= 0 && r.Length > 0 && r.Offset+r.Length <= s.size {
					ranges = append(ranges, parquetio.ByteRange{Offset: r.Offset, Length: r.Length})
				}
			}
		}
		return s.fetchAll(parquetio.Coalesce(ranges, pageGap))
	}
	n := min(s.size, footerGuess)
	if err := s.fetch(s.size-n, n); err != nil {
		return err
	}
	var trailer [8]byte
	if _, err := s.ReadAt(trailer[:], s.size-8); err != nil {
		return err
	}
	footer := int64(binary.LittleEndian.Uint32(trailer[:4]))
	if need := footer + 8; need > n && need <= s.size {
		return s.fetch(s.size-need, need)
	}
	return nil
}

func (s *rangeSet) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	if i := s.find(off); i >= 0 {
		r := s.ranges[i]
		n := copy(p, r.buf[off-r.off:])
		s.mu.Unlock()
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	strict := s.strict
	s.mu.Unlock()
	if off >= s.size || strict {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.size-off)
	if err := s.fetch(off, n); err != nil {
		return 0, err
	}
	s.mu.Lock()
	i := s.find(off)
	buf := s.ranges[i].buf
	s.ranges = slices.Delete(s.ranges, i, i+1)
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
