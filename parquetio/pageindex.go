package parquetio

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ByteRange is a range of bytes of an object.
type ByteRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// End returns the offset after the range.
func (r ByteRange) End() int64 { return r.Offset + r.Length }

// PageIndex is where a row group's page index lies: the column index of timestamp_ns (each
// page's min/max) and the offset indexes of all its columns (each page's byte range and first
// row), which arrow-go writes one after the other. Both are nil for a row group without them
// (a chunk written without a page index).
type PageIndex struct {
	Timestamps *ByteRange `json:"ts_index,omitempty"`
	Offsets    *ByteRange `json:"offset_index,omitempty"`
}

// PageIndexOf returns the page index ranges of row group rg of a footer whose timestamp_ns leaf
// column is tsLeaf: the zero PageIndex unless timestamp_ns has a column index and every column an
// offset index.
func PageIndexOf(md *metadata.FileMetaData, rg, tsLeaf int) (pi PageIndex) {
	g := md.RowGroup(rg)
	ts, ok := g.ColumnIndexLocation(tsLeaf)
	if !ok || ts.Offset <= 0 || ts.Length <= 0 {
		return PageIndex{}
	}
	lo, hi := int64(-1), int64(-1)
	for col := range g.NumColumns() {
		loc, ok := g.OffsetIndexLocation(col)
		if !ok || loc.Offset <= 0 || loc.Length <= 0 {
			return PageIndex{}
		}
		if lo < 0 || loc.Offset < lo {
			lo = loc.Offset
		}
		hi = max(hi, loc.Offset+int64(loc.Length))
	}
	return PageIndex{Timestamps: &ByteRange{ts.Offset, int64(ts.Length)}, Offsets: &ByteRange{lo, hi - lo}}
}

// PageIndex returns the page index ranges of row group rg (PageIndexOf).
func (c *Chunk) PageIndex(rg int) PageIndex {
	return PageIndexOf(c.pf.MetaData(), rg, c.TimestampLeaf)
}

// WindowPages is what a window read takes of one row group: its rows [From, To) (indexes in the
// row group), which hold every row of the window, and the byte ranges of the pages of every
// column that hold them, each column's dictionary page included, sorted and coalesced.
type WindowPages struct {
	From, To int64
	Ranges   []ByteRange
}

// Bytes returns the bytes of the ranges.
func (w WindowPages) Bytes() int64 {
	var n int64
	for _, r := range w.Ranges {
		n += r.Length
	}
	return n
}

// TimestampPages returns the rows of row group rg whose timestamp pages may hold timestamps in
// [from, to), from the page index (whose bytes, PageIndex(rg), the chunk's reader must serve):
// the rows from the first to the last timestamp page whose min/max overlap the window (pages of
// nulls never do), and the byte ranges of those timestamp pages (and of the column's dictionary
// page), which WindowPages reads. ok is false when the row group has no page index; rows are
// empty (From == To) when no page overlaps.
func (c *Chunk) TimestampPages(rg int, from, to int64) (w WindowPages, ok bool, err error) {
	defer guard(&err, "read page index")
	ix, ok, err := c.pageIndexOf(rg)
	if !ok || err != nil {
		return WindowPages{}, ok, err
	}
	mins, maxs, nonNull := ix.ts.MinValues(), ix.ts.MaxValues(), ix.ts.NonNullPageIndices()
	tsPages := ix.offsets[c.TimestampLeaf]
	w.From, w.To = ix.rows, 0
	for _, page := range nonNull {
		if mins[page] >= to || maxs[page] < from {
			continue
		}
		w.From = min(w.From, tsPages[page].FirstRowIndex)
		w.To = max(w.To, pageEnd(tsPages, int(page), ix.rows))
	}
	if w.From >= w.To {
		return WindowPages{}, true, nil
	}
	w.Ranges, err = c.pagesOf(rg, c.TimestampLeaf, tsPages, w.From, w.To)
	return w, true, err
}

// WindowPages returns the rows of row group rg that hold timestamps in [from, to) and the byte
// ranges of the pages of every column that hold them, each column's dictionary page included,
// sorted and coalesced (ranges closer than gap bytes joined). It narrows TimestampPages' rows to
// those between the first and the last row of the window by decoding the timestamps of those
// rows, whose pages (TimestampPages' ranges) the chunk's reader must serve besides the page
// index: a timestamp page of a wide topic holds many pages of its other columns. ok is false when
// the row group has no page index; rows are empty when none is in the window.
func (c *Chunk) WindowPages(ctx context.Context, rg int, from, to, gap int64) (w WindowPages, ok bool, err error) {
	ts, ok, err := c.TimestampPages(rg, from, to)
	if !ok || err != nil || ts.From >= ts.To {
		return WindowPages{}, ok, err
	}
	defer guard(&err, "read page index")
	first, last, err := c.windowRows(ctx, rg, ts.From, ts.To, from, to)
	if err != nil {
		return WindowPages{}, false, err
	}
	if first > last {
		return WindowPages{}, true, nil
	}
	w.From, w.To = first, last+1
	ix, _, err := c.pageIndexOf(rg)
	if err != nil {
		return WindowPages{}, false, err
	}
	for field := range c.fr.Manifest.Fields {
		start := c.seekRow(rg, field, w.From) // where RowsOf starts reading the field
		for _, path := range leafPaths(&c.fr.Manifest.Fields[field]) {
			leaf := path.fields[len(path.fields)-1].ColIndex
			ranges, err := c.pagesOf(rg, leaf, ix.offsets[leaf], start, w.To)
			if err != nil {
				return WindowPages{}, false, err
			}
			w.Ranges = append(w.Ranges, ranges...)
		}
	}
	w.Ranges = Coalesce(w.Ranges, gap)
	return w, true, nil
}

// windowRows returns the first and last of rows [lo, hi) of row group rg whose timestamp is in
// [from, to) (first > last when none is), decoding the timestamps of those rows only.
func (c *Chunk) windowRows(ctx context.Context, rg int, lo, hi, from, to int64) (first, last int64, err error) {
	var before int64
	for i := range rg {
		before += c.RowGroupRows(i)
	}
	col, err := c.fr.GetColumn(ctx, c.TimestampField)
	if err != nil {
		return 0, 0, &InputError{Err: fmt.Errorf("read %s: %w", TimestampColumn, err)}
	}
	defer col.Release()
	if err := col.SeekToRow(before + lo); err != nil {
		return 0, 0, &InputError{Err: fmt.Errorf("read %s: seek to row %d: %w", TimestampColumn, before+lo, err)}
	}
	a, err := readColumn(col, hi-lo, c.mem)
	if err != nil {
		return 0, 0, &InputError{Err: fmt.Errorf("read %s: %w", TimestampColumn, err)}
	}
	defer a.Release()
	ts, ok := a.(*array.Int64)
	if !ok {
		return 0, 0, inputErrorf("read %s: %s values", TimestampColumn, a.DataType())
	}
	first, last = hi, lo-1
	for i := range ts.Len() {
		if ts.IsValid(i) && ts.Value(i) >= from && ts.Value(i) < to {
			first, last = min(first, lo+int64(i)), lo+int64(i)
		}
	}
	return first, last, nil
}

// rowGroupIndex is the page index of one row group as WindowPages reads it.
type rowGroupIndex struct {
	rows    int64
	ts      *metadata.TypedColumnIndex[int64]
	offsets [][]*metadata.PageLocation // by leaf column
}

// pageIndexOf decodes the page index of row group rg (ok false when it has none).
func (c *Chunk) pageIndexOf(rg int) (ix rowGroupIndex, ok bool, err error) {
	md := c.pf.MetaData()
	pi := c.PageIndex(rg)
	if rg < 0 || rg >= md.NumRowGroups() || pi.Timestamps == nil {
		return ix, false, nil
	}
	if c.indexes == nil {
		c.indexes = map[int]rowGroupIndex{}
	}
	if ix, ok := c.indexes[rg]; ok {
		return ix, true, nil
	}
	buf := make([]byte, pi.Timestamps.Length)
	if _, err := c.src.ReadAt(buf, pi.Timestamps.Offset); err != nil {
		return ix, false, fmt.Errorf("row group %d: column index of %s: %w", rg, TimestampColumn, err)
	}
	ts, ok := metadata.NewColumnIndex(md.Schema.Column(c.TimestampLeaf), buf, nil, nil).(*metadata.TypedColumnIndex[int64])
	if !ok {
		return ix, false, inputErrorf("row group %d: column index of %s is not of int64", rg, TimestampColumn)
	}
	pir, err := c.pf.GetPageIndexReader().RowGroup(rg)
	if err != nil || pir == nil {
		return ix, false, inputErrorf("row group %d: no page index reader: %v", rg, err)
	}
	ix = rowGroupIndex{rows: md.RowGroup(rg).NumRows(), ts: ts}
	for col := range md.RowGroup(rg).NumColumns() {
		oi, err := pir.GetOffsetIndex(col)
		if err != nil {
			return ix, false, fmt.Errorf("row group %d column %d: offset index: %w", rg, col, err)
		}
		if oi == nil || len(oi.GetPageLocations()) == 0 {
			return ix, false, inputErrorf("row group %d column %d: empty offset index", rg, col)
		}
		ix.offsets = append(ix.offsets, oi.GetPageLocations())
	}
	// arrow-go's min and max values are by page (zero for a page of nulls), as are the null pages.
	pages := len(ix.offsets[c.TimestampLeaf])
	if len(ts.MinValues()) != pages || len(ts.MaxValues()) != pages || len(ts.GetNullPages()) != pages {
		return ix, false, inputErrorf("row group %d: column index of %s has %d pages, its offset index %d", rg, TimestampColumn,
			len(ts.GetNullPages()), len(ix.offsets[c.TimestampLeaf]))
	}
	c.indexes[rg] = ix
	return ix, true, nil
}

// pagesOf returns the byte ranges of the pages of leaf column col of row group rg that hold rows
// [from, to), and of its dictionary page.
func (c *Chunk) pagesOf(rg, col int, pages []*metadata.PageLocation, from, to int64) ([]ByteRange, error) {
	first := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex > from }) - 1
	last := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex >= to }) - 1
	if first < 0 || last < first {
		return nil, inputErrorf("row group %d column %d: offset index does not cover rows %d to %d", rg, col, from, to)
	}
	out := []ByteRange{{pages[first].Offset, pages[last].Offset + int64(pages[last].CompressedPageSize) - pages[first].Offset}}
	cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil, inputErrorf("row group %d column %d: %v", rg, col, err)
	}
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < pages[0].Offset {
		out = append(out, ByteRange{cc.DictionaryPageOffset(), pages[0].Offset - cc.DictionaryPageOffset()})
	}
	return out, nil
}

// pageEnd returns the row after page i of a column chunk of rows rows.
func pageEnd(pages []*metadata.PageLocation, i int, rows int64) int64 {
	if i+1 < len(pages) {
		return pages[i+1].FirstRowIndex
	}
	return rows
}

// Coalesce sorts ranges and joins those that overlap or lie less than gap bytes apart.
func Coalesce(ranges []ByteRange, gap int64) []ByteRange {
	slices.SortFunc(ranges, func(a, b ByteRange) int { return int(max(min(a.Offset-b.Offset, 1), -1)) })
	var out []ByteRange
	for _, r := range ranges {
		if k := len(out) - 1; k >= 0 && r.Offset <= out[k].End()+gap {
			out[k].Length = max(out[k].End(), r.End()) - out[k].Offset
			continue
		}
		out = append(out, r)
	}
	return out
}

// RowsOf returns a reader of rows [from, to) of row group rg (indexes in the row group) in
// batches of at most lim, which seeks every column to the page holding row from through the
// offset index and reads no page past the one holding row to-1 (the chunk's reader need serve
// only WindowPages' ranges and the page index). Every batch has the rows it promises: a column
// that ends early (a page the reader does not serve) is an error, not a short read.
func (c *Chunk) RowsOf(ctx context.Context, lim Limits, rg int, from, to int64) (br *BatchReader, err error) {
	defer guard(&err, "read rows")
	if rg < 0 || rg >= c.pf.NumRowGroups() || from < 0 || to > c.RowGroupRows(rg) || from >= to {
		return nil, inputErrorf("read rows: no rows %d to %d in row group %d", from, to, rg)
	}
	var before int64
	for i := range rg {
		before += c.RowGroupRows(i)
	}
	c.fr.Props.PreAllocBinaryData = true
	br = &BatchReader{c: c, ctx: ctx, schema: c.Schema, left: to - from, batch: c.rowsFor(lim, rg)}
	for i := range c.Schema.NumFields() {
		col, err := c.fr.GetColumn(ctx, i)
		if err != nil {
			br.Release()
			return nil, &InputError{Err: fmt.Errorf("read rows: column %q: %w", c.Schema.Field(i).Name, err)}
		}
		br.cols = append(br.cols, col)
		start := c.seekRow(rg, i, from)
		if err := col.SeekToRow(before + start); err != nil {
			br.Release()
			return nil, &InputError{Err: fmt.Errorf("read rows: column %q: seek to row %d: %w", c.Schema.Field(i).Name, before+start, err)}
		}
		for start < from { // rows read and dropped, from a page start (seekRow)
			a, err := readColumn(col, min(from-start, br.batch), c.mem)
			if err != nil {
				br.Release()
				return nil, &InputError{Err: fmt.Errorf("read rows: column %q: %w", c.Schema.Field(i).Name, err)}
			}
			start += int64(a.Len())
			a.Release()
		}
	}
	return br, nil
}

// seekRow returns the row of row group rg to seek field i to for reading from row from: from
// itself, or for a field with repeated leaves (lists, maps) the last row at or before it where a
// page of every leaf of the field starts. arrow-go v18.8.0 decodes a list read from the middle of
// a page past that page's end into an invalid array: such a field is read from a page start and
// the rows before from are dropped.
func (c *Chunk) seekRow(rg, field int, from int64) int64 {
	var leaves []int
	repeated := false
	for _, path := range leafPaths(&c.fr.Manifest.Fields[field]) {
		leaf := path.fields[len(path.fields)-1].ColIndex
		leaves = append(leaves, leaf)
		repeated = repeated || c.pf.MetaData().Schema.Column(leaf).MaxRepetitionLevel() > 0
	}
	ix, ok, err := c.pageIndexOf(rg)
	if !repeated || !ok || err != nil {
		return from
	}
	for row := from; ; {
		next := row
		for _, leaf := range leaves {
			pages := ix.offsets[leaf]
			k := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex > row }) - 1
			next = min(next, pages[max(k, 0)].FirstRowIndex)
		}
		if next == row {
			return row
		}
		row = next
	}
}

// nextOfColumns reads the next batch of a reader made by RowsOf.
func (b *BatchReader) nextOfColumns() arrow.RecordBatch {
	n := min(b.batch, b.left)
	if n <= 0 {
		return nil
	}
	cols := make([]arrow.Array, len(b.cols))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, col := range b.cols {
		a, err := readColumn(col, n, b.c.mem)
		if err != nil {
			b.err = &InputError{Err: fmt.Errorf("read rows: column %q: %w", b.schema.Field(i).Name, err)}
			return nil
		}
		cols[i] = a
		if f := b.schema.Field(i); !arrow.TypeEqual(a.DataType(), f.Type) {
			b.err = inputErrorf("read rows: column %q reads as %s, its schema says %s", f.Name, a.DataType(), f.Type)
			return nil
		}
	}
	b.left -= n
	b.cur = array.NewRecordBatch(b.schema, cols, n)
	return b.cur
}

// readColumn reads exactly n rows of col as one array.
func readColumn(col *pqarrow.ColumnReader, n int64, mem memory.Allocator) (arrow.Array, error) {
	chunked, err := col.NextBatch(n)
	if err != nil {
		return nil, err
	}
	defer chunked.Release()
	if int64(chunked.Len()) != n {
		return nil, fmt.Errorf("read %d rows of %d (a page missing from the offset index's ranges?)", chunked.Len(), n)
	}
	if len(chunked.Chunks()) == 1 {
		a := chunked.Chunk(0)
		a.Retain()
		return a, nil
	}
	return array.Concatenate(chunked.Chunks(), mem)
}

// PagesWithin reports whether a window read fetches at most maxRows rows and, for a row group
// without a page index, maxBytes uncompressed bytes of any row group of the chunk, as it does of
// a chunk storeopt wrote: every row group has rows, and either a page index (PageIndexOf) whose
// pages each hold at most maxRows rows, or no more than maxRows rows and maxBytes bytes (it is
// fetched whole). A page index that cannot be read or decoded counts as none: the chunk is still
// readable without it, and whoever then reads the chunk reports a store that fails. The error is
// a panic of storeopt's own code.
func (c *Chunk) PagesWithin(maxRows, maxBytes int64) (within bool, err error) {
	defer func() { // after guard: a page index that cannot be decoded counts as none
		if IsInputError(err) {
			within, err = false, nil
		}
	}()
	defer guard(&err, "read page index")
	if !c.WindowReadable(maxRows, maxBytes) {
		return false, nil
	}
	for rg := range c.NumRowGroups() {
		pi := c.PageIndex(rg)
		if pi.Timestamps == nil {
			continue // small enough to be fetched whole (WindowReadable)
		}
		if pi.Timestamps.End() > c.size || pi.Offsets.End() > c.size {
			return false, nil
		}
		ix, ok, err := c.pageIndexOf(rg)
		if err != nil || !ok {
			return false, nil
		}
		for _, pages := range ix.offsets {
			for i := range pages {
				if pageEnd(pages, i, ix.rows)-pages[i].FirstRowIndex > maxRows {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// WindowReadable is what the footer alone tells of PagesWithin: every row group has rows, and
// either a page index (its pages not read here) or at most maxRows rows and maxBytes
// uncompressed bytes.
func (c *Chunk) WindowReadable(maxRows, maxBytes int64) bool {
	for rg := range c.NumRowGroups() {
		rows := c.RowGroupRows(rg)
		if rows == 0 {
			return false
		}
		if c.PageIndex(rg).Timestamps == nil && (rows > maxRows || c.RowGroupBytes(rg) > maxBytes) {
			return false
		}
	}
	return c.NumRowGroups() > 0
}
