package parquetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/verify"
)

// Copied pages are kept only while they stay near the size a Writer's pages are: at most
// CopiedPageBytes uncompressed (a reader holds a page whole: 16 of a Writer's pages; an ingestion
// service writing a camera topic's chunk of 33 frames of 50 KB with arrow-go's defaults stores
// them in one page of 1.6 MB) and CopiedPageRows rows (the unit a window read fetches: 8 of a
// Writer's pages). A larger page makes its output rewritten (ErrNotCopyable).
const (
	CopiedPageBytes = 4 << 20
	CopiedPageRows  = 8 * DataPageRows
)

// ErrNotCopyable is returned by Assembler.Append when an input's pages cannot be copied after
// all: a page of another kind or encoding than the column chunk's metadata lists, a page larger
// than CopiedPageBytes or CopiedPageRows, a column chunk larger than copiedChunkBytes, or an
// input whose columns differ from the spec's. The output must be rewritten instead; nothing of
// it is valid.
var ErrNotCopyable = errors.New("pages cannot be copied")

// copiedChunkBytes is the largest column chunk the copy path reads (it holds a row group's
// copied column chunks whole until the row group is written); a larger one, valid but for a
// rewrite to read page by page, makes its output rewritten (a variable for tests).
var copiedChunkBytes int64 = maxPageHeaderBytes << 6

// Assembler writes one chunk of a layout by the copy path: whole row groups of input chunks
// appended in order, the pages of the copied leaf columns taken as stored (V1 or V2 data pages,
// each written as its kind: their headers rewritten, their bytes unchanged), the other leaf
// columns decoded and re-encoded, row groups cut between input row groups by WriterOptions' rows
// and bytes, the page index and footer written as a Writer writes them (the layout's schema elements and key/value pairs verbatim,
// timestamp_ns the sorting column). Read is the digest of what it took from the inputs
// (verify.AddPage, Hasher.AddColumnAt); CopyDigest takes the same digest of the stored chunk.
// The same inputs always give the same bytes.
type Assembler struct {
	enc    *Writer // encoders of the re-encoded columns; enc.sink is the chunk's writer
	out    *tellWriter
	layout *Layout
	spec   *CopySpec
	opts   WriterOptions
	props  *parquet.WriterProperties
	meta   *metadata.FileMetaDataBuilder
	pix    *metadata.PageIndexBuilder
	group  *assembledGroup
	rows   int64
	groups int
	pages  []int64 // pages of each leaf column copied so far
	hasher verify.Hasher
	// scratch receives decompressed pages (checked, then dropped).
	scratch []byte
	// words receives each copied page's header words for its digest.
	words pageWords
	// Read is the digest of the pages and values taken from the inputs.
	Read verify.Digest
	// CopiedBytes are the stored page bytes copied so far.
	CopiedBytes int64
}

// assembledGroup is the row group being assembled: its metadata builders, the copied columns'
// pages (held until the row group is written, column after column) and the re-encoded columns'
// writers (their pages buffered).
type assembledGroup struct {
	md      *metadata.RowGroupMetaDataBuilder
	cols    []*metadata.ColumnChunkMetaDataBuilder
	ci      []metadata.ColumnIndexBuilder
	oi      []*metadata.OffsetIndexBuilder
	pages   [][]copiedPage
	stats   []metadata.TypedStatistics // copied columns' statistics; nil once an input had none
	writers []file.ColumnChunkWriter
	cutters []*pageCutter
	bufs    [][]byte
	rows    int64
	bytes   int64
	faulty  bool
}

// copiedPage is one page taken as stored, with its first row in the row group and its
// statistics for the column index.
type copiedPage struct {
	rawPage
	firstRow int64
	stats    metadata.EncodedStatistics
}

// dataPage returns the page to write for p, data its stored bytes: a page of p's kind whose
// header says what p's says of how data is read (its statistics go to the column index).
func (p *copiedPage) dataPage(data []byte) file.DataPage {
	buf := memory.NewBufferBytes(data)
	cfg := file.DataPageConfig{Num: p.numValues, Encoding: parquet.Encoding(p.encoding), UncompressedSize: p.uncompressed,
		Stats: p.stats, FirstRowIndex: p.firstRow}
	if p.kind == pageDataV2 {
		return file.NewDataPageV2WithConfig(buf, p.v2.numNulls, p.v2.numRows, p.v2.defBytes, p.v2.repBytes, p.v2.compressed, cfg)
	}
	return file.NewDataPageV1WithConfig(buf, parquet.Encoding(p.defEnc), parquet.Encoding(p.repEnc), cfg)
}

// tellWriter counts the bytes written through it (arrow-go's page writers ask their position).
type tellWriter struct {
	w io.Writer
	n int64
}

func (t *tellWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	return n, err
}

func (t *tellWriter) Tell() int64 { return t.n }

// NewAssembler starts a chunk of layout l on w, assembled as spec says.
func NewAssembler(w io.Writer, l *Layout, spec *CopySpec, opts WriterOptions) (*Assembler, error) {
	opts.EncodeWorkers = 1
	opts, props, err := writerProperties(l, opts)
	if err != nil {
		return nil, err
	}
	if spec == nil || len(spec.Copied) != l.parquet.NumColumns() {
		return nil, errors.New("assemble chunk: no copy spec for the layout")
	}
	for i, col := range l.parquet.Columns() {
		if spec.Copied[i] {
			props = append(props, parquet.WithCompressionFor(col.Path(), spec.codec[i]),
				parquet.WithEncodingFor(col.Path(), spec.encoding[i]), parquet.WithDictionaryFor(col.Path(), false))
		}
	}
	sink := &footerSink{w: w}
	out := &tellWriter{w: sink}
	a := &Assembler{enc: newEncoders(l, opts, sink), out: out, layout: l, spec: spec, opts: opts,
		props: parquet.NewWriterProperties(props...), pages: make([]int64, len(spec.Copied))}
	a.meta = metadata.NewFileMetadataBuilder(l.parquet, a.props, l.kv)
	a.pix = &metadata.PageIndexBuilder{Schema: l.parquet}
	if _, err := out.Write([]byte("PAR1")); err != nil {
		return nil, err
	}
	return a, nil
}

// Rows returns the rows appended so far.
func (a *Assembler) Rows() int64 { return a.rows + a.groupRows() }

func (a *Assembler) groupRows() int64 {
	if a.group == nil {
		return 0
	}
	return a.group.rows
}

// RowGroups returns the row groups written so far (not counting the one being assembled).
func (a *Assembler) RowGroups() int { return a.groups }

// Append appends every row of row group rg of chunk c (of the spec's inputs) to the chunk; the
// row group being assembled is written first when c's rows would take it past the options'
// rows or bytes. c must stay open during the call only.
func (a *Assembler) Append(ctx context.Context, c *Chunk, rg int) (err error) {
	defer guard(&err, "assemble row group")
	n := c.RowGroupRows(rg)
	if n == 0 {
		return nil
	}
	b := c.RowGroupBytes(rg)
	if g := a.group; g != nil && (g.rows+n > a.opts.RowGroupRows || a.opts.RowGroupBytes > 0 && g.bytes+b > a.opts.RowGroupBytes) {
		if err := a.EndRowGroup(); err != nil {
			return err
		}
	}
	if a.group == nil {
		if err := a.startGroup(); err != nil {
			return err
		}
	}
	g := a.group
	md := c.pf.MetaData().RowGroup(rg)
	if md.NumColumns() != len(a.spec.Copied) {
		return inputErrorf("row group %d has %d columns, the topic %d", rg, md.NumColumns(), len(a.spec.Copied))
	}
	for leaf, copied := range a.spec.Copied {
		if cc, err := md.ColumnChunk(leaf); copied && (err != nil || !a.spec.copies(cc, leaf)) {
			return fmt.Errorf("row group %d column %d is stored otherwise than the copy spec's: %w", rg, leaf, ErrNotCopyable)
		}
	}
	// The re-encoded columns are decoded and encoded in a goroutine while this one reads the
	// copied columns' pages (the object's bytes only: c's readers serve one goroutine at a time);
	// the page statistics, read through c's readers, come after.
	var reencoded verify.Digest
	done := make(chan error, 1)
	go func() {
		done <- func() (err error) {
			defer guard(&err, "re-encode row group")
			for leaf, copied := range a.spec.Copied {
				if !copied {
					if err := a.reencode(ctx, c, rg, leaf, &reencoded); err != nil {
						return err
					}
				}
			}
			return nil
		}()
	}()
	pages := make([][]rawPage, len(a.spec.Copied))
	var readErr error
	for leaf, copied := range a.spec.Copied {
		if copied && readErr == nil {
			cc, err := md.ColumnChunk(leaf)
			if err == nil {
				pages[leaf], err = a.readPages(ctx, c, rg, leaf, cc, n)
			}
			readErr = err
		}
	}
	if err := <-done; err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	a.Read.Sum += reencoded.Sum
	var ts *array.Int64 // the row group's timestamps, decoded for their statistics
	defer func() {
		if ts != nil {
			ts.Release()
		}
	}()
	for leaf, copied := range a.spec.Copied {
		if !copied {
			continue
		}
		stats, err := a.pageStats(c, rg, leaf, pages[leaf])
		if err != nil {
			return err
		}
		var first int64
		for i, p := range pages[leaf] {
			st := stats[i]
			if leaf == c.TimestampLeaf {
				// timestamp_ns's page statistics (the column index window reads seek by) come
				// from its values, never from the input's index or page headers.
				if ts == nil {
					if ts, err = c.RowGroupTimestamps(ctx, rg); err != nil {
						return err
					}
				}
				st = timestampStats(ts, first, int64(p.numValues))
			}
			verify.AddPage(&a.Read, leaf, a.pages[leaf], p.numValues, p.header(&a.words), p.data)
			a.pages[leaf]++
			a.CopiedBytes += int64(len(p.data))
			g.pages[leaf] = append(g.pages[leaf], copiedPage{rawPage: p, firstRow: g.rows + first, stats: st})
			first += int64(p.numValues)
		}
		cc, _ := md.ColumnChunk(leaf)
		if leaf != c.TimestampLeaf {
			a.mergeStats(leaf, cc)
			continue
		}
		// timestamp_ns's statistics (the block index's time range of a row group, which a
		// rewrite always writes) come from its values too.
		a.addTimestamps(leaf, ts)
	}
	g.rows += n
	g.bytes += b
	a.Read.Rows += n
	return nil
}

// readPages reads the stored pages of column chunk cc (leaf column leaf of row group rg of c,
// rows rows), checks that they are data pages (V1 or V2, each copied as its kind) of the spec's
// encoding holding rows values, and that each decompresses to its stated size and holds its
// levels and values as a reader decodes them (decompressPage, checkPage).
func (a *Assembler) readPages(ctx context.Context, c *Chunk, rg, leaf int, cc *metadata.ColumnChunkMetaData, rows int64) ([]rawPage, error) {
	start, length := cc.DataPageOffset(), cc.TotalCompressedSize()
	if length > copiedChunkBytes && start+length <= c.size {
		return nil, fmt.Errorf("row group %d column %d: column chunk of %d bytes: %w", rg, leaf, length, ErrNotCopyable)
	}
	if start < 4 || length <= 0 || start+length > c.size-c.FooterBytes-8 {
		return nil, inputErrorf("row group %d column %d: column chunk at %d of %d bytes in a chunk of %d bytes (footer %d)",
			rg, leaf, start, length, c.size, c.FooterBytes)
	}
	buf := a.enc.mem.Allocate(int(length))
	a.group.bufs = append(a.group.bufs, buf)
	if _, err := c.src.ReadAt(buf, start); err != nil {
		return nil, fmt.Errorf("row group %d column %d: read column chunk: %w", rg, leaf, err)
	}
	pages, err := splitPages(ctx, buf)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	codec, err := compress.GetCodec(a.spec.codec[leaf])
	if err != nil {
		return nil, err
	}
	descr := c.pf.MetaData().Schema.Column(leaf)
	var values int64
	for k, p := range pages {
		if (p.kind != pageData && p.kind != pageDataV2) || parquet.Encoding(p.encoding) != a.spec.encoding[leaf] {
			return nil, fmt.Errorf("row group %d column %d: page of type %d, encoding %d: %w", rg, leaf, p.kind, p.encoding, ErrNotCopyable)
		}
		if p.uncompressed < 0 {
			return nil, inputErrorf("row group %d column %d: page of %d bytes", rg, leaf, p.uncompressed)
		}
		if p.uncompressed > CopiedPageBytes || p.numValues > CopiedPageRows {
			return nil, fmt.Errorf("row group %d column %d: page of %d values in %d bytes: %w", rg, leaf, p.numValues, p.uncompressed, ErrNotCopyable)
		}
		if p.kind == pageDataV2 && p.v2.numRows != p.numValues {
			// A flat column has a value a row: the copied header would say other rows than
			// the offset index, which a rewrite, reading values, writes right.
			return nil, fmt.Errorf("row group %d column %d: V2 page of %d values says %d rows: %w", rg, leaf, p.numValues, p.v2.numRows, ErrNotCopyable)
		}
		b, err := decompressPage(codec, &pages[k], &a.scratch)
		if err == nil {
			err = checkPage(descr, &pages[k], b)
		}
		if err != nil {
			return nil, inputErrorf("row group %d column %d: page %d of the column chunk: %v", rg, leaf, k, err)
		}
		values += int64(p.numValues)
	}
	if values != rows {
		return nil, inputErrorf("row group %d column %d: pages hold %d values for %d rows", rg, leaf, values, rows)
	}
	return pages, nil
}

// pageStats returns the statistics of each of pages for the column index: from the input's
// column index when it has one, else from the page headers (a page without them gets none).
func (a *Assembler) pageStats(c *Chunk, rg, leaf int, pages []rawPage) ([]metadata.EncodedStatistics, error) {
	descr := c.pf.MetaData().Schema.Column(leaf)
	stats := make([]metadata.EncodedStatistics, len(pages))
	if !a.props.StatisticsEnabledFor(descr.Path()) {
		return stats, nil
	}
	signed := descr.SortOrder() == schema.SortSIGNED
	if ci := c.columnIndex(rg, leaf); ci != nil && len(ci.GetNullPages()) == len(pages) {
		mins, maxs, nulls := ci.GetMinValues(), ci.GetMaxValues(), ci.GetNullCounts()
		for i := range pages {
			st := &stats[i]
			st.Signed = signed
			if ci.IsSetNullCounts() && i < len(nulls) {
				st.HasNullCount, st.NullCount = true, nulls[i]
			}
			if ci.GetNullPages()[i] {
				st.AllNullValue = true
				continue
			}
			st.HasMin, st.Min, st.HasMax, st.Max = true, mins[i], true, maxs[i]
		}
		return stats, nil
	}
	for i, p := range pages {
		st := p.stats
		st.Signed = signed
		if st.HasNullCount && st.NullCount == int64(p.numValues) {
			st.AllNullValue = true
		}
		stats[i] = st
	}
	return stats, nil
}

// columnIndex returns the column index of leaf column leaf of row group rg, nil when the chunk
// has none.
func (c *Chunk) columnIndex(rg, leaf int) metadata.ColumnIndex {
	cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
	if err != nil || cc.GetColumnIndexLocation() == nil {
		return nil
	}
	pir, err := c.pf.GetPageIndexReader().RowGroup(rg)
	if err != nil || pir == nil {
		return nil
	}
	ci, err := pir.GetColumnIndex(leaf)
	if err != nil {
		return nil
	}
	return ci
}

// readColumnChunk decodes the top-level field of leaf column leaf (a primitive field) of row
// group rg. pqarrow's RowGroup(rg).Column(i).Read never releases the column reader it makes (its
// buffers stay counted by the allocator); a record reader of the one column is released here.
func (c *Chunk) readColumnChunk(ctx context.Context, rg, leaf int) (*arrow.Chunked, error) {
	rr, err := c.fr.GetRecordReader(ctx, []int{leaf}, []int{rg})
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var arrs []arrow.Array
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	for rr.Next() {
		col := rr.RecordBatch().Column(0)
		col.Retain()
		arrs = append(arrs, col)
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return arrow.NewChunked(rr.Schema().Field(0).Type, arrs), nil
}

// RowGroupTimestamps decodes the timestamps of row group rg.
func (c *Chunk) RowGroupTimestamps(ctx context.Context, rg int) (*array.Int64, error) {
	col, err := c.readColumnChunk(ctx, rg, c.TimestampLeaf)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("row group %d: read %s: %w", rg, TimestampColumn, err)}
	}
	defer col.Release()
	cat, err := array.Concatenate(col.Chunks(), c.mem)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("row group %d: read %s: %w", rg, TimestampColumn, err)}
	}
	return cat.(*array.Int64), nil
}

// timestampStats returns the statistics of timestamps [from, from+n) of ts.
func timestampStats(ts *array.Int64, from, n int64) metadata.EncodedStatistics {
	st := metadata.EncodedStatistics{Signed: true, HasNullCount: true}
	var lo, hi int64
	found := false
	for i := from; i < from+n && i < int64(ts.Len()); i++ {
		if ts.IsNull(int(i)) {
			st.NullCount++
			continue
		}
		v := ts.Value(int(i))
		if !found || v < lo {
			lo = v
		}
		if !found || v > hi {
			hi = v
		}
		found = true
	}
	if !found {
		st.AllNullValue = true
		return st
	}
	st.HasMin, st.Min = true, binary.LittleEndian.AppendUint64(nil, uint64(lo))
	st.HasMax, st.Max = true, binary.LittleEndian.AppendUint64(nil, uint64(hi))
	return st
}

// mergeStats adds column chunk cc's statistics to the copied column's (which has none once an
// input column chunk had none).
func (a *Assembler) mergeStats(leaf int, cc *metadata.ColumnChunkMetaData) {
	g := a.group
	if g.stats[leaf] == nil {
		return
	}
	set, err := cc.StatsSet()
	if err != nil || !set {
		g.stats[leaf] = nil
		return
	}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		g.stats[leaf] = nil
		return
	}
	g.stats[leaf].Merge(st)
}

// addTimestamps adds the timestamps ts of an input row group to the statistics of the row
// group being assembled (leaf column leaf, timestamp_ns).
func (a *Assembler) addTimestamps(leaf int, ts *array.Int64) {
	st, ok := a.group.stats[leaf].(*metadata.Int64Statistics)
	if !ok {
		return
	}
	if ts.NullN() == 0 {
		st.Update(ts.Int64Values(), 0)
		return
	}
	st.UpdateSpaced(ts.Int64Values(), ts.NullBitmapBytes(), int64(ts.Data().Offset()), int64(ts.NullN()))
}

// reencode decodes leaf column leaf of row group rg of c and encodes it into the row group's
// writer of that column, its values digested (into d) at their rows in the chunk.
func (a *Assembler) reencode(ctx context.Context, c *Chunk, rg, leaf int, d *verify.Digest) error {
	g := a.group
	col, err := c.readColumnChunk(ctx, rg, leaf)
	if err != nil {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	defer col.Release()
	row := a.rows + g.rows
	e := &a.enc.enc[0]
	for _, arr := range col.Chunks() {
		a.hasher.AddColumnAt(d, arr, leaf, row)
		row += int64(arr.Len())
		if err := a.encodePieces(e, g, leaf, arr); err != nil {
			return err
		}
	}
	return nil
}

// encodePieces writes arr into the row group's writer of leaf column leaf, in the pieces its
// page cutter asks for.
func (a *Assembler) encodePieces(e *columnEncoder, g *assembledGroup, leaf int, arr arrow.Array) error {
	faulty := g.faulty && leaf == a.enc.faultLeaf
	if err := a.enc.writePieces(e, g.cutters[leaf], leaf, arr, &faulty); err != nil {
		return err
	}
	if leaf == a.enc.faultLeaf {
		g.faulty = faulty
	}
	return nil
}

// startGroup starts a row group: its metadata, page index builders and the writers of the
// re-encoded columns (their pages buffered until the row group is written).
func (a *Assembler) startGroup() error {
	leaves := len(a.spec.Copied)
	g := &assembledGroup{md: a.meta.AppendRowGroup(), cols: make([]*metadata.ColumnChunkMetaDataBuilder, leaves),
		ci: make([]metadata.ColumnIndexBuilder, leaves), oi: make([]*metadata.OffsetIndexBuilder, leaves),
		pages: make([][]copiedPage, leaves), stats: make([]metadata.TypedStatistics, leaves),
		writers: make([]file.ColumnChunkWriter, leaves), cutters: make([]*pageCutter, leaves), faulty: faults.Enabled}
	if err := a.pix.AppendRowGroup(); err != nil {
		return err
	}
	mem := a.enc.mem
	for leaf := range leaves {
		g.cols[leaf] = g.md.NextColumnChunk()
		var err error
		if g.ci[leaf], err = a.pix.GetColumnIndexBuilder(leaf); err != nil {
			return err
		}
		if g.oi[leaf], err = a.pix.GetOffsetIndexBuilder(leaf); err != nil {
			return err
		}
		if a.spec.Copied[leaf] {
			g.stats[leaf] = metadata.NewStatistics(g.cols[leaf].Descr(), mem)
			continue
		}
		path := g.cols[leaf].Descr().Path()
		pager, err := file.NewPageWriter(a.out, a.props.CompressionFor(path), a.props.CompressionLevelFor(path), g.cols[leaf],
			int16(a.groups), int16(leaf), mem, true, nil, nil)
		if err != nil {
			return err
		}
		pager.SetIndexBuilders(g.ci[leaf], g.oi[leaf])
		g.writers[leaf] = file.NewColumnChunkWriter(g.cols[leaf], pager, a.props)
		g.cutters[leaf] = newPageCutter(g.writers[leaf])
	}
	a.group = g
	return nil
}

// EndRowGroup writes the row group being assembled, if any: its column chunks in column order
// (copied pages through a page writer of their own, re-encoded columns' buffered pages), then
// its metadata.
func (a *Assembler) EndRowGroup() (err error) {
	defer guard(&err, "write assembled row group")
	g := a.group
	if g == nil {
		return nil
	}
	defer a.releaseGroup()
	mem := a.enc.mem
	changed := false
	for leaf, copied := range a.spec.Copied {
		col := g.cols[leaf]
		if !copied {
			if err := g.writers[leaf].Close(); err != nil {
				return a.writeError(err)
			}
			continue
		}
		path := col.Descr().Path()
		pager, err := file.NewPageWriter(a.out, a.props.CompressionFor(path), a.props.CompressionLevelFor(path), col,
			int16(a.groups), int16(leaf), mem, false, nil, nil)
		if err != nil {
			return err
		}
		pager.SetIndexBuilders(g.ci[leaf], g.oi[leaf])
		for i, p := range g.pages[leaf] {
			data := p.data
			if !changed && i == 0 && leaf != a.layout.tsLeaf && faults.Enabled && len(data) > 0 &&
				faults.TriggeredOn(faults.CopyChangePage, col.Descr().ColumnPath().String()) {
				changed = true
				data = append([]byte(nil), data...)
				data[len(data)-1] ^= 1
			}
			_, err := pager.WriteDataPage(p.dataPage(data))
			if err != nil {
				return a.writeError(err)
			}
		}
		if st := g.stats[leaf]; st != nil && a.props.StatisticsEnabledFor(path) {
			enc, err := st.Encode()
			if err == nil && enc.IsSet() {
				enc.Signed = col.Descr().SortOrder() == schema.SortSIGNED
				col.SetStats(enc)
			}
		}
		if err := pager.Close(false, false); err != nil {
			return a.writeError(err)
		}
	}
	g.md.SetNumRows(int(g.rows))
	if err := g.md.Finish(0, int16(a.groups)); err != nil {
		return err
	}
	a.rows += g.rows
	a.groups++
	return nil
}

// writeError is err of writing to the chunk: the store's when the store failed (retryable).
func (a *Assembler) writeError(err error) error {
	if a.enc.sink.err != nil {
		return a.enc.sink.err
	}
	return err
}

// releaseGroup drops the row group being assembled and the input bytes it held.
func (a *Assembler) releaseGroup() {
	g := a.group
	if g == nil {
		return
	}
	for _, b := range g.bufs {
		a.enc.mem.Free(b)
	}
	a.group = nil
}

// Discard drops what is held (for error paths that abandon the chunk: abort its upload).
func (a *Assembler) Discard() {
	if g := a.group; g != nil {
		for _, w := range g.writers {
			if w != nil {
				a.enc.sink.discard = true
				_ = w.Close()
			}
		}
	}
	a.releaseGroup()
	a.enc.sink.discard = true
}

// Close writes the last row group, the page index and the footer (the layout's schema elements
// spliced in, as Writer does). It does not close the underlying io.Writer. A chunk without rows
// is refused (ErrNoRows).
func (a *Assembler) Close() (err error) {
	defer guard(&err, "close assembled chunk")
	if err := a.EndRowGroup(); err != nil {
		return fmt.Errorf("assemble chunk: %w", err)
	}
	if a.rows == 0 {
		return fmt.Errorf("assemble chunk: close: %w", ErrNoRows)
	}
	a.pix.Finish()
	var loc metadata.PageIndexLocation
	if err := a.pix.WriteTo(a.out, &loc); err != nil {
		return fmt.Errorf("assemble chunk: page index: %w", a.writeError(err))
	}
	if err := a.meta.SetPageIndexLocation(loc); err != nil {
		return fmt.Errorf("assemble chunk: page index: %w", err)
	}
	fmd, err := a.meta.Finish()
	if err != nil {
		return fmt.Errorf("assemble chunk: footer: %w", err)
	}
	var buf bytes.Buffer
	if _, err := fmd.WriteTo(&buf, nil); err != nil {
		return fmt.Errorf("assemble chunk: footer: %w", err)
	}
	spliced, err := SpliceSchema(buf.Bytes(), a.layout.Footer)
	if err != nil {
		return fmt.Errorf("assemble chunk: footer: %w", err)
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], uint32(len(spliced)))
	copy(trailer[4:], "PAR1")
	for _, b := range [][]byte{spliced, trailer[:]} {
		if _, err := a.out.Write(b); err != nil {
			return fmt.Errorf("assemble chunk: footer: %w", err)
		}
	}
	return nil
}
