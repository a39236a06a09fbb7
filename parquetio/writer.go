package parquetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/panics"
)

// WriterOptions configure a Writer. Zero values take the defaults.
type WriterOptions struct {
	// RowGroupRows is the number of rows per row group (the last one may be shorter); 0 = 1 Mi.
	// Row groups are cut by rows only; the same rows in the same batches always give the same
	// file (page boundaries also depend on where batches start).
	RowGroupRows int64
	// RowGroupBytes, when > 0, also ends a row group once the batches it holds add up to at
	// least that many bytes (as given to WriteSized), so a row group of wide rows stays small in
	// bytes: a row group is then at most RowGroupBytes plus one batch, and a batch of
	// RowGroupBytes or more is a row group of its own. Cuts by bytes fall between batches only.
	RowGroupBytes int64
	// Compression of every column; default zstd.
	Compression compress.Compression
	// Mem allocates the writer's buffers; nil = Go allocator.
	Mem memory.Allocator
	// EncodeWorkers is how many goroutines encode the column chunks of a row group at once. At
	// most 1: the row group's batches are held until it is complete, then its column chunks
	// are encoded one after the other, straight to the underlying writer. More: each column
	// chunk is encoded into a buffer of its own (arrow-go's buffered row group) every time a
	// quarter of a row group's rows or bytes has arrived (EncodeShare), those batches' columns
	// by up to EncodeWorkers goroutines at once, and the buffers are written in column order
	// when the row group ends; the writer then holds the row group's encoded pages and at most
	// a quarter of it as Arrow data, and the encoding of a row group overlaps the production of
	// its next batches instead of waiting for the row group to be complete. A row group whose
	// first quarter holds nearly all its bytes in one column (camera frames) is encoded as with
	// one encoder instead: its columns cannot be encoded in parallel to any gain.
	// The file's bytes are the same either way and whatever the goroutines' timing: every
	// column writer is given the same pieces of the same batches in the same order.
	EncodeWorkers int
	// Helpers, when set, bounds the goroutines that writers running at once add to their own
	// (the one calling Write) to encode a batch's columns: each helper takes a unit of it
	// (TryAcquire) for the batch and gives it back after, and the calling goroutine encodes the
	// columns that no helper takes. Nil: EncodeWorkers-1 helpers for every batch.
	Helpers *semaphore.Weighted
}

// DataPageBytes is the target size of a data page before compression. Every column writer, and
// every reader of a column, holds buffers of about a page (encoded values, compressed page); at
// arrow-go's default of 1 MiB those were a sixth of the live heap of a camera-topic rewrite. At
// 256 KiB the bench measured 15–20 MiB less peak RSS, no slower, and outputs 0.05 % larger
// (zstd compresses 128 KiB blocks either way).
const DataPageBytes = 256 << 10

// Layout is what a Writer needs to repeat a topic's chunks: their Footer, their Parquet schema
// and how pqarrow maps it to the Arrow schema the rows are read in. Take it from any chunk of
// the topic (Chunk.Layout); it stays valid after the chunk is closed and may be shared by
// writers in several goroutines.
type Layout struct {
	Footer *Footer
	// Schema is the Arrow schema of the batches a Writer takes (Chunk.Schema).
	Schema   *arrow.Schema
	parquet  *schema.Schema
	manifest *pqarrow.SchemaManifest
	kv       metadata.KeyValueMetadata
	tsLeaf   int
	// dictLimits[i] > 0 bounds the distinct values of top-level field i per row group (a
	// dictionary of a narrow index type read in its value type; Chunk.dictLimits).
	dictLimits []int
	// uncompressed[i] says leaf column i is written without compression
	// (Chunk.uncompressedLeaves).
	uncompressed []bool
}

// WithKeyValue returns a copy of l whose writers append the footer pair key=value after the
// stored ones (for tests that prove a changed footer is caught: the Footer is not changed).
func (l *Layout) WithKeyValue(key, value string) *Layout {
	c := *l
	c.kv = slices.Clone(l.kv)
	if err := c.kv.Append(key, value); err != nil {
		return l
	}
	return &c
}

// Layout returns the chunk's layout for writing chunks like it.
func (c *Chunk) Layout() *Layout {
	return &Layout{Footer: c.Footer, Schema: c.Schema, parquet: c.pf.MetaData().Schema,
		manifest: c.fr.Manifest, kv: c.kv, tsLeaf: c.TimestampLeaf, dictLimits: c.dictLimits,
		uncompressed: c.uncompressedLeaves()}
}

// Writer writes one Parquet chunk with a layout's Parquet schema and footer key/value pairs
// verbatim: the file writer is built on the input's own Parquet schema (never on one derived
// from Arrow types), each column chunk is encoded from the Arrow arrays with levels computed
// along pqarrow's schema manifest, and the serialized schema elements of the footer are the
// input's bytes. Writer properties change encodings only: timestamp_ns is declared as the
// sorting column (ascending, nulls last; row group metadata, not schema), dictionary encoding
// is used for string columns and for columns read or stored as Arrow dictionaries (unique floats
// and timestamps encode faster and smaller without it), binary columns get no min/max
// statistics, pages are zstd (uncompressed in the columns zstd does not shrink, judged from the
// layout's chunk: Chunk.uncompressedLeaves), end after DataPageBytes or DataPageRows rows (pageCutter) and
// are indexed (a page index between the row groups and the footer).
type Writer struct {
	fw     *file.Writer
	sink   *footerSink
	layout *Layout
	leaves [][]leafPath // leaf paths of each top-level field
	mem    memory.Allocator
	// helpers is WriterOptions.Helpers.
	helpers *semaphore.Weighted
	// enc holds the state of each goroutine encoding column chunks (one unless
	// WriterOptions.EncodeWorkers > 1); columns lists every leaf column in file order.
	enc     []columnEncoder
	columns []leafColumn
	rgRows  int64
	rgBytes int64               // RowGroupBytes (0: rows only)
	inGroup int64               // rows of the row group being gathered
	held    int64               // bytes of the row group being gathered (WriteSized)
	pending []arrow.RecordBatch // the rows of the row group being gathered not encoded yet
	// pendingRows and pendingBytes are pending's rows and bytes (more than one encoder).
	pendingRows, pendingBytes int64
	// open is the buffered row group being encoded a share at a time (more than one encoder),
	// nil between row groups; cutters holds the page cutter of each of its column chunks, and
	// faulty says faults.EncodeChangeValue may still act on its faultLeaf column.
	open    file.BufferedRowGroupWriter
	cutters []*pageCutter
	faulty  bool
	// streamed says the row group being gathered is encoded as with one encoder, column chunk
	// after column chunk straight to the underlying writer when it ends, although the writer has
	// several: its first share of rows held most of its bytes in one column (oneColumn), so
	// encoding its columns in parallel would gain nothing, and buffering its pages would copy
	// them once more and grow a buffer per column chunk.
	streamed bool
	rows     int64
	groups   int
	// distinct holds the values of the row group being gathered for each column whose
	// distinct values a row group must keep within its dictionary's index type.
	distinct []distinctValues
	// faultLeaf is the leaf column (index in columns) faults.EncodeChangeValue may act on: the
	// first one of fixed-width values other than timestamp_ns, or -1.
	faultLeaf int
}

// columnEncoder is what one goroutine needs to encode column chunks: pqarrow's write context
// (its buffers) and a shredder of its own.
type columnEncoder struct {
	ctx   context.Context
	shred shredder
}

// leafColumn is one leaf column of the file: its top-level field and its path.
type leafColumn struct {
	field int
	path  *leafPath
}

// NewWriter starts a chunk on w with layout l.
func NewWriter(w io.Writer, l *Layout, opts WriterOptions) (*Writer, error) {
	opts, props, err := writerProperties(l, opts)
	if err != nil {
		return nil, err
	}
	sink := &footerSink{w: w}
	fw, err := file.NewParquetWriterWithError(sink, l.parquet.Root(),
		file.WithWriterProps(parquet.NewWriterProperties(props...)), file.WithWriteMetadata(l.kv))
	if err != nil {
		return nil, fmt.Errorf("write chunk: %w", err)
	}
	wr := newEncoders(l, opts, sink)
	wr.fw = fw
	return wr, nil
}

// writerProperties returns opts with its defaults filled in and the arrow-go writer properties
// of a chunk of layout l (see Writer).
func writerProperties(l *Layout, opts WriterOptions) (WriterOptions, []parquet.WriterProperty, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 1 << 20
	}
	if opts.Compression == compress.Codecs.Uncompressed {
		opts.Compression = compress.Codecs.Zstd
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if l == nil || l.parquet == nil || l.Footer == nil {
		return opts, nil, errors.New("write chunk: no layout")
	}
	props := []parquet.WriterProperty{
		parquet.WithAllocator(opts.Mem),
		parquet.WithCompression(opts.Compression),
		parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(opts.RowGroupRows),
		parquet.WithDataPageSize(DataPageBytes),
		// The page index (offset index of every column, column index where the column has
		// statistics) lets a window read fetch only the pages it needs; it lives between the
		// pages and the footer, outside the footer's schema and key/value pairs.
		// Data pages stay V1, for lists too: arrow-go (since v18.8.0) starts V1 pages at row
		// boundaries when the page index is on (apache/arrow-go#887, fixed by #1075), and V2
		// pages store their levels uncompressed, where a corrupt byte of a list's levels gave
		// an invalid list array instead of a decoding error (TestCorruptChunksNeverPanic).
		parquet.WithPageIndexEnabled(true),
		parquet.WithCreatedBy("storeopt"),
		parquet.WithSortingColumns([]parquet.SortingColumn{
			{ColumnIdx: int32(l.tsLeaf), Descending: false, NullsFirst: false},
		}),
	}
	for i, col := range l.parquet.Columns() {
		if i < len(l.uncompressed) && l.uncompressed[i] {
			props = append(props, parquet.WithCompressionFor(col.Path(), compress.Codecs.Uncompressed))
		}
		switch {
		case i == l.tsLeaf && deltaTimestamps(col):
			// timestamp_ns is sorted in every row group written: the differences of its
			// values are small and regular, which DELTA_BINARY_PACKED stores in a few bits
			// each, smaller than zstd shrinks its plain bytes and several times faster to
			// write and to read (docs/benchmarks.md#timestamps-delta-encoded).
			props = append(props, parquet.WithEncodingFor(col.Path(), parquet.Encodings.DeltaBinaryPacked))
		case l.dictionary(i, col):
			props = append(props, parquet.WithDictionaryFor(col.Path(), true))
		case col.PhysicalType() == parquet.Types.ByteArray:
			// min/max of opaque payloads (camera frames) help no reader and put two whole
			// values into every page header and the footer.
			props = append(props, parquet.WithStatsFor(col.Path(), false))
		}
	}
	return opts, props, nil
}

// newEncoders returns a Writer without its file writer: what encoding column chunks of layout l
// takes (leaf paths, encoders, distinct-value limits), with sink the writer of its pages.
func newEncoders(l *Layout, opts WriterOptions, sink *footerSink) *Writer {
	wr := &Writer{sink: sink, layout: l, rgRows: opts.RowGroupRows, rgBytes: max(opts.RowGroupBytes, 0), mem: opts.Mem,
		helpers: opts.Helpers, faultLeaf: -1}
	for i := range l.manifest.Fields {
		wr.leaves = append(wr.leaves, leafPaths(&l.manifest.Fields[i]))
	}
	tsPath := l.parquet.Column(l.tsLeaf).ColumnPath().String()
	for i, paths := range wr.leaves {
		for p := range paths {
			leaf := len(wr.columns)
			if wr.faultLeaf < 0 && changeableType(paths[p].leafType()) && l.parquet.Column(leaf).ColumnPath().String() != tsPath {
				wr.faultLeaf = leaf
			}
			wr.columns = append(wr.columns, leafColumn{field: i, path: &paths[p]})
		}
	}
	for range max(min(opts.EncodeWorkers, len(wr.columns)), 1) {
		arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(opts.Mem))
		wr.enc = append(wr.enc, columnEncoder{ctx: pqarrow.NewArrowWriteContext(context.Background(), &arrowProps),
			shred: shredder{mem: opts.Mem}})
	}
	for i, limit := range l.dictLimits {
		if limit > 0 {
			wr.distinct = append(wr.distinct, distinctValues{field: i, limit: limit, seen: map[string]struct{}{}})
		}
	}
	return wr
}

// dictionary says whether leaf column i is dictionary-encoded: strings (by their Parquet
// logical or converted type), and columns whose Arrow type, as read or as stored in
// ARROW:schema, is a dictionary (a pandas categorical of small integers reads as plain uint8
// but was dictionary-encoded by its writer).
func (l *Layout) dictionary(i int, col *schema.Column) bool {
	if col.PhysicalType() == parquet.Types.ByteArray {
		switch col.LogicalType().(type) {
		case schema.StringLogicalType, schema.EnumLogicalType, schema.JSONLogicalType:
			return true
		}
		switch col.ConvertedType() {
		case schema.ConvertedTypes.UTF8, schema.ConvertedTypes.Enum, schema.ConvertedTypes.JSON:
			return true
		}
	}
	sf, err := l.manifest.GetColumnField(i)
	if err != nil {
		return false
	}
	if sf.Field.Type.ID() == arrow.DICTIONARY {
		return true
	}
	origin := l.manifest.OriginSchema
	if origin == nil {
		return false
	}
	for p := l.manifest.GetParent(sf); p != nil; p = l.manifest.GetParent(p) {
		sf = p
	}
	for top := range l.manifest.Fields {
		if &l.manifest.Fields[top] == sf && top < len(l.dictLimits) && l.dictLimits[top] > 0 {
			return true // stored as a dictionary, read in its value type
		}
		if &l.manifest.Fields[top] == sf && top < origin.NumFields() {
			return origin.Field(top).Type.ID() == arrow.DICTIONARY
		}
	}
	return false
}

// Write appends the rows of rec (which must carry the layout's Schema's column types), cutting
// row groups every RowGroupRows rows. With one encoder, rows are held (rec is retained, not
// copied) until a row group is complete; the row group is then encoded column by column straight
// to the underlying writer, so the writer holds at most one row group of Arrow data plus the
// buffers of the one column chunk being encoded. With WriterOptions.EncodeWorkers > 1, the held
// rows are encoded every quarter of a row group (EncodeShare), and the writer holds the row
// group's encoded pages until it ends and at most a quarter of it as Arrow data.
func (w *Writer) Write(rec arrow.RecordBatch) error { return w.WriteSized(rec, 0) }

// WriteSized is Write for a batch of about bytes bytes of data (Arrow bytes, as
// chunkstats.ArrowSizeBits counts them): once the held batches add up to RowGroupBytes, the row
// group is ended after this batch.
func (w *Writer) WriteSized(rec arrow.RecordBatch, bytes int64) error {
	if err := w.checkBatch(rec); err != nil {
		return fmt.Errorf("write chunk: %w", err)
	}
	n := rec.NumRows()
	if w.rgBytes > 0 && bytes >= w.rgBytes && w.inGroup > 0 {
		// A batch of a row group's bytes or more (one huge row) starts a row group of its
		// own, so that the footer tells that row's size, not an average with small rows.
		if err := w.flushRowGroup(); err != nil {
			return fmt.Errorf("write chunk: %w", err)
		}
	}
	for off := int64(0); off < n; {
		take := min(n-off, w.rgRows-w.inGroup)
		full := false
		if fit := w.fitDistinct(rec, off, off+take); fit < take {
			// A dictionary column of a narrow index type would hold more distinct values
			// than its index addresses: the row group ends before the row that would.
			take, full = fit, true
		}
		if take == 0 {
			if err := w.flushRowGroup(); err != nil {
				return fmt.Errorf("write chunk: %w", err)
			}
			continue
		}
		part := rec
		if off != 0 || take != n {
			part = rec.NewSlice(off, off+take)
		} else {
			rec.Retain()
		}
		w.pending = append(w.pending, part)
		w.inGroup += take
		w.pendingRows += take
		w.rows += take
		off += take
		if off == n && n > 0 {
			w.held += bytes
			w.pendingBytes += bytes
		}
		if w.inGroup == w.rgRows || full || (w.rgBytes > 0 && w.held >= w.rgBytes && off == n) {
			if err := w.flushRowGroup(); err != nil {
				return fmt.Errorf("write chunk: %w", err)
			}
		} else if len(w.enc) > 1 && !w.streamed && (w.pendingRows >= max(w.rgRows/EncodeShare, 1) ||
			(w.rgBytes > 0 && w.pendingBytes >= w.rgBytes/EncodeShare)) {
			if w.open == nil && oneColumn(w.pending) {
				// Encoding this row group's columns in parallel cannot gain: hold its rows and
				// encode it streamed when it ends (see streamed).
				w.streamed = true
			} else if err := w.encodeHeld(); err != nil {
				return fmt.Errorf("write chunk: %w", w.encodeError(err))
			}
		}
	}
	return nil
}

// 1/EncodeShare is the part of a row group (of RowGroupRows, or of RowGroupBytes) whose rows a
// writer with several encoders gathers before encoding them: encoding every batch as it came
// cost a tenth more CPU than encoding a column over many batches (each batch's pieces of every
// column in turn: the column writers' state out of cache, and goroutines started per batch),
// and encoding the whole row group at its end left the producer of the batches waiting.
const EncodeShare = 4

func (w *Writer) checkBatch(rec arrow.RecordBatch) error {
	want := w.layout.Schema
	if int(rec.NumCols()) != want.NumFields() {
		return fmt.Errorf("batch has %d columns, the chunk's schema %d", rec.NumCols(), want.NumFields())
	}
	for i, col := range rec.Columns() {
		if !arrow.TypeEqual(col.DataType(), want.Field(i).Type) {
			return fmt.Errorf("column %q: batch has type %s, the chunk's schema %s", want.Field(i).Name, col.DataType(), want.Field(i).Type)
		}
	}
	return nil
}

// oneColumn says whether one top-level column holds at least 7/8 of the bytes of recs' buffers
// (a column's own buffers, not its children's: an estimate; a slice counts the buffers it shares
// whole, and all columns of a batch are sliced alike): camera frames beside a few small fields.
// Encoding the columns of such rows in parallel shortens their encoding by an eighth at most.
func oneColumn(recs []arrow.RecordBatch) bool {
	if len(recs) == 0 {
		return false
	}
	sizes := make([]int64, recs[0].NumCols())
	var total int64
	for _, rec := range recs {
		for i, col := range rec.Columns() {
			for _, b := range col.Data().Buffers() {
				if b != nil {
					sizes[i] += int64(b.Len())
					total += int64(b.Len())
				}
			}
		}
	}
	return total > 0 && 8*slices.Max(sizes) >= 7*total
}

// flushRowGroup ends the row group being gathered: with one encoder (or a streamed row group) it
// encodes the held rows and releases them, with more it encodes the rows not encoded yet and
// closes the buffered row group (writing its column chunks). No rows, no row group: an output never has an empty row group.
func (w *Writer) flushRowGroup() (err error) {
	defer w.releasePending()
	defer func() { err = w.encodeError(err) }()
	if w.inGroup == 0 {
		return nil
	}
	if len(w.enc) > 1 && !w.streamed {
		if err = w.encodeHeld(); err == nil {
			err = w.open.Close()
		}
		w.open = nil
	} else {
		err = w.encodeStreamed()
	}
	if err == nil {
		w.groups++
	}
	return err
}

// encodeError marks an error of arrow-go's encoder while the underlying writer has not failed as
// its refusal of the rows (an *InputError): no retry helps.
func (w *Writer) encodeError(err error) error {
	if err != nil && w.sink.err == nil && !IsInputError(err) {
		return &InputError{Err: fmt.Errorf("arrow-go cannot write the row group: %w", err)}
	}
	return err
}

// encodeStreamed encodes the held rows column chunk after column chunk, straight to the
// underlying writer.
func (w *Writer) encodeStreamed() error {
	rgw, err := w.fw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	for leaf := range w.columns {
		cw, err := rgw.NextColumn()
		if err != nil {
			return err
		}
		faulty := faults.Enabled && leaf == w.faultLeaf // one chance per row group
		if err := w.encodeColumn(&w.enc[0], newPageCutter(cw), leaf, w.pending, &faulty); err != nil {
			return err
		}
	}
	return rgw.Close()
}

// encodeHeld encodes the columns of the held batches, the next rows of the row group being
// gathered, into the buffered row group (starting it for the row group's first rows) by up to
// len(w.enc) goroutines at once, the calling one and the helpers the budget gives
// (WriterOptions.Helpers), each taking the next column not yet taken; then releases them.
func (w *Writer) encodeHeld() error {
	if len(w.pending) == 0 {
		return nil
	}
	defer w.dropHeld()
	if w.open == nil {
		rgw, err := w.fw.AppendBufferedRowGroupChecked()
		if err != nil {
			return err
		}
		w.open, w.cutters, w.faulty = rgw, w.cutters[:0], faults.Enabled
		for leaf := range w.columns {
			cw, err := rgw.Column(leaf)
			if err != nil {
				return err
			}
			w.cutters = append(w.cutters, newPageCutter(cw))
		}
	}
	var next atomic.Int64
	encode := func(e *columnEncoder) error {
		for leaf := int(next.Add(1) - 1); leaf < len(w.columns); leaf = int(next.Add(1) - 1) {
			var none bool
			faulty := &none
			if leaf == w.faultLeaf {
				faulty = &w.faulty // one chance per row group
			}
			if err := w.encodeColumn(e, w.cutters[leaf], leaf, w.pending, faulty); err != nil {
				return err
			}
		}
		return nil
	}
	var g errgroup.Group
	for k := 1; k < min(len(w.enc), len(w.columns)); k++ {
		if w.helpers != nil && !w.helpers.TryAcquire(1) {
			break
		}
		e := &w.enc[k]
		panics.Go(&g, "column encoder", func() error {
			if w.helpers != nil {
				defer w.helpers.Release(1)
			}
			return encode(e)
		})
	}
	err := encode(&w.enc[0])
	return errors.Join(err, g.Wait())
}

// encodeColumn encodes the values of leaf column leaf of recs with e through pages, the cutter of
// the column chunk being written; faulty is the column chunk's chance of
// faults.EncodeChangeValue.
func (w *Writer) encodeColumn(e *columnEncoder, pages *pageCutter, leaf int, recs []arrow.RecordBatch, faulty *bool) error {
	for _, rec := range recs {
		if err := w.writePieces(e, pages, leaf, rec.Column(w.columns[leaf].field), faulty); err != nil {
			return err
		}
	}
	return nil
}

// writePieces writes values, of leaf column leaf, to its page cutter's column writer in the
// pieces the cutter asks for.
func (w *Writer) writePieces(e *columnEncoder, pages *pageCutter, leaf int, values arrow.Array, faulty *bool) error {
	for off := 0; off < values.Len(); {
		n := pages.piece(values, off)
		part := array.NewSlice(values, int64(off), int64(off+n))
		err := w.writeLeaf(e, pages.cw, w.columns[leaf].path, part, faulty)
		part.Release()
		if err != nil {
			return err
		}
		if err := pages.wrote(n); err != nil {
			return err
		}
		off += n
	}
	return nil
}

func (w *Writer) writeLeaf(e *columnEncoder, cw file.ColumnChunkWriter, path *leafPath, col arrow.Array, faulty *bool) error {
	lv, err := e.shred.shred(e.ctx, path, col)
	if err != nil {
		return &InputError{Err: err}
	}
	values := lv.values
	if fixed, ok := decimalAsFixed(values, cw.Descr(), w.mem); ok {
		values.Release()
		values = fixed
	}
	if *faulty && changeable(values) {
		*faulty = false
		if faults.TriggeredOn(faults.EncodeChangeValue, cw.Descr().ColumnPath().String()) {
			changed := changeFirstValue(values, w.mem)
			values.Release()
			values = changed
		}
	}
	defer values.Release()
	if err := pqarrow.WriteArrowToColumn(e.ctx, cw, values, lv.def, lv.rep, lv.nullable); err != nil {
		err = fmt.Errorf("column %q (Arrow type %s, Parquet %s): %w", path.name, values.DataType(),
			cw.Descr().PhysicalType(), err)
		if w.sink.err != nil {
			return err // the store failed: retryable
		}
		// arrow-go cannot encode this column: no retry helps.
		return &InputError{Err: fmt.Errorf("arrow-go cannot write %w", err)}
	}
	return nil
}

// Discard releases the rows held for the current row group without writing them and closes the
// Parquet writer (releasing its buffers), ignoring errors: for error paths that abandon the chunk
// (abort the upload first: the footer written by the close goes nowhere). The Writer must not
// be used afterwards.
func (w *Writer) Discard() {
	w.releasePending()
	w.sink.discard = true
	_ = w.fw.Close()
}

func (w *Writer) releasePending() {
	w.dropHeld()
	w.inGroup, w.held, w.streamed = 0, 0, false
	for i := range w.distinct {
		clear(w.distinct[i].seen)
	}
}

// dropHeld releases the held batches (encoded or abandoned).
func (w *Writer) dropHeld() {
	for _, rec := range w.pending {
		rec.Release()
	}
	clear(w.pending)
	w.pending = w.pending[:0]
	w.pendingRows, w.pendingBytes = 0, 0
}

// Rows returns the number of rows written so far.
func (w *Writer) Rows() int64 { return w.rows }

// RowGroups returns the number of row groups written so far (not counting the one being
// gathered).
func (w *Writer) RowGroups() int { return w.groups }

// EndRowGroup ends the row group being gathered now, if it has rows, so that the rows written
// next start a new one (a block boundary of a rollup output). The same sequence of writes and
// boundaries always gives the same file.
func (w *Writer) EndRowGroup() error {
	if w.inGroup == 0 {
		return nil
	}
	if err := w.flushRowGroup(); err != nil {
		return fmt.Errorf("write chunk: %w", err)
	}
	return nil
}

// Close writes the last row group and the footer. It does not close the underlying io.Writer.
// A chunk without rows is refused (ErrNoRows): no output chunk is ever empty.
func (w *Writer) Close() error {
	err := w.flushRowGroup()
	if err == nil && w.rows == 0 {
		err = ErrNoRows
	}
	if err != nil {
		w.sink.discard = true
		_ = w.fw.Close()
		return fmt.Errorf("write chunk: close: %w", err)
	}
	w.sink.capture = true
	if err := w.fw.Close(); err != nil {
		return fmt.Errorf("write chunk: close: %w", err)
	}
	if err := w.sink.writeFooter(w.layout.Footer); err != nil {
		return fmt.Errorf("write chunk: footer: %w", err)
	}
	return nil
}

// ErrNoRows is returned by Writer.Close when no row was written.
var ErrNoRows = errors.New("no rows written")

// footerSink passes the data pages through to w and, once capture is set (after the last row
// group), holds what the file writer writes at close (file metadata, its length, the magic) so
// that writeFooter can put the input's serialized schema elements in it.
type footerSink struct {
	w       io.Writer
	capture bool
	discard bool
	tail    bytes.Buffer
	err     error // the first error of w
}

func (s *footerSink) Write(p []byte) (int, error) {
	switch {
	case s.discard:
		return len(p), nil
	case s.capture:
		return s.tail.Write(p)
	}
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// writeFooter writes the captured footer with its schema list replaced by f's stored bytes.
func (s *footerSink) writeFooter(f *Footer) error {
	tail := s.tail.Bytes()
	if len(tail) < 8 || string(tail[len(tail)-4:]) != "PAR1" {
		return errors.New("file writer wrote no footer")
	}
	n := int(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n > len(tail)-8 {
		return errors.New("file writer wrote a footer longer than its output")
	}
	before, meta := tail[:len(tail)-8-n], tail[len(tail)-8-n:len(tail)-8]
	spliced, err := SpliceSchema(meta, f)
	if err != nil {
		return err
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], uint32(len(spliced)))
	copy(trailer[4:], "PAR1")
	for _, b := range [][]byte{before, spliced, trailer[:]} {
		if _, err := s.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// distinctValues are the distinct values of one column in the row group being gathered, which a
// row group keeps within limit: the column is stored as a dictionary whose index type addresses
// limit values (dictionary<int8, utf8>: 128), and a reader that applies the footer's ARROW:schema
// reads each row group's dictionary in that index type.
type distinctValues struct {
	field int
	limit int
	seen  map[string]struct{}
}

// fitDistinct returns how many of rows [from, to) of rec, from from on, the row group being
// gathered can take without a column of w.distinct holding more distinct values than its limit,
// and adds their values to the sets. The cut depends only on the rows, so the same rows give the
// same file.
func (w *Writer) fitDistinct(rec arrow.RecordBatch, from, to int64) int64 {
	if len(w.distinct) == 0 {
		return to - from
	}
	keys := make([]string, len(w.distinct))
	for r := from; r < to; r++ {
		for i := range w.distinct {
			d := &w.distinct[i]
			keys[i] = ""
			col := rec.Column(d.field)
			if col.IsNull(int(r)) {
				continue
			}
			keys[i] = valueKey(col, int(r))
			if _, ok := d.seen[keys[i]]; !ok && len(d.seen) >= d.limit {
				return r - from
			}
		}
		for i := range w.distinct {
			if !rec.Column(w.distinct[i].field).IsNull(int(r)) {
				w.distinct[i].seen[keys[i]] = struct{}{}
			}
		}
	}
	return to - from
}

// valueKey returns the bytes of value i of col as a string (its rendering for types without a
// fixed-width or binary layout).
func valueKey(col arrow.Array, i int) string {
	switch a := col.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	case *array.LargeString:
		return a.Value(i)
	case *array.LargeBinary:
		return string(a.Value(i))
	}
	if fw, ok := col.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth() >= 8 && fw.BitWidth()%8 == 0 {
		if bufs := col.Data().Buffers(); len(bufs) >= 2 && bufs[1] != nil {
			width := fw.BitWidth() / 8
			off := (col.Data().Offset() + i) * width
			return string(bufs[1].Bytes()[off : off+width])
		}
	}
	return col.ValueStr(i)
}
