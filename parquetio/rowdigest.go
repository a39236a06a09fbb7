package parquetio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/storeopt/storeopt/verify"
)

// DigestRows adds to d the digest of every row of row groups rowGroups of c, the digest
// verify.Hasher.AddRows takes of the same rows read as record batches (BatchesWithin with lim).
// The columns a page digest can read (pageDigestible: a flat column of PLAIN pages of a
// binary, string, integer, float or boolean type) are digested from their pages: each column
// chunk read in one request into a buffer of the pool, reused, its pages decompressed one at a
// time and their values hashed where they lie, no Arrow array built; the other columns of the
// row group are read as Arrow arrays a column chunk at a time. A row group with a column chunk
// larger than two batches of lim (what reading it as batches holds), or whose columns are not
// all flat, is read as record batches. Errors caused by the content are *InputError.
func (c *Chunk) DigestRows(ctx context.Context, lim Limits, rowGroups []int, d *verify.Digest) (err error) {
	defer guard(&err, "digest rows")
	var h verify.Hasher
	r := pageDigest{c: c, lim: lim}
	defer r.release()
	for _, rg := range rowGroups {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rg < 0 || rg >= c.NumRowGroups() {
			return inputErrorf("digest rows: no row group %d (the chunk has %d)", rg, c.NumRowGroups())
		}
		n := c.RowGroupRows(rg)
		if n == 0 {
			continue
		}
		if !c.pageDigestibleRowGroup(rg, 2*max(lim.Bytes, 1)) {
			if err := c.digestBatches(ctx, lim, rg, &h, d); err != nil {
				return err
			}
			continue
		}
		h.StartRows(int(n))
		for field := range c.Schema.NumFields() {
			leaf := c.fr.Manifest.Fields[field].ColIndex
			if err := r.column(ctx, rg, field, leaf, &h); err != nil {
				return err
			}
		}
		h.EndRows(d)
	}
	return nil
}

// digestBatches adds the digest of row group rg read as record batches to d.
func (c *Chunk) digestBatches(ctx context.Context, lim Limits, rg int, h *verify.Hasher, d *verify.Digest) error {
	br, err := c.BatchesWithin(ctx, lim, []int{rg})
	if err != nil {
		return err
	}
	defer br.Release()
	for rec := br.Next(); rec != nil; rec = br.Next() {
		h.AddRows(d, rec, 0, rec.NumRows())
	}
	return br.Err()
}

// pageDigestibleRowGroup says whether DigestRows reads row group rg column chunk by column
// chunk: every top-level field is a leaf column, and no column chunk stores more than limit bytes.
func (c *Chunk) pageDigestibleRowGroup(rg int, limit int64) bool {
	md := c.pf.MetaData().RowGroup(rg)
	if len(c.fr.Manifest.Fields) != md.NumColumns() {
		return false
	}
	for field := range c.fr.Manifest.Fields {
		sf := &c.fr.Manifest.Fields[field]
		if !sf.IsLeaf() {
			return false
		}
		cc, err := md.ColumnChunk(sf.ColIndex)
		if err != nil || cc.TotalCompressedSize() > limit {
			return false
		}
	}
	return true
}

// pageDigest reads column chunks for DigestRows: buf is the pool's buffer the stored bytes of
// one column chunk are read into, scratch the decompressed page, levels a page's definition
// levels; lim bounds the batches of the columns read as Arrow arrays.
type pageDigest struct {
	c       *Chunk
	lim     Limits
	buf     []byte
	scratch []byte
	levels  []bool
}

func (r *pageDigest) release() {
	if r.buf != nil {
		r.c.mem.Free(r.buf)
		r.buf = nil
	}
}

// column adds the values of top-level field field (leaf column leaf) of row group rg to the rows
// started in h: from its pages when pageDigestible, else as Arrow arrays.
func (r *pageDigest) column(ctx context.Context, rg, field, leaf int, h *verify.Hasher) error {
	c := r.c
	descr := c.pf.MetaData().Schema.Column(leaf)
	cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	width, ok := pageDigestible(c.Schema.Field(field).Type, descr, cc)
	if !ok {
		return r.arrays(ctx, rg, field, leaf, h)
	}
	stored, err := r.read(rg, leaf, cc)
	if err != nil {
		return err
	}
	pages, err := splitPages(ctx, stored)
	if err != nil {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	codec, err := compress.GetCodec(cc.Compression())
	if err != nil {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	col := h.Column(field)
	rows := int(c.RowGroupRows(rg))
	row := 0
	for k := range pages {
		p := &pages[k]
		if (p.kind != pageData && p.kind != pageDataV2) || parquet.Encoding(p.encoding) != parquet.Encodings.Plain {
			return inputErrorf("row group %d column %d: page %d of type %d, encoding %d, in a column chunk whose metadata lists PLAIN data pages only",
				rg, leaf, k, p.kind, p.encoding)
		}
		if p.numValues < 0 || row+int(p.numValues) > rows {
			return inputErrorf("row group %d column %d: page %d holds %d values past the row group's %d rows", rg, leaf, k, p.numValues, rows)
		}
		b, err := decompressPage(codec, p, &r.scratch)
		if err == nil {
			err = r.page(col, descr, p, b, width, row)
		}
		if err != nil {
			return inputErrorf("row group %d column %d: page %d: %v", rg, leaf, k, err)
		}
		row += int(p.numValues)
	}
	if row != rows {
		return inputErrorf("row group %d column %d: pages hold %d values for %d rows", rg, leaf, row, rows)
	}
	return nil
}

// arrays adds the values of top-level field field (leaf column leaf) of row group rg to the rows
// started in h, read as Arrow arrays in batches of r.lim.
func (r *pageDigest) arrays(ctx context.Context, rg, field, leaf int, h *verify.Hasher) error {
	c := r.c
	rows := int(c.RowGroupRows(rg))
	c.fr.Props.BatchSize = c.rowsFor(r.lim, rg)
	rr, err := c.fr.GetRecordReader(ctx, []int{leaf}, []int{rg})
	if err != nil {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	defer rr.Release()
	at := 0
	for rr.Next() {
		arr := rr.RecordBatch().Column(0)
		if !arrow.TypeEqual(arr.DataType(), c.Schema.Field(field).Type) {
			return inputErrorf("row group %d column %d reads as %s, its schema says %s", rg, leaf, arr.DataType(), c.Schema.Field(field).Type)
		}
		if at+arr.Len() > rows {
			return inputErrorf("row group %d column %d: more values than its %d rows", rg, leaf, rows)
		}
		h.AddArray(field, arr, at)
		at += arr.Len()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
	}
	if at != rows {
		return inputErrorf("row group %d column %d: %d values for %d rows", rg, leaf, at, rows)
	}
	return nil
}

// read reads the stored bytes of column chunk cc (leaf column leaf of row group rg) into r.buf.
func (r *pageDigest) read(rg, leaf int, cc *metadata.ColumnChunkMetaData) ([]byte, error) {
	c := r.c
	start, length := columnChunkStart(cc), cc.TotalCompressedSize()
	if start < 4 || length <= 0 || start+length > c.size-c.FooterBytes-8 {
		return nil, inputErrorf("row group %d column %d: column chunk at %d of %d bytes in a chunk of %d bytes (footer %d)",
			rg, leaf, start, length, c.size, c.FooterBytes)
	}
	if int64(cap(r.buf)) < length {
		r.release()
		r.buf = c.mem.Allocate(int(length))
	}
	b := r.buf[:length]
	if _, err := c.src.ReadAt(b, start); err != nil {
		return nil, fmt.Errorf("row group %d column %d: read column chunk: %w", rg, leaf, err)
	}
	return b, nil
}

// page adds the values of data page p, b its decompressed bytes, to col at rows row, row+1, …:
// definition levels (a flat column's: 0 null, 1 a value), then PLAIN values of width bytes
// (0: byte arrays, -1: booleans).
func (r *pageDigest) page(col verify.Column, descr *schema.Column, p *rawPage, b []byte, width, row int) error {
	n := int(p.numValues)
	maxDef := descr.MaxDefinitionLevel()
	levels, values, ok, err := p.splitLevels(b, maxDef)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("definition levels of encoding %d", p.defEnc)
	}
	defined := n
	var isDef []bool
	if maxDef == 1 {
		if cap(r.levels) < n {
			r.levels = make([]bool, n)
		}
		isDef = r.levels[:n]
		if defined, err = decodeDefLevels(levels, n, isDef); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
	}
	switch {
	case width == 0:
		for i := range n {
			if isDef != nil && !isDef[i] {
				col.Null(row + i)
				continue
			}
			if len(values) < 4 {
				return fmt.Errorf("value %d of %d: no length", i, n)
			}
			l := binary.LittleEndian.Uint32(values)
			if int64(l) > int64(len(values)-4) {
				return fmt.Errorf("value %d of %d: %d bytes, %d left in the page", i, n, l, len(values)-4)
			}
			col.Bytes(row+i, values[4:4+l])
			values = values[4+l:]
		}
	case width < 0:
		if len(values) < (defined+7)/8 {
			return fmt.Errorf("%d booleans in %d bytes", defined, len(values))
		}
		v := 0
		for i := range n {
			if isDef != nil && !isDef[i] {
				col.Null(row + i)
				continue
			}
			col.Bool(row+i, values[v>>3]&(1<<(v&7)) != 0)
			v++
		}
	default:
		phys := descr.PhysicalType().ByteSize()
		if len(values) < defined*phys {
			return fmt.Errorf("%d values in %d bytes, %d needed", defined, len(values), defined*phys)
		}
		if isDef == nil && phys == 8 {
			// Required 8-byte values (a sensor's readings): one pass over the page.
			for i := range n {
				col.Fixed(row+i, binary.LittleEndian.Uint64(values[8*i:]))
			}
			return nil
		}
		mask := uint64(math.MaxUint64)
		if width < 8 {
			mask = 1<<(8*width) - 1
		}
		for i := range n {
			if isDef != nil && !isDef[i] {
				col.Null(row + i)
				continue
			}
			var v uint64
			if phys == 8 {
				v = binary.LittleEndian.Uint64(values)
			} else {
				v = uint64(binary.LittleEndian.Uint32(values))
			}
			col.Fixed(row+i, v&mask)
			values = values[phys:]
		}
	}
	return nil
}

// pageDigestible says whether the values of a flat column chunk cc, read as Arrow type t, can be
// digested from its pages, and the width of the Arrow values hashed (0 byte arrays, -1
// booleans): the chunk has no dictionary page and stores its values PLAIN (plainPages), and t
// holds them as stored (a binary or string array of byte arrays; an integer, float or temporal
// array as wide as the stored values or narrower, which pqarrow fills by truncating them;
// booleans). Others (dictionaries, decimals, dates stored in other units, large offsets,
// INT96…) are read as Arrow arrays.
func pageDigestible(t arrow.DataType, descr *schema.Column, cc *metadata.ColumnChunkMetaData) (int, bool) {
	if descr.MaxRepetitionLevel() > 0 || descr.MaxDefinitionLevel() > 1 || !plainPages(cc) {
		return 0, false
	}
	phys := descr.PhysicalType()
	switch t.ID() {
	case arrow.BINARY, arrow.STRING:
		return 0, phys == parquet.Types.ByteArray
	case arrow.BOOL:
		return -1, phys == parquet.Types.Boolean
	case arrow.FLOAT64:
		return 8, phys == parquet.Types.Double
	case arrow.FLOAT32:
		return 4, phys == parquet.Types.Float
	case arrow.INT64, arrow.UINT64, arrow.TIMESTAMP, arrow.TIME64, arrow.DURATION:
		return 8, phys == parquet.Types.Int64
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		return 4, phys == parquet.Types.Int32
	case arrow.INT16, arrow.UINT16:
		return 2, phys == parquet.Types.Int32
	case arrow.INT8, arrow.UINT8:
		return 1, phys == parquet.Types.Int32
	}
	return 0, false
}

// plainPages says whether column chunk cc stores PLAIN data pages only and no dictionary page:
// from its encoding stats (arrow-go writes them), else from its encodings (RLE, listed for the
// levels, could then be a boolean column's data encoding too: not for booleans).
func plainPages(cc *metadata.ColumnChunkMetaData) bool {
	if cc.HasDictionaryPage() {
		return false
	}
	if stats := cc.EncodingStats(); len(stats) > 0 {
		for _, st := range stats {
			if kind := int32(st.PageType); kind != pageData && kind != pageDataV2 || st.Encoding != parquet.Encodings.Plain {
				return false
			}
		}
		return true
	}
	enc, ok := dataEncoding(cc)
	return ok && enc == parquet.Encodings.Plain && cc.Type() != parquet.Types.Boolean
}

// columnChunkStart returns the offset of the first page of column chunk cc: its dictionary
// page's when it has one before its data pages.
func columnChunkStart(cc *metadata.ColumnChunkMetaData) int64 {
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	return start
}
