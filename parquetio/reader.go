// Package parquetio reads and writes the Parquet chunks of a topic with arrow-go, keeping the
// topic's Arrow schema (schema- and field-level metadata) verbatim: the schema is decoded from the
// footer's "ARROW:schema" entry, not from FileReader.Schema(), which adds and reorders metadata.
// It knows nothing of Temporal, the catalog or the object store.
package parquetio

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TimestampColumn is the name of the required timestamp column (Int64 nanoseconds since the Unix
// epoch, nullable allowed; DESIGN.md vocabulary).
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

// guard turns a panic of the Parquet decoder on hostile input into an *InputError.
func guard(err *error, what string) {
	if r := recover(); r != nil {
		*err = &InputError{Err: fmt.Errorf("%s: reader panicked on malformed data: %v", what, r)}
		_ = debug.Stack
	}
}

// InMemory is implemented by readers whose bytes are all in memory already (store objects read
// whole). Open then reads column chunks through a small buffer instead of arrow-go's default of
// copying each column chunk whole before decoding it: page data is read into the decoder's own
// buffer either way, so the copy only doubled a chunk's memory. Readers of remote objects keep
// the default, which costs one range request per column chunk rather than one per buffer.
type InMemory interface{ InMemory() bool }

// streamBufferBytes is the read buffer of a column chunk of an in-memory object; page headers
// larger than it grow it.
const streamBufferBytes = 64 << 10

// readerProperties raise the page size limits: other tools (DuckDB) write pages of 100 MB for
// binary columns, which the defaults refuse (DESIGN.md, arrow-go facts).
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
	fr *pqarrow.FileReader
	// Schema is the chunk's Arrow schema, verbatim from the footer's ARROW:schema entry (or, for
	// files without one, derived from the Parquet schema and the footer's key-value metadata).
	Schema *arrow.Schema
	// SchemaID identifies the schema including all metadata: the raw ARROW:schema entry when
	// present, else a fingerprint. Two chunks of one topic must have equal SchemaIDs.
	SchemaID string
	// TimestampField is the index of timestamp_ns among Schema's fields, TimestampLeaf its Parquet
	// leaf column index.
	TimestampField int
	TimestampLeaf  int
	NumRows        int64
	// FooterBytes is the size of the serialized footer (file metadata), bytes.
	FooterBytes int64
}

// Open opens a Parquet chunk and validates its schema: a top-level Int64 column "timestamp_ns"
// is required. Every failure caused by the content is an *InputError; r's own I/O errors are
// returned as they are (wrapped). mem may be nil (Go allocator).
func Open(r parquet.ReaderAtSeeker, mem memory.Allocator) (c *Chunk, err error) {
	defer guard(&err, "open")
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	m, ok := r.(InMemory)
	pf, err := file.NewParquetReader(r, file.WithReadProps(readerProperties(mem, ok && m.InMemory())))
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("not a readable Parquet file: %w", err)}
	}
	c = &Chunk{pf: pf, NumRows: pf.NumRows(), FooterBytes: int64(pf.MetaData().Size())}
	defer func() {
		if err != nil {
			pf.Close()
		}
	}()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("cannot map Parquet schema to Arrow: %w", err)}
	}
	c.fr = fr
	if err := c.loadSchema(mem); err != nil {
		return nil, err
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

// loadSchema sets Schema and SchemaID and checks that the reader's column types match Schema's.
func (c *Chunk) loadSchema(mem memory.Allocator) error {
	readSchema, err := c.fr.Schema()
	if err != nil {
		return inputErrorf("cannot read Arrow schema: %v", err)
	}
	kv := c.pf.MetaData().KeyValueMetadata()
	if raw := kv.FindValue(ArrowSchemaKey); raw != nil {
		sc, err := decodeArrowSchema(*raw, mem)
		if err != nil {
			return inputErrorf("footer entry %s is corrupt: %v", ArrowSchemaKey, err)
		}
		c.Schema, c.SchemaID = sc, *raw
	} else {
		c.Schema = schemaWithFooterMetadata(readSchema, kv)
		c.SchemaID = Fingerprint(c.Schema)
	}
	if c.Schema.NumFields() != readSchema.NumFields() {
		return inputErrorf("stored Arrow schema has %d fields, Parquet schema %d",
			c.Schema.NumFields(), readSchema.NumFields())
	}
	for i, f := range c.Schema.Fields() {
		if !arrow.TypeEqual(f.Type, readSchema.Field(i).Type) {
			return inputErrorf("column %q: stored Arrow type %s but Parquet data reads as %s",
				f.Name, f.Type, readSchema.Field(i).Type)
		}
	}
	return nil
}

func decodeArrowSchema(raw string, mem memory.Allocator) (*arrow.Schema, error) {
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(raw); err != nil {
			return nil, err
		}
	}
	return flight.DeserializeSchema(b, mem)
}

// schemaWithFooterMetadata gives a schema read from a file without ARROW:schema the footer's
// key-value pairs as schema metadata (arrow-go drops them in that case).
func schemaWithFooterMetadata(sc *arrow.Schema, kv metadata.KeyValueMetadata) *arrow.Schema {
	if len(kv) == 0 || sc.HasMetadata() {
		return sc
	}
	keys, vals := make([]string, 0, len(kv)), make([]string, 0, len(kv))
	for _, e := range kv {
		keys = append(keys, e.Key)
		v := ""
		if e.Value != nil {
			v = *e.Value
		}
		vals = append(vals, v)
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(sc.Fields(), &md)
}

// Close releases the chunk.
func (c *Chunk) Close() error { return c.pf.Close() }

// NumRowGroups returns the number of row groups.
func (c *Chunk) NumRowGroups() int { return c.pf.NumRowGroups() }

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
		return nil, err
	}
	return cat.(*array.Int64), nil
}

// BatchReader streams a chunk's rows as record batches carrying the chunk's verbatim Schema.
type BatchReader struct {
	rr     pqarrow.RecordReader
	schema *arrow.Schema
	cur    arrow.RecordBatch
	err    error
}

// Batches returns a reader of all rows in batches of at most batchRows rows (> 0). The caller
// calls Release on the reader (and Release on nothing it gets from Next unless it Retains it).
// Batches are never sized beyond the chunk's rows: the reader reserves value buffers for a whole
// batch, and a merge passes slices of those buffers on to the output's row group, so an
// oversized buffer would stay alive with them.
func (c *Chunk) Batches(ctx context.Context, batchRows int64) (br *BatchReader, err error) {
	defer guard(&err, "read rows")
	c.fr.Props.BatchSize = max(min(batchRows, c.fr.ParquetReader().NumRows()), 1)
	// Size binary data buffers from the column chunk metadata once instead of growing them by
	// doubling (camera payloads: each doubling copies megabytes).
	c.fr.Props.PreAllocBinaryData = true
	rr, err := c.fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("read rows: %w", err)}
	}
	return &BatchReader{rr: rr, schema: c.Schema}, nil
}

// Next returns the next batch, or nil at the end or on error (see Err). The batch is valid until
// the next call to Next or Release; Retain it to keep it longer.
func (b *BatchReader) Next() (rec arrow.RecordBatch) {
	defer func() {
		if r := recover(); r != nil {
			b.err = &InputError{Err: fmt.Errorf("read rows: reader panicked on malformed data: %v", r)}
			rec = nil
		}
	}()
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
	if b.err != nil || !b.rr.Next() {
		if b.err == nil {
			if err := b.rr.Err(); err != nil {
				b.err = &InputError{Err: fmt.Errorf("read rows: %w", err)}
			}
		}
		return nil
	}
	in := b.rr.RecordBatch()
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
	b.rr.Release()
}
