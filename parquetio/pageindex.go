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

// WindowPages returns the rows and pages of row group rg that may hold timestamps in [from, to),
// from the page index (whose bytes, PageIndex(rg), the chunk's reader must serve): the rows from
// the first to the last timestamp page whose min/max overlap the window (pages of nulls never
// do). ok is false when the row group has no page index; rows are empty (From == To) when no
// page overlaps. Ranges closer than gap bytes are joined.
func (c *Chunk) WindowPages(rg int, from, to, gap int64) (w WindowPages, ok bool, err error) {
	defer guard(&err, "read page index")
	md := c.pf.MetaData()
	pi := c.PageIndex(rg)
	if pi.Timestamps == nil || rg < 0 || rg >= md.NumRowGroups() {
		return WindowPages{}, false, nil
	}
	buf := make([]byte, pi.Timestamps.Length)
	if _, err := c.src.ReadAt(buf, pi.Timestamps.Offset); err != nil {
		return WindowPages{}, false, fmt.Errorf("row group %d: column index of %s: %w", rg, TimestampColumn, err)
	}
	ci, ok := metadata.NewColumnIndex(md.Schema.Column(c.TimestampLeaf), buf, nil, nil).(*metadata.TypedColumnIndex[int64])
	if !ok {
		return WindowPages{}, false, inputErrorf("row group %d: column index of %s is not of int64", rg, TimestampColumn)
	}
	pir, err := c.pf.GetPageIndexReader().RowGroup(rg)
	if err != nil || pir == nil {
		return WindowPages{}, false, inputErrorf("row group %d: no page index reader: %v", rg, err)
	}
	offsets := func(col int) ([]*metadata.PageLocation, error) {
		oi, err := pir.GetOffsetIndex(col)
		if err != nil {
			return nil, fmt.Errorf("row group %d column %d: offset index: %w", rg, col, err)
		}
		if oi == nil || len(oi.GetPageLocations()) == 0 {
			return nil, inputErrorf("row group %d column %d: empty offset index", rg, col)
		}
		return oi.GetPageLocations(), nil
	}
	rows := md.RowGroup(rg).NumRows()
	tsPages, err := offsets(c.TimestampLeaf)
	if err != nil {
		return WindowPages{}, false, err
	}
	mins, maxs, nonNull := ci.MinValues(), ci.MaxValues(), ci.NonNullPageIndices()
	if len(mins) != len(nonNull) || len(maxs) != len(nonNull) || len(ci.GetNullPages()) != len(tsPages) {
		return WindowPages{}, false, inputErrorf("row group %d: column index of %s has %d pages, its offset index %d", rg, TimestampColumn, len(ci.GetNullPages()), len(tsPages))
	}
	w.From, w.To = rows, 0
	for k, page := range nonNull {
		if mins[k] >= to || maxs[k] < from {
			continue
		}
		w.From = min(w.From, tsPages[page].FirstRowIndex)
		w.To = max(w.To, pageEnd(tsPages, int(page), rows))
	}
	if w.From >= w.To {
		return WindowPages{}, true, nil
	}
	g := md.RowGroup(rg)
	for col := range g.NumColumns() {
		pages, err := offsets(col)
		if err != nil {
			return WindowPages{}, false, err
		}
		// the pages holding rows [From, To): from the last page starting at or before From
		first := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex > w.From }) - 1
		last := sort.Search(len(pages), func(i int) bool { return pages[i].FirstRowIndex >= w.To }) - 1
		if first < 0 || last < first {
			return WindowPages{}, false, inputErrorf("row group %d column %d: offset index does not cover rows %d to %d", rg, col, w.From, w.To)
		}
		w.Ranges = append(w.Ranges, ByteRange{pages[first].Offset, pages[last].Offset + int64(pages[last].CompressedPageSize) - pages[first].Offset})
		cc, err := g.ColumnChunk(col)
		if err != nil {
			return WindowPages{}, false, inputErrorf("row group %d column %d: %v", rg, col, err)
		}
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < pages[0].Offset {
			w.Ranges = append(w.Ranges, ByteRange{cc.DictionaryPageOffset(), pages[0].Offset - cc.DictionaryPageOffset()})
		}
	}
	w.Ranges = Coalesce(w.Ranges, gap)
	return w, true, nil
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
		if err := col.SeekToRow(before + from); err != nil {
			br.Release()
			return nil, &InputError{Err: fmt.Errorf("read rows: column %q: seek to row %d: %w", c.Schema.Field(i).Name, before+from, err)}
		}
	}
	return br, nil
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
