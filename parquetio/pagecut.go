package parquetio

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// DataPageRows bounds the rows of a data page of every column storeopt writes, besides
// DataPageBytes: a page is the unit a window read fetches (offset index → byte ranges), and a
// narrow sensor topic (an IMU row is about 80 bytes) would otherwise hold 32 Ki rows, about 80 s
// at 400 Hz, in one 256 KiB page of each column. At 2048 rows (5 s at 400 Hz) a 1-second window
// fetches one or two pages of about 16 KiB of each column. 2048 is also DuckDB's vector: pages
// of 1024 rows made DuckDB's scans of an output 2.5 to 4 times slower, 2048 and 4096 scanned as
// fast as DuckDB's own files (docs/benchmarks.md#window-reads).
const DataPageRows = 2048

// writeBatchRows is arrow-go's write batch (WriterProperties.WriteBatchSize, 1024 levels): it
// checks a column's page size after each batch, so a write of at most this many rows of a
// column without repetition is one batch and a page it ends can only end with the write.
const writeBatchRows = 1024

// pieceBytes bounds the values of one write of a column of variable-width values, so that
// arrow-go's page size check, made after each write, keeps pages near DataPageBytes even for
// rows of tens of KiB (camera frames; 1024 of them are one write batch).
const pieceBytes = DataPageBytes / 4

// pageCutter ends the pages of one column chunk being written every DataPageRows rows, as arrow-go
// has no row limit of its own: the column is written in pieces of at most writeBatchRows rows
// (fewer for large values), and after each piece the cutter knows whether arrow-go ended a page
// (the column's compressed bytes grew: every page ends with the write that filled it) and ends
// one itself once DataPageRows rows are buffered. Only rows are counted, so the page boundaries
// depend on the rows and the pieces alone and the same writes give the same file. For a column
// with repetition (lists) a write may span several arrow-go batches and a page arrow-go ended
// may not end with it; the page then holds up to writeBatchRows rows more (still row-aligned:
// docs/formats.md#what-an-output-keeps).
type pageCutter struct {
	cw       file.ColumnChunkWriter
	flush    func() error // the column writer's FlushCurrentPage; nil: pages by bytes only
	buffered int64        // rows written since the last page ended
	written  int64        // cw.TotalCompressedBytes() when buffered was last set
}

func newPageCutter(cw file.ColumnChunkWriter) *pageCutter {
	pc := &pageCutter{cw: cw, written: cw.TotalCompressedBytes()}
	if f, ok := cw.(interface{ FlushCurrentPage() error }); ok {
		pc.flush = f.FlushCurrentPage
	}
	return pc
}

// piece returns how many rows of col from row off the next write takes: at most writeBatchRows,
// at most the rows left until the page is full, and at most pieceBytes of values (one row at
// least).
func (pc *pageCutter) piece(col arrow.Array, off int) int {
	n := min(col.Len()-off, writeBatchRows)
	if pc.flush != nil {
		n = min(n, int(DataPageRows-pc.buffered))
	}
	return max(fitBytes(col, off, n, pieceBytes), 1)
}

// wrote records a write of rows rows and ends the page when it holds DataPageRows rows.
func (pc *pageCutter) wrote(rows int) error {
	if now := pc.cw.TotalCompressedBytes(); now != pc.written {
		pc.buffered, pc.written = 0, now // arrow-go ended a page with this write
		return nil
	}
	pc.buffered += int64(rows)
	if pc.flush == nil || pc.buffered < DataPageRows {
		return nil
	}
	if err := pc.flush(); err != nil {
		return err
	}
	pc.buffered, pc.written = 0, pc.cw.TotalCompressedBytes()
	return nil
}

// fitBytes returns how many of the n rows of col from off fit in limit bytes of values, for
// columns of variable-width values (strings, binaries), n for the others.
func fitBytes(col arrow.Array, off, n int, limit int64) int {
	var offsets func(i int) int64
	switch a := col.(type) {
	case *array.String:
		o := a.ValueOffsets()
		offsets = func(i int) int64 { return int64(o[i]) }
	case *array.Binary:
		o := a.ValueOffsets()
		offsets = func(i int) int64 { return int64(o[i]) }
	case *array.LargeString:
		o := a.ValueOffsets()
		offsets = func(i int) int64 { return o[i] }
	case *array.LargeBinary:
		o := a.ValueOffsets()
		offsets = func(i int) int64 { return o[i] }
	default:
		return n
	}
	start := offsets(off)
	if offsets(off+n)-start <= limit {
		return n
	}
	k := 0
	for k < n && offsets(off+k+1)-start <= limit {
		k++
	}
	return k
}
