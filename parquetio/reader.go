// Package parquetio reads and writes the Parquet chunks of a topic with arrow-go, keeping the
// topic's footer verbatim (docs/formats.md): an output chunk has its inputs' Parquet schema
// elements and footer key/value pairs ("ARROW:schema" included, byte for byte, in order), whatever
// Arrow writer made them. Rows are read and written in the Arrow type pqarrow reads each Parquet
// column as (its storage type), so nothing of the footer is derived again from Arrow types. It
// knows nothing of Temporal, the catalog or the object store.
package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/storeopt/storeopt/panics"
)

// TimestampColumn is the name of the required timestamp column (Int64 nanoseconds since the Unix
// epoch, nullable allowed; docs/design.md#vocabulary).
const TimestampColumn = "timestamp_ns"

// ArrowSchemaKey is the footer key-value entry in which Arrow writers store the Arrow schema.
const ArrowSchemaKey = "ARROW:schema"

// InputError marks a fault of the input data (not Parquet, truncated, corrupt page, bad schema,
// missing timestamp column). Retrying cannot help; activities report it as non-retryable.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// IsInputError reports whether err is or wraps an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// guard, deferred at the top of a reading function, recovers a panic into *err (recovered).
func guard(err *error, what string) {
	if r := recover(); r != nil {
		*err = recovered(r, what)
	}
}

// recovered returns the error of a panic recovered while reading a chunk (called from the deferred
// function, while the panic's stack is still there): a panic raised while arrow-go's Parquet
// packages (or thrift, for page headers) decode the input's bytes is an *InputError, the input's
// malformed data; a panic raised in storeopt's own code, or in a library that storeopt's code
// called directly (an Arrow array or schema it misused), is a bug: a *panics.Error with the stack,
// which activities report as an internal error and log (docs/design.md#errors-are-typed).
func recovered(r any, what string) error {
	if !panickedDecoding() {
		return &panics.Error{Where: "parquetio " + what, Value: r, Stack: debug.Stack()}
	}
	return &InputError{Err: fmt.Errorf("%s: reader panicked on malformed data: %v", what, r)}
}

// storeoptModule is the import path prefix of storeopt's own packages.
const storeoptModule = "github.com/storeopt/storeopt/"

// panickedDecoding reports whether the panic being recovered was raised while a decoder of the
// input ran: between runtime.gopanic and the first of storeopt's functions below it, the stack
// holds a function of arrow-go's Parquet packages or of thrift. Functions of the runtime and of
// the standard library are passed over (whoever called them raised the panic).
func panickedDecoding() bool {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	inPanic, decoding := false, false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			inPanic = true
		case !inPanic:
		case strings.HasPrefix(f.Function, storeoptModule):
			return decoding
		case strings.HasPrefix(f.Function, "github.com/apache/arrow-go/v18/parquet/"),
			strings.HasPrefix(f.Function, "github.com/apache/thrift/"):
			decoding = true
		}
		if !more {
			return decoding
		}
	}
}

// InMemory is implemented by readers whose bytes are all in memory already (store objects read
// whole). Open then reads column chunks through a small buffer instead of arrow-go's default of
// copying each column chunk whole before decoding it: page data is read into the decoder's own
// buffer either way, so the copy only doubled a chunk's memory. Readers of remote objects keep
// the default, which costs one range request per column chunk rather than one per buffer.
type InMemory interface{ InMemory() bool }

// streamBufferBytes is the read buffer of a column chunk of an in-memory object; page headers
// larger than it grow it. It is arrow-go's first peek for a page header (16 KiB): a larger buffer
// only copies more of the page ahead of the read that takes the page out of it, and every column
// chunk read allocates one (64 KiB buffers were 1 GB of the 6.6 GB the bench's IMU rewrite
// allocated at a 64 MiB pool, and 2-3 MiB of its live heap with a merge's inputs open).
const streamBufferBytes = 16 << 10

// wholeColumnChunkBytes is the largest column chunk (stored bytes) of an object read by range
// requests that is read whole before decoding (one request per column chunk); larger ones are
// read through a buffer of remoteBufferBytes (one request per buffer).
const (
	wholeColumnChunkBytes = 16 << 20
	remoteBufferBytes     = 1 << 20
)

// largestColumnChunk returns the largest total_compressed_size of any column chunk, bytes.
func largestColumnChunk(md *metadata.FileMetaData) int64 {
	var largest int64
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		for col := range rg.NumColumns() {
			if cc, err := rg.ColumnChunk(col); err == nil {
				largest = max(largest, cc.TotalCompressedSize())
			}
		}
	}
	return largest
}

// readerProperties raise the page size limits: other tools (DuckDB) write pages of 100 MB for
// binary columns, which the defaults refuse (docs/design.md#arrow-go-facts).
func readerProperties(mem memory.Allocator, inMemory bool) *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(mem)
	props.MaxCompressedPageSize = 1 << 30
	props.MaxUncompressedPageSize = 2 << 30
	if inMemory {
		props.BufferedStreamEnabled = true
		props.BufferSize = streamBufferBytes
	}
	return props
}

// Chunk is an opened Parquet chunk. Close releases it. Not safe for concurrent use.
type Chunk struct {
	pf *file.Reader
	// src is the object the chunk is read from (page headers are read from it directly).
	src io.ReaderAt
	mem memory.Allocator
	fr  *pqarrow.FileReader
	// Footer is the chunk's Parquet schema and key/value pairs, which every chunk of a topic
	// shares and every output repeats verbatim.
	Footer *Footer
	// Schema is the Arrow schema the rows are read (and written) in: the type pqarrow reads each
	// Parquet column as (its storage type), not necessarily the type the footer's ARROW:schema
	// names (string_view reads as utf8, timestamp[s] as timestamp[ms], dictionary<int32, uint8>
	// as uint8; docs/formats.md). Its metadata is pqarrow's, not the stored one.
	Schema *arrow.Schema
	// TimestampField is the index of timestamp_ns among Schema's fields, TimestampLeaf its Parquet
	// leaf column index.
	TimestampField int
	TimestampLeaf  int
	NumRows        int64
	// FooterBytes is the size of the serialized footer (file metadata), bytes.
	FooterBytes int64
	// size is the object's size, bytes.
	size int64
	kv   metadata.KeyValueMetadata // the footer's pairs as stored
	// dictLimits[i], when > 0, is how many distinct values top-level field i may hold in one
	// row group: the field is stored as a dictionary with a narrow index type and read in its
	// value type (denseDictionaries).
	dictLimits []int
	// indexes caches the page indexes WindowPages decoded, by row group.
	indexes map[int]rowGroupIndex
}

// unmappableColumn names the first top-level column arrow-go cannot map to Arrow on its own
// (" (column "x", Parquet …)"), or returns "". It is called once the file is refused: it
// re-parents the file's schema nodes.
func unmappableColumn(pf *file.Reader) (named string) {
	defer func() {
		if recover() != nil {
			named = ""
		}
	}()
	root := pf.MetaData().Schema.Root()
	for i := range root.NumFields() {
		field := root.Field(i)
		g, err := schema.NewGroupNode(root.Name(), parquet.Repetitions.Required, schema.FieldList{field}, -1)
		if err != nil {
			continue
		}
		if _, err := pqarrow.FromParquet(schema.NewSchema(g), &pqarrow.ArrowReadProperties{}, nil); err != nil {
			return fmt.Sprintf(" (column %q, Parquet %s)", field.Name(), describeNode(field))
		}
	}
	return ""
}

// describeNode renders a node's physical, logical and converted types.
func describeNode(n schema.Node) string {
	if p, ok := n.(*schema.PrimitiveNode); ok {
		return fmt.Sprintf("%s %s logical %s converted %s", n.RepetitionType(), p.PhysicalType(), p.LogicalType(), p.ConvertedType())
	}
	return fmt.Sprintf("%s group logical %s converted %s", n.RepetitionType(), n.LogicalType(), n.ConvertedType())
}

// withoutKey returns kv without the pairs of key (a new slice).
func withoutKey(kv metadata.KeyValueMetadata, key string) metadata.KeyValueMetadata {
	out := kv[:0:0]
	for _, e := range kv {
		if e.GetKey() != key {
			out = append(out, e)
		}
	}
	return out
}

// Open opens a Parquet chunk and validates its schema: a top-level Int64 column "timestamp_ns"
// is required. Every failure caused by the content is an *InputError; r's own I/O errors are
// returned as they are (wrapped). mem may be nil (Go allocator).
func Open(r parquet.ReaderAtSeeker, mem memory.Allocator) (c *Chunk, err error) {
	defer guard(&err, "open")
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("size of chunk: %w", err)
	}
	m, ok := r.(InMemory)
	inMemory := ok && m.InMemory()
	props := readerProperties(mem, inMemory)
	pf, err := file.NewParquetReader(r, file.WithReadProps(props))
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("not a readable Parquet file: %w", err)}
	}
	if !inMemory && largestColumnChunk(pf.MetaData()) > wholeColumnChunkBytes {
		// arrow-go reads a column chunk of a remote object whole before decoding it: a column
		// chunk of large binary rows (camera frames, blobs) would be held whole, whatever the
		// batch size. Read such chunks through a buffer instead (column readers are made
		// when rows are read, after this).
		props.BufferedStreamEnabled = true
		props.BufferSize = remoteBufferBytes
	}
	c = &Chunk{pf: pf, src: r, mem: mem, NumRows: pf.NumRows(), FooterBytes: int64(pf.MetaData().Size()), size: size}
	defer func() {
		if err != nil {
			pf.Close()
		}
	}()
	if c.Footer, err = ReadFooter(r, size); err != nil {
		return nil, err
	}
	c.kv = pf.MetaData().KeyValueMetadata()
	if readAs, limits := denseDictionaries(c.kv); limits != nil {
		// Read narrow dictionary columns in their value type (see denseDictionaries); the
		// footer, ARROW:schema included, is written back from c.Footer verbatim.
		pf.MetaData().FileMetaData.KeyValueMetadata = readAs
		c.dictLimits = limits
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil && c.kv.FindValue(ArrowSchemaKey) != nil {
		// arrow-go cannot apply the stored Arrow schema (v18.8.0 reads the JSON logical type
		// as binary and refuses arrow.json's utf8 storage): read the Parquet columns in the
		// types they map to without it. The footer, ARROW:schema included, is written back
		// from c.Footer verbatim either way; only the Arrow types storeopt handles differ.
		md := pf.MetaData()
		md.FileMetaData.KeyValueMetadata = withoutKey(c.kv, ArrowSchemaKey)
		c.dictLimits = nil
		fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	}
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("cannot map Parquet schema to Arrow%s: %w", unmappableColumn(pf), err)}
	}
	c.fr = fr
	if c.Schema, err = fr.Schema(); err != nil {
		return nil, inputErrorf("cannot read Arrow schema: %v", err)
	}
	idx := c.Schema.FieldIndices(TimestampColumn)
	if len(idx) == 0 {
		return nil, inputErrorf("no column %q (type int64 required)", TimestampColumn)
	}
	if len(idx) > 1 {
		return nil, inputErrorf("column %q appears %d times", TimestampColumn, len(idx))
	}
	c.TimestampField = idx[0]
	if dt := c.Schema.Field(idx[0]).Type; dt.ID() != arrow.INT64 {
		return nil, inputErrorf("column %q has type %s, int64 required", TimestampColumn, dt)
	}
	sf := fr.Manifest.Fields[idx[0]]
	if !sf.IsLeaf() {
		return nil, inputErrorf("column %q is not a primitive column", TimestampColumn)
	}
	c.TimestampLeaf = sf.ColIndex
	return c, nil
}

// Close releases the chunk.
func (c *Chunk) Close() error { return c.pf.Close() }

// EmptyRowGroup returns the index of the first row group without rows, or -1.
func (c *Chunk) EmptyRowGroup() int {
	for i := range c.pf.NumRowGroups() {
		if c.pf.MetaData().RowGroup(i).NumRows() == 0 {
			return i
		}
	}
	return -1
}

// NumRowGroups returns the number of row groups.
func (c *Chunk) NumRowGroups() int { return c.pf.NumRowGroups() }

// RowGroupRows returns the number of rows of row group i.
func (c *Chunk) RowGroupRows(i int) int64 { return c.pf.MetaData().RowGroup(i).NumRows() }

// Timestamps reads the timestamp_ns column of the whole chunk. The array has NumRows entries;
// the caller releases it. Errors caused by the content are *InputError.
func (c *Chunk) Timestamps(ctx context.Context) (ts *array.Int64, err error) {
	defer guard(&err, "read "+TimestampColumn)
	// pqarrow's GetColumn takes the index of a top-level field (of its Manifest), not of a leaf
	// column as its doc says: the two differ when a nested column with several leaves (a map, a
	// struct) comes before timestamp_ns.
	col, err := c.fr.GetColumn(ctx, c.TimestampField)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("read %s: %w", TimestampColumn, err)}
	}
	defer col.Release()
	chunked, err := col.NextBatch(c.NumRows)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("read %s: %w", TimestampColumn, err)}
	}
	defer chunked.Release()
	if int64(chunked.Len()) != c.NumRows {
		return nil, inputErrorf("read %s: got %d values for %d rows", TimestampColumn, chunked.Len(), c.NumRows)
	}
	switch len(chunked.Chunks()) {
	case 0:
		return array.NewInt64Builder(memory.DefaultAllocator).NewInt64Array(), nil
	case 1:
		a := chunked.Chunk(0).(*array.Int64)
		a.Retain()
		return a, nil
	}
	cat, err := array.Concatenate(chunked.Chunks(), memory.DefaultAllocator)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("read %s: %w", TimestampColumn, err)}
	}
	return cat.(*array.Int64), nil
}

// BatchReader streams a chunk's rows as record batches of the chunk's Schema.
type BatchReader struct {
	c      *Chunk
	ctx    context.Context
	schema *arrow.Schema
	// segments are runs of consecutive requested row groups read with one batch size; rr reads
	// segments[seg].
	segments []segment
	seg      int
	rr       pqarrow.RecordReader
	cur      arrow.RecordBatch
	err      error
	// cols, left and batch are those of a reader of a row range (RowsOf): a column reader per
	// field, the rows still to read and the rows per batch.
	cols        []*pqarrow.ColumnReader
	left, batch int64
}

// segment is a run of row groups read in batches of batchRows rows.
type segment struct {
	rowGroups []int
	batchRows int64
}

// Limits bound the record batches of a BatchReader: at most Rows rows (> 0) and, when Bytes > 0,
// at most about Bytes bytes of data. The bytes of a row are estimated per row group from the
// footer, as the row group's uncompressed bytes (RowGroupBytes) over its rows (RowBytes), so a
// chunk whose row groups hold rows of very different sizes is read in batches of different row
// counts; a row larger than Bytes is read alone (a batch is never empty). Rows of very different
// sizes within one row group share its average.
type Limits struct {
	Rows  int64
	Bytes int64
}

// rowsFor returns the rows per batch of row group rg under lim. A row group of more than
// wholeArrayBytes is read a row at a time whatever lim says: its rows' sizes are known only as
// an average, and a batch of a few of its largest rows could exceed what one Arrow binary array
// addresses (int32 offsets, 2 GiB), which a smaller row group cannot.
func (c *Chunk) rowsFor(lim Limits, rg int) int64 {
	rows := max(lim.Rows, 1)
	if lim.Bytes > 0 {
		rows = min(rows, max(lim.Bytes/max(c.RowBytes(rg), 1), 1))
	}
	if lim.Bytes > 0 && c.mayHideLargeRows(rg, lim.Bytes) {
		rows = min(rows, max(lim.Bytes/(skewFactor*max(c.RowBytes(rg), 1)), 1))
	}
	if c.RowGroupBytes(rg) > wholeArrayBytes {
		rows = 1
	}
	return rows
}

// skewFactor is how much larger than its row group's average a row is assumed to be when the
// row group may hide large rows (mayHideLargeRows): batches of such a row group hold
// 1/skewFactor of the rows the average would give (a row at most skewFactor times the average
// keeps a batch within its bytes).
const skewFactor = 64

// mayHideLargeRows reports whether row group rg of the chunk may hold rows far larger than its
// average among small ones (for example an ingestion service writing a chunk as one row group of
// status messages and a few blobs): a variable-width (byte array) column chunk of it holds more
// than 16 batches of batchBytes, and the chunk was not written by storeopt (whose writer puts a
// row of a row group's bytes in a row group of its own and keeps row groups within their bytes).
func (c *Chunk) mayHideLargeRows(rg int, batchBytes int64) bool {
	md := c.pf.MetaData()
	if c.WrittenByStoreopt() {
		return false
	}
	g := md.RowGroup(rg)
	for col := range g.NumColumns() {
		if md.Schema.Column(col).PhysicalType() != parquet.Types.ByteArray {
			continue
		}
		if cc, err := g.ColumnChunk(col); err == nil && cc.TotalUncompressedSize() > 16*batchBytes {
			return true
		}
	}
	return false
}

// WrittenByStoreopt reports whether storeopt's writer wrote the chunk (its footer's created_by).
func (c *Chunk) WrittenByStoreopt() bool {
	return strings.HasPrefix(c.pf.MetaData().GetCreatedBy(), "storeopt")
}

// wholeArrayBytes is the uncompressed size of a row group up to which any batch of it fits one
// Arrow binary array: half of 2 GiB, as a dictionary-encoded column decodes larger than its
// uncompressed Parquet bytes.
const wholeArrayBytes = 1 << 30

// RowGroupBytes returns the uncompressed bytes of row group i: the sum of its column chunks'
// total_uncompressed_size (Parquet encoded data and page headers before compression, about
// the Arrow size for binary columns, less for dictionary-encoded ones).
func (c *Chunk) RowGroupBytes(i int) int64 {
	rg := c.pf.MetaData().RowGroup(i)
	var n int64
	for col := range rg.NumColumns() {
		if cc, err := rg.ColumnChunk(col); err == nil {
			n += max(cc.TotalUncompressedSize(), 0)
		}
	}
	return n
}

// RowGroupCompressedBytes returns the stored (compressed) bytes of row group i: the sum of its
// column chunks' total_compressed_size.
func (c *Chunk) RowGroupCompressedBytes(i int) int64 {
	rg := c.pf.MetaData().RowGroup(i)
	var n int64
	for col := range rg.NumColumns() {
		if cc, err := rg.ColumnChunk(col); err == nil {
			n += max(cc.TotalCompressedSize(), 0)
		}
	}
	return n
}

// RowBytes returns the uncompressed bytes of one row of row group i, rounded up: its
// RowGroupBytes over its rows (0 for an empty row group). For a row group of one row it is that
// row's size; otherwise the average of its rows.
func (c *Chunk) RowBytes(i int) int64 {
	rows := c.RowGroupRows(i)
	if rows <= 0 {
		return 0
	}
	return (c.RowGroupBytes(i) + rows - 1) / rows
}

// MaxRowBytes returns the largest RowBytes of the chunk's row groups and that row group (-1
// when the chunk has no rows).
func (c *Chunk) MaxRowBytes() (bytes int64, rowGroup int) {
	rowGroup = -1
	for i := range c.NumRowGroups() {
		if b := c.RowBytes(i); c.RowGroupRows(i) > 0 && (rowGroup < 0 || b > bytes) {
			bytes, rowGroup = b, i
		}
	}
	return bytes, rowGroup
}

// Batches returns a reader of all rows in batches of at most batchRows rows (> 0). The caller
// calls Release on the reader (and Release on nothing it gets from Next unless it Retains it).
// Batches are never sized beyond the chunk's rows: the reader reserves value buffers for a whole
// batch, and a merge passes slices of those buffers on to the output's row group, so an
// oversized buffer would stay alive with them.
func (c *Chunk) Batches(ctx context.Context, batchRows int64) (br *BatchReader, err error) {
	return c.BatchesWithin(ctx, Limits{Rows: batchRows}, nil)
}

// BatchesOf is Batches restricted to the given row groups, in that order (nil = all).
func (c *Chunk) BatchesOf(ctx context.Context, batchRows int64, rowGroups []int) (br *BatchReader, err error) {
	return c.BatchesWithin(ctx, Limits{Rows: batchRows}, rowGroups)
}

// BatchesWithin is BatchesOf with batches bounded by lim (rows and bytes, see Limits): the row
// groups are read in segments of neighbours that take the same batch size, each by a record
// reader of its own.
func (c *Chunk) BatchesWithin(ctx context.Context, lim Limits, rowGroups []int) (br *BatchReader, err error) {
	defer guard(&err, "read rows")
	if rowGroups == nil {
		rowGroups = make([]int, c.pf.NumRowGroups())
		for i := range rowGroups {
			rowGroups[i] = i
		}
	}
	br = &BatchReader{c: c, ctx: ctx, schema: c.Schema}
	for _, rg := range rowGroups {
		if rg < 0 || rg >= c.pf.NumRowGroups() {
			return nil, inputErrorf("read rows: no row group %d (the chunk has %d)", rg, c.pf.NumRowGroups())
		}
		rows := c.RowGroupRows(rg)
		if rows == 0 {
			continue
		}
		n := c.rowsFor(lim, rg)
		if k := len(br.segments) - 1; k >= 0 && br.segments[k].batchRows == n {
			br.segments[k].rowGroups = append(br.segments[k].rowGroups, rg)
			continue
		}
		br.segments = append(br.segments, segment{rowGroups: []int{rg}, batchRows: n})
	}
	// A segment's batches are never larger than its rows (see Batches).
	for i := range br.segments {
		s := &br.segments[i]
		var rows int64
		for _, rg := range s.rowGroups {
			rows += c.RowGroupRows(rg)
		}
		s.batchRows = max(min(s.batchRows, rows), 1)
	}
	// Size binary data buffers from the column chunk metadata once instead of growing them by
	// doubling (camera payloads: each doubling copies megabytes).
	c.fr.Props.PreAllocBinaryData = true
	if err := br.open(); err != nil {
		return nil, err
	}
	return br, nil
}

// open opens the record reader of the current segment (none past the last).
func (b *BatchReader) open() (err error) {
	defer guard(&err, "read rows")
	if b.rr != nil {
		b.rr.Release()
		b.rr = nil
	}
	if b.seg >= len(b.segments) {
		return nil
	}
	s := b.segments[b.seg]
	b.c.fr.Props.BatchSize = s.batchRows
	rr, err := b.c.fr.GetRecordReader(b.ctx, nil, s.rowGroups)
	if err != nil {
		return &InputError{Err: fmt.Errorf("read rows: %w", err)}
	}
	b.rr = rr
	return nil
}

// Next returns the next batch, or nil at the end or on error (see Err). The batch is valid until
// the next call to Next or Release; Retain it to keep it longer.
func (b *BatchReader) Next() (rec arrow.RecordBatch) {
	defer func() {
		if r := recover(); r != nil {
			b.err = recovered(r, "read rows")
			rec = nil
		}
	}()
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
	if b.cols != nil {
		if b.err != nil {
			return nil
		}
		return b.nextOfColumns()
	}
	for b.err == nil && b.rr != nil && !b.rr.Next() {
		if err := b.rr.Err(); err != nil {
			b.err = &InputError{Err: fmt.Errorf("read rows: %w", err)}
			return nil
		}
		b.seg++
		if err := b.open(); err != nil {
			b.err = err
		}
	}
	if b.err != nil || b.rr == nil {
		return nil
	}
	in := b.rr.RecordBatch()
	for i, col := range in.Columns() {
		if f := b.schema.Field(i); !arrow.TypeEqual(col.DataType(), f.Type) {
			b.err = inputErrorf("read rows: column %q reads as %s, its schema says %s", f.Name, col.DataType(), f.Type)
			return nil
		}
	}
	b.cur = array.NewRecordBatch(b.schema, in.Columns(), in.NumRows())
	return b.cur
}

// Err returns the first error met by Next.
func (b *BatchReader) Err() error { return b.err }

// Release releases the reader and its current batch.
func (b *BatchReader) Release() {
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
	if b.rr != nil {
		b.rr.Release()
		b.rr = nil
	}
	for _, col := range b.cols {
		col.Release()
	}
	b.cols = nil
}
