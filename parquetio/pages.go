package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/thrift/lib/go/thrift"
)

// maxPageHeaderBytes is the most bytes a page header may take (arrow-go's default limit).
const maxPageHeaderBytes = 16 << 20

// HiddenRowBytes bounds the rows of row group rg when the footer's average may hide large rows
// among small ones (mayHideLargeRows with batches of batchBytes): it reads the page
// headers of the row group's byte-array column chunks (only the headers, not the pages: a
// ranged read of at most a few KiB per page) and returns
//   - rowBytes, an upper bound of the row group's largest row: for each byte-array column the
//     largest uncompressed page (dictionary or data; a value is never larger than the page that
//     holds it, and that page is decompressed whole when read), summed over those columns, plus
//     the average bytes per row of the other columns;
//   - pageBytes, the row group's largest uncompressed page, bytes.
//
// Both are 0 when the row group is not one that may hide large rows (its footer average is then
// its rows' size, see RowBytes). A malformed page header is an *InputError.
func (c *Chunk) HiddenRowBytes(ctx context.Context, rg int, batchBytes int64) (rowBytes, pageBytes int64, err error) {
	defer guard(&err, "read page headers")
	if rg < 0 || rg >= c.pf.NumRowGroups() || c.RowGroupRows(rg) <= 1 || !c.mayHideLargeRows(rg, batchBytes) {
		return 0, 0, nil
	}
	md := c.pf.MetaData()
	g := md.RowGroup(rg)
	var other int64
	for col := range g.NumColumns() {
		cc, err := g.ColumnChunk(col)
		if err != nil {
			return 0, 0, &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, col, err)}
		}
		if md.Schema.Column(col).PhysicalType() != parquet.Types.ByteArray {
			other += max(cc.TotalUncompressedSize(), 0)
			continue
		}
		largest, err := c.largestPage(ctx, columnChunkStart(cc), cc.TotalCompressedSize())
		if err != nil {
			return 0, 0, &InputError{Err: fmt.Errorf("row group %d column %q: %w", rg, md.Schema.Column(col).Path(), err)}
		}
		rowBytes += largest
		pageBytes = max(pageBytes, largest)
	}
	rows := c.RowGroupRows(rg)
	return rowBytes + (other+rows-1)/rows, pageBytes, nil
}

// largestPage returns the largest uncompressed_page_size of the pages stored in the length
// bytes from offset start of the chunk, reading each page's header only.
func (c *Chunk) largestPage(ctx context.Context, start, length int64) (int64, error) {
	var largest int64
	for pos, end := start, start+length; pos < end; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		hdrBytes, uncompressed, compressed, err := c.pageHeader(ctx, pos, end-pos)
		if err != nil {
			return 0, fmt.Errorf("page header at offset %d: %w", pos, err)
		}
		if uncompressed < 0 || compressed < 0 {
			return 0, fmt.Errorf("page header at offset %d: negative page size", pos)
		}
		largest = max(largest, int64(uncompressed))
		pos += hdrBytes + int64(compressed)
	}
	return largest, nil
}

// pageHeader reads the Thrift (compact protocol) PageHeader at offset pos, of which at most avail
// bytes are stored, and returns its length and page sizes. It reads 4 KiB first and more only for
// a header that is longer (statistics of long values).
func (c *Chunk) pageHeader(ctx context.Context, pos, avail int64) (hdrBytes int64, uncompressed, compressed int32, err error) {
	for window := min(int64(4<<10), avail); ; window = min(window*4, avail, maxPageHeaderBytes) {
		buf := make([]byte, window)
		n, rerr := c.src.ReadAt(buf, pos)
		if rerr != nil && !(errors.Is(rerr, io.EOF) && int64(n) == window) {
			if errors.Is(rerr, io.EOF) {
				return 0, 0, 0, errors.New("truncated column chunk")
			}
			return 0, 0, 0, rerr
		}
		mem := thrift.NewTMemoryBufferLen(int(window))
		mem.Write(buf[:n])
		uncompressed, compressed, err = readPageSizes(ctx, thrift.NewTCompactProtocolConf(mem, nil))
		if err == nil {
			return window - int64(mem.Len()), uncompressed, compressed, nil
		}
		if window >= avail || window >= maxPageHeaderBytes {
			return 0, 0, 0, err
		}
	}
}

// readPageSizes reads a PageHeader struct and returns its uncompressed_page_size (field 2) and
// compressed_page_size (field 3), skipping the other fields.
func readPageSizes(ctx context.Context, p thrift.TProtocol) (uncompressed, compressed int32, err error) {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return 0, 0, err
	}
	var seen int
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return 0, 0, err
		}
		if typ == thrift.STOP {
			break
		}
		switch {
		case id == 2 && typ == thrift.I32:
			uncompressed, err = p.ReadI32(ctx)
			seen |= 1
		case id == 3 && typ == thrift.I32:
			compressed, err = p.ReadI32(ctx)
			seen |= 2
		default:
			err = p.Skip(ctx, typ)
		}
		if err != nil {
			return 0, 0, err
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return 0, 0, err
		}
	}
	if err := p.ReadStructEnd(ctx); err != nil {
		return 0, 0, err
	}
	if seen != 3 {
		return 0, 0, errors.New("page header without its page sizes")
	}
	return uncompressed, compressed, nil
}
