package parquetio

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/storeopt/storeopt/internal/arrowtypes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/semaphore"

	"github.com/storeopt/storeopt/verify"
)

// sharedData is the project's shared test data: $STOREOPT_SHARED_DATA, else ../shared/data next
// to the repository.
var sharedData = cmp.Or(os.Getenv("STOREOPT_SHARED_DATA"), filepath.Join("..", "..", "shared", "data"))

func md(kv ...string) arrow.Metadata {
	var keys, vals []string
	for i := 0; i < len(kv); i += 2 {
		keys, vals = append(keys, kv[i]), append(vals, kv[i+1])
	}
	return arrow.NewMetadata(keys, vals)
}

// topicSchema has schema metadata, field metadata whose keys are not in sorted order, and a list
// whose element field carries metadata of its own. The element is named "element", as Parquet
// names it (see TestListElementNameIsNormalized for "item").
func topicSchema() *arrow.Schema {
	elem := arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Nullable: true, Metadata: md("unit", "m/s²", "axis", "xyz")}
	schemaMD := md("mosaico:topic", "run_7/imu", "format", "imu-v2", "a_key", "first? no: stored order")
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: md("unit", "ns", "epoch", "unix")},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Metadata: md("z", "last", "a", "first")},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "frame", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "accel", Type: arrow.ListOfField(elem), Nullable: true},
	}, &schemaMD)
}

// rows builds n rows of topicSchema; row i has timestamp i*10 (every 7th null).
func rows(t testing.TB, schema *arrow.Schema, from, n int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		if i%7 == 3 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i) * 10)
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("label-%d", i%13))
		}
		b.Field(3).(*array.BinaryBuilder).Append([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		b.Field(4).(*array.BooleanBuilder).Append(i%3 == 0)
		lb := b.Field(5).(*array.ListBuilder)
		if i%11 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Float32Builder)
			for j := range i % 4 {
				vb.Append(float32(i) + float32(j)/4)
			}
		}
	}
	return b.NewRecordBatch()
}

// write writes the rows [0, n) of topicSchema, handed to the writer in batches of the given sizes
// (cycled), and returns the file bytes.
func write(t testing.TB, schema *arrow.Schema, n int, splits []int, opts WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, layoutOf(t, schema), opts)
	if err != nil {
		t.Fatal(err)
	}
	for off, i := 0, 0; off < n; i++ {
		k := min(splits[i%len(splits)], n-off)
		rec := rows(t, schema, off, k)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		off += k
	}
	if w.Rows() != int64(n) {
		t.Fatalf("Rows() = %d, want %d", w.Rows(), n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layoutOf returns the layout of a one-row chunk of schema written by plain pqarrow with the
// schema stored (as the ingestion service writes chunks).
func layoutOf(t testing.TB, schema *arrow.Schema) *Layout {
	t.Helper()
	rec := rows(t, schema, 1, 1)
	defer rec.Release()
	c, err := Open(bytes.NewReader(encodePlain(t, schema, rec)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Layout()
}

// encodePlain writes recs as one file with plain pqarrow, ARROW:schema stored.
func encodePlain(t testing.TB, schema *arrow.Schema, recs ...arrow.RecordBatch) []byte {
	return encodePlainKV(t, schema, nil, recs...)
}

// encodePlainKV is encodePlain with the footer pairs kv (key, value, …) appended after
// ARROW:schema, as pyarrow's add_key_value_metadata or GeoParquet writers do.
func encodePlainKV(t testing.TB, schema *arrow.Schema, kv []string, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	return encodePlainWith(t, schema, parquet.NewWriterProperties(), kv, recs...)
}

// encodePlainWith is encodePlainKV with the writer properties props.
func encodePlainWith(t testing.TB, schema *arrow.Schema, props *parquet.WriterProperties, kv []string, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := w.AppendKeyValueMetadata(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeRecord writes rec as one chunk with the layout of rec's own schema and returns its bytes.
func writeRecord(t testing.TB, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, layoutOfRecord(t, rec), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layoutOfRecord returns the layout of a chunk of rec written by plain pqarrow.
func layoutOfRecord(t testing.TB, rec arrow.RecordBatch) *Layout {
	t.Helper()
	c, err := Open(bytes.NewReader(encodePlain(t, rec.Schema(), rec)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Layout()
}

// rewrite reads every row of data in batches of batchRows and writes them with storeopt's
// Writer in data's layout.
func rewrite(t testing.TB, data []byte, batchRows int64) []byte {
	t.Helper()
	return rewriteWith(t, data, batchRows, WriterOptions{})
}

// rewriteWith is rewrite with writer options opts.
func rewriteWith(t testing.TB, data []byte, batchRows int64, opts WriterOptions) []byte {
	t.Helper()
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, c.Layout(), opts)
	if err != nil {
		t.Fatal(err)
	}
	br, err := c.Batches(context.Background(), batchRows)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Release()
	for rec := br.Next(); rec != nil; rec = br.Next() {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := br.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inMemoryReader is a reader that says its bytes are in memory, like a store object read whole:
// Open then reads column chunks through a small buffer (InMemory).
type inMemoryReader struct{ *bytes.Reader }

func (inMemoryReader) InMemory() bool { return true }

// readAll opens data as an in-memory object and reads its timestamps and every batch; it returns
// the chunk's facts, the digest of all rows and the first error met.
func readAll(data []byte, batchRows int64) (c *Chunk, d verify.Digest, err error) {
	return readAllFrom(inMemoryReader{bytes.NewReader(data)}, batchRows)
}

// readAllFrom is readAll from any reader (a plain *bytes.Reader reads column chunks whole).
func readAllFrom(r parquet.ReaderAtSeeker, batchRows int64) (c *Chunk, d verify.Digest, err error) {
	c, err = Open(r, nil)
	if err != nil {
		return nil, d, err
	}
	defer c.Close()
	ts, err := c.Timestamps(context.Background())
	if err != nil {
		return c, d, err
	}
	n := ts.Len()
	ts.Release()
	if int64(n) != c.NumRows {
		return c, d, fmt.Errorf("%d timestamps for %d rows", n, c.NumRows)
	}
	br, err := c.Batches(context.Background(), batchRows)
	if err != nil {
		return c, d, err
	}
	defer br.Release()
	var h verify.Hasher
	for rec := br.Next(); rec != nil; rec = br.Next() {
		if rec.Schema() != c.Schema {
			return c, d, errors.New("batch does not carry the chunk's schema")
		}
		h.AddRows(&d, rec, 0, rec.NumRows())
	}
	return c, d, br.Err()
}

func TestRoundTripKeepsFooterVerbatim(t *testing.T) {
	schema := topicSchema()
	const n = 3000
	l := layoutOf(t, schema)
	data := write(t, schema, n, []int{1000}, WriterOptions{RowGroupRows: 700})
	c, got, err := readAll(data, 256)
	if err != nil {
		t.Fatal(err)
	}
	if d := FirstFooterDifference(l.Footer, c.Footer); d != "" {
		t.Fatalf("footer not verbatim: %s", d)
	}
	in, _ := l.Footer.Value(ArrowSchemaKey)
	if out, ok := c.Footer.Value(ArrowSchemaKey); !ok || out != in {
		t.Fatalf("ARROW:schema not byte-identical")
	}
	if c.NumRows != n || c.TimestampField != 0 || c.TimestampLeaf != 0 || c.NumRowGroups() != 5 || c.FooterBytes <= 0 {
		t.Fatalf("rows %d ts field %d leaf %d row groups %d footer %d", c.NumRows, c.TimestampField, c.TimestampLeaf, c.NumRowGroups(), c.FooterBytes)
	}
	var h verify.Hasher
	all := rows(t, schema, 0, n)
	defer all.Release()
	if want := h.Record(all); got != want {
		t.Fatalf("rows read back: digest %s, want %s", got, want)
	}
	// A second file of other rows with the same schema has the same footer ID.
	c2, _, err := readAll(write(t, schema, 10, []int{10}, WriterOptions{}), 4)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Footer.ID != c.Footer.ID || c.Footer.ID == "" {
		t.Fatalf("footer IDs differ for one schema")
	}
	// ... and a schema that differs only in one metadata value does not.
	other := arrow.NewSchema(schema.Fields(), ptr(md("mosaico:topic", "run_7/imu", "format", "imu-v3", "a_key", "first? no: stored order")))
	c3, _, err := readAll(write(t, other, 10, []int{10}, WriterOptions{}), 4)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Footer.ID == c.Footer.ID {
		t.Fatalf("footer ID ignores the stored schema's metadata")
	}
	if d := FirstFooterDifference(c.Footer, c3.Footer); !strings.Contains(d, `footer value of "format" differs: "imu-v2" vs "imu-v3"`) {
		t.Fatalf("first difference %q", d)
	}
}

func ptr[T any](v T) *T { return &v }

// The timestamp column need not be the first one: TimestampField and TimestampLeaf follow it
// past a nested column.
func TestTimestampAfterNestedColumn(t *testing.T) {
	fields := topicSchema().Fields()
	fields[0], fields[5] = fields[5], fields[0]
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 5 {
		b.Field(0).(*array.ListBuilder).Append(true)
		b.Field(0).(*array.ListBuilder).ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2}, nil)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.StringBuilder).Append("x")
		b.Field(3).(*array.BinaryBuilder).Append(nil)
		b.Field(4).(*array.BooleanBuilder).Append(true)
		b.Field(5).(*array.Int64Builder).Append(int64(100 - i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	c, err := Open(bytes.NewReader(writeRecord(t, rec)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.TimestampField != 5 || c.TimestampLeaf != 5 {
		t.Fatalf("timestamp field %d leaf %d, want 5 and 5 (the list has one leaf)", c.TimestampField, c.TimestampLeaf)
	}
	ts, err := c.Timestamps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Release()
	if ts.Len() != 5 || ts.Value(0) != 100 || ts.Value(4) != 96 {
		t.Fatalf("timestamps %v", ts)
	}
}

// The same rows in the same batches always give byte-identical files (what retries and the
// split of a topic over several WriteChunks activities rely on: both see the same batches). Other
// batch splits give the same rows and row groups; their bytes may differ, because arrow-go checks
// the page size after every 1024 values of each batch, so page boundaries follow batch
// boundaries.
func TestWriterDeterministic(t *testing.T) {
	schema := topicSchema()
	const n = 120_000 // several data pages per column chunk
	opts := WriterOptions{RowGroupRows: 50_000}
	want := write(t, schema, n, []int{n}, opts)
	_, wantDigest, err := readAll(want, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, splits := range [][]int{{n}, {1000}, {7, 50_000, 3}, {49_999, 2}, {65_536}} {
		got := write(t, schema, n, splits, opts)
		if again := write(t, schema, n, splits, opts); !bytes.Equal(got, again) {
			t.Errorf("splits %v: two writes of the same batches differ (%d and %d bytes)", splits, len(got), len(again))
		}
		c, d, err := readAll(got, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if d != wantDigest || c.NumRows != n || c.NumRowGroups() != 3 {
			t.Errorf("splits %v: %d rows in %d row groups, digest %v; want %d rows in 3, digest %v",
				splits, c.NumRows, c.NumRowGroups(), d, n, wantDigest)
		}
	}
	c, err := Open(bytes.NewReader(want), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.NumRowGroups() != 3 {
		t.Errorf("%d row groups, want 3 of at most 50000 rows", c.NumRowGroups())
	}
}

// TestParallelEncodingWritesTheSameBytes proves that encoding a row group's column chunks in
// parallel goroutines gives the very bytes of encoding them one after the other: whatever a
// worker's cores, the same rows give the same file.
func TestParallelEncodingWritesTheSameBytes(t *testing.T) {
	schema := topicSchema()
	const n = 120_000
	// {5000, 7}: a row group is encoded a quarter at a time (EncodeShare), its column chunks
	// continued across the quarters.
	for _, splits := range [][]int{{n}, {7, 50_000, 3}, {5000, 7}} {
		want := write(t, schema, n, splits, WriterOptions{RowGroupRows: 50_000})
		for _, workers := range []int{2, 3, 16} {
			got := write(t, schema, n, splits, WriterOptions{RowGroupRows: 50_000, EncodeWorkers: workers})
			if !bytes.Equal(got, want) {
				t.Errorf("splits %v, %d encoders: %d bytes, differing from the %d bytes of one encoder", splits, workers, len(got), len(want))
			}
		}
		// A budget of helpers shared with others: none free (the caller encodes every column
		// of the buffered row group) or fewer than the encoders.
		for _, budget := range []int64{0, 1} {
			got := write(t, schema, n, splits, WriterOptions{RowGroupRows: 50_000, EncodeWorkers: 4, Helpers: semaphore.NewWeighted(budget)})
			if !bytes.Equal(got, want) {
				t.Errorf("splits %v, 4 encoders with %d helpers: %d bytes, differing from the %d bytes of one encoder", splits, budget, len(got), len(want))
			}
		}
	}
	for _, tc := range arrowtypes.Cases() {
		in, err := arrowtypes.File(tc, 600)
		if err != nil {
			t.Fatal(err)
		}
		want := rewriteWith(t, in, 97, WriterOptions{RowGroupRows: 250})
		if got := rewriteWith(t, in, 97, WriterOptions{RowGroupRows: 250, EncodeWorkers: 2}); !bytes.Equal(got, want) {
			t.Errorf("%s: parallel encoders wrote %d bytes differing from the %d bytes of one encoder", tc.Name, len(got), len(want))
		}
	}
}

// cameraRows builds rows [from, from+n) of a camera topic: a timestamp, a frame name and a
// payload of 3000 pseudo-random bytes, most of a row's bytes.
func cameraRows(t testing.TB, from, n int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "frame_id", Type: arrow.BinaryTypes.String},
		{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	payload := make([]byte, 3000)
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 33_000_000)
		b.Field(1).(*array.StringBuilder).Append("camera_front")
		if i%9 == 4 {
			b.Field(2).AppendNull()
			continue
		}
		for k := range payload {
			payload[k] = byte((i*7919 + k*k) >> 3)
		}
		b.Field(2).(*array.BinaryBuilder).Append(payload)
	}
	return b.NewRecordBatch()
}

// TestOneColumnRowGroupsWriteTheSameBytes writes camera rows, whose bytes are one column's, with
// several encoders: each row group is then encoded streamed (Writer.streamed), as one encoder
// encodes it, and the file is the same bytes as one encoder's.
func TestOneColumnRowGroupsWriteTheSameBytes(t *testing.T) {
	const n = 3000
	first := cameraRows(t, 0, 1)
	schema := first.Schema()
	rec := cameraRows(t, 0, n)
	defer rec.Release()
	if !oneColumn([]arrow.RecordBatch{rec}) {
		t.Fatal("camera rows are not seen as one column's bytes")
	}
	sensor := rows(t, topicSchema(), 0, 1000)
	defer sensor.Release()
	if oneColumn([]arrow.RecordBatch{sensor}) {
		t.Fatal("sensor rows are seen as one column's bytes")
	}
	c, err := Open(bytes.NewReader(encodePlain(t, schema, first)), nil)
	first.Release()
	if err != nil {
		t.Fatal(err)
	}
	layout := c.Layout()
	c.Close()
	write := func(opts WriterOptions, split int64) []byte {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, layout, opts)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < n; off += split {
			part := rec.NewSlice(off, min(off+split, n))
			err := w.Write(part)
			part.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, split := range []int64{7, 100, n} {
		want := write(WriterOptions{RowGroupRows: 1000}, split)
		for _, opts := range []WriterOptions{{RowGroupRows: 1000, EncodeWorkers: 2}, {RowGroupRows: 1000, EncodeWorkers: 4},
			{RowGroupRows: 1000, EncodeWorkers: 4, Helpers: semaphore.NewWeighted(0)}} {
			if got := write(opts, split); !bytes.Equal(got, want) {
				t.Errorf("batches of %d rows, %d encoders: %d bytes, differing from the %d bytes of one encoder",
					split, opts.EncodeWorkers, len(got), len(want))
			}
		}
	}
}

func TestNewWriterRequiresLayout(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, nil, WriterOptions{}); err == nil {
		t.Fatalf("writer without layout accepted")
	}
}

// writePlain writes a file with plain pqarrow (no storeopt Writer), optionally without the
// ARROW:schema entry.
func writePlain(t *testing.T, schema *arrow.Schema, cols []arrow.Array, storeSchema bool) []byte {
	t.Helper()
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	defer rec.Release()
	var buf bytes.Buffer
	var aprops []pqarrow.WriterOption
	if storeSchema {
		aprops = append(aprops, pqarrow.WithStoreSchema())
	}
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func int64s(vals ...int64) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

// A file written without ARROW:schema keeps its footer key-value pairs, and gains no
// ARROW:schema when rewritten.
func TestOpenWithoutStoredSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}}, ptr(md("topic", "run_1/gps")))
	data := writePlain(t, schema, []arrow.Array{int64s(3, 1, 2)}, false)
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Footer.KeyValues) != 1 || c.Footer.KeyValues[0].Key != "topic" || *c.Footer.KeyValues[0].Value != "run_1/gps" {
		t.Fatalf("footer pairs %v, want only topic=run_1/gps", c.Footer.KeyValues)
	}
	out := rewrite(t, data, 2)
	back, err := Open(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if d := FirstFooterDifference(c.Footer, back.Footer); d != "" {
		t.Fatalf("rewritten footer: %s", d)
	}
	if _, ok := back.Footer.Value(ArrowSchemaKey); ok {
		t.Fatalf("the output gained an ARROW:schema")
	}
}

func assertInputError(t *testing.T, what string, err error, says string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", what)
		return
	}
	if !IsInputError(err) {
		t.Errorf("%s: %v is not an *InputError", what, err)
	}
	if says != "" && !strings.Contains(err.Error(), says) {
		t.Errorf("%s: %q does not say %q", what, err, says)
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	good := write(t, topicSchema(), 200, []int{200}, WriterOptions{})
	_, err := Open(bytes.NewReader([]byte("PAR1 this is not a parquet file, just text PAR1")), nil)
	assertInputError(t, "not Parquet", err, "not a readable Parquet file")
	_, err = Open(bytes.NewReader(nil), nil)
	assertInputError(t, "empty file", err, "not a readable Parquet file")
	for _, cut := range []int{len(good) - 1, len(good) - 8, len(good) / 2, 12, 4} {
		_, err := Open(bytes.NewReader(good[:cut]), nil)
		assertInputError(t, fmt.Sprintf("truncated to %d of %d bytes", cut, len(good)), err, "")
	}

	noTs := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err = Open(bytes.NewReader(writePlain(t, noTs, []arrow.Array{int64s(1)}, true)), nil)
	assertInputError(t, "no timestamp_ns", err, `no column "timestamp_ns" (type int64 required)`)

	wrongTypes := map[string]arrow.Array{}
	{
		b := array.NewInt32Builder(memory.DefaultAllocator)
		b.Append(1)
		wrongTypes["int32"] = b.NewArray()
		b.Release()
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		sb.Append("1")
		wrongTypes["utf8"] = sb.NewArray()
		sb.Release()
		tb := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Nanosecond})
		tb.Append(1)
		wrongTypes["timestamp[ns]"] = tb.NewArray()
		tb.Release()
	}
	for name, col := range wrongTypes {
		sc := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: col.DataType()}}, nil)
		_, err := Open(bytes.NewReader(writePlain(t, sc, []arrow.Array{col}, true)), nil)
		assertInputError(t, "timestamp_ns of type "+name, err, "int64 required")
		col.Release()
	}
	dup := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}, {Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err = Open(bytes.NewReader(writePlain(t, dup, []arrow.Array{int64s(1), int64s(2)}, true)), nil)
	assertInputError(t, "two timestamp_ns columns", err, "appears 2 times")
}

// Corrupting bytes of a valid chunk anywhere gives an error or a successful read, never a panic,
// whether it breaks the footer, a page header or page data.
func TestCorruptChunksNeverPanic(t *testing.T) {
	good := write(t, topicSchema(), 2000, []int{2000}, WriterOptions{RowGroupRows: 500})
	r := rand.New(rand.NewPCG(8, 9))
	failures := 0
	for range 150 {
		data := bytes.Clone(good)
		for range 1 + r.IntN(4) {
			data[r.IntN(len(data))] ^= byte(1 + r.IntN(255))
		}
		_, _, err := readAll(data, 300)
		_, _, errWhole := readAllFrom(bytes.NewReader(data), 300)
		if (err == nil) != (errWhole == nil) {
			t.Errorf("buffered read error %v, whole-column-chunk read error %v", err, errWhole)
		}
		if err != nil {
			failures++
			if !IsInputError(err) {
				t.Errorf("corrupt chunk: %v is not an *InputError", err)
			}
		}
	}
	if failures == 0 {
		t.Fatalf("no corruption was noticed: the test does not test anything")
	}
}

// sharedFiles returns the Parquet files of sharedData/sub, skipping the test when there are none
// (failing it under CI).
func sharedFiles(t *testing.T, sub string) []string {
	t.Helper()
	dir := filepath.Join(sharedData, sub)
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(files) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("no files in %s", dir)
		}
		t.Skipf("no files in %s", dir)
	}
	return files
}

func TestBadDataFilesAreRefused(t *testing.T) {
	files := sharedFiles(t, "bad_data")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = readAll(data, 100)
		if err == nil {
			t.Errorf("%s: read without error", filepath.Base(f))
			continue
		}
		if !IsInputError(err) {
			t.Errorf("%s: %v is not an *InputError", filepath.Base(f), err)
		}
		t.Logf("%s: %v", filepath.Base(f), err)
		// Open refuses them for the missing timestamp column before any page is read; read their
		// rows anyway through the chunk's batch reader, which must fail or succeed, not panic.
		if err := readRowsUnchecked(data); err != nil && !IsInputError(err) {
			t.Errorf("%s: reading rows: %v is not an *InputError", filepath.Base(f), err)
		} else {
			t.Logf("%s: reading rows: %v", filepath.Base(f), err)
		}
	}
}

// readRowsUnchecked opens data as Open does but without requiring timestamp_ns, and reads all
// its rows with Batches.
func readRowsUnchecked(data []byte) (err error) {
	defer guard(&err, "test open")
	pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(readerProperties(memory.DefaultAllocator, false)))
	if err != nil {
		return &InputError{Err: err}
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return &InputError{Err: err}
	}
	c := &Chunk{pf: pf, fr: fr, NumRows: pf.NumRows()}
	if c.Schema, err = fr.Schema(); err != nil {
		return &InputError{Err: err}
	}
	br, err := c.Batches(context.Background(), 64)
	if err != nil {
		return err
	}
	defer br.Release()
	for br.Next() != nil {
	}
	return br.Err()
}

// Valid files of other tools without timestamp_ns are refused with the clear message, never a
// panic. Two files cannot even be mapped to Arrow; they are refused with the mapping error.
func TestParquetTestingFilesWithoutTimestamp(t *testing.T) {
	unmappable := map[string]string{
		"incorrect_map_schema.parquet": `cannot map Parquet schema to Arrow (column "my_map", Parquet optional group logical Map converted MAP): MAP keys must be required`,
		"unknown-logical-type.parquet": "invalid logical type",
	}
	files := sharedFiles(t, "parquet-testing")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(bytes.NewReader(data), nil)
		says, ok := unmappable[filepath.Base(f)]
		if !ok {
			says = `no column "timestamp_ns" (type int64 required)`
		}
		assertInputError(t, filepath.Base(f), err, says)
	}
}

func TestFirstFooterDifference(t *testing.T) {
	base := topicSchema()
	footer := func(sc *arrow.Schema, extra ...string) *Footer {
		full := rows(t, base, 1, 1)
		defer full.Release()
		rec := array.NewRecordBatch(sc, full.Columns()[:sc.NumFields()], 1)
		defer rec.Release()
		data := encodePlainKV(t, sc, extra, rec)
		f, err := ReadFooter(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	want := footer(base)
	if d := FirstFooterDifference(want, footer(topicSchema())); d != "" {
		t.Fatalf("equal footers differ: %s", d)
	}
	fields := base.Fields()
	nullable := append([]arrow.Field(nil), fields...)
	nullable[1].Nullable = true
	if d := FirstFooterDifference(want, footer(arrow.NewSchema(nullable, ptr(base.Metadata())))); !strings.Contains(d, `Parquet schema element 2 differs: "seq"`) {
		t.Errorf("nullability: %q", d)
	}
	if d := FirstFooterDifference(want, footer(arrow.NewSchema(fields[:5], ptr(base.Metadata())))); !strings.Contains(d, `Parquet schema has 9 elements vs 6 (first extra element "accel"{repetition_type=1,name="accel"`) {
		t.Errorf("field count: %q", d)
	}
	meta := append([]arrow.Field(nil), fields...)
	meta[1].Metadata = md("z", "last", "a", "changed")
	if d := FirstFooterDifference(want, footer(arrow.NewSchema(meta, ptr(base.Metadata())))); !strings.Contains(d, `footer value of "ARROW:schema" differs: field "seq" metadata differs: {"z":"last","a":"first",} vs {"z":"last","a":"changed",}`) {
		t.Errorf("field metadata: %q", d)
	}
	if d := FirstFooterDifference(want, footer(base, "geo", "{}")); !strings.Contains(d, `footer has 4 key/value pairs vs 5 (first extra key "geo")`) {
		t.Errorf("extra pair: %q", d)
	}
	if d := FirstFooterDifference(footer(base, "geo", `{"bbox":[1]}`), footer(base, "geo", `{"bbox":[2]}`)); !strings.Contains(d, `footer value of "geo" differs: "{\"bbox\":[1]}" vs "{\"bbox\":[2]}"`) {
		t.Errorf("per-file value: %q", d)
	}
}

func TestBufferedAndWholeColumnChunkReadsAgree(t *testing.T) {
	data := write(t, topicSchema(), 120_000, []int{7000}, WriterOptions{RowGroupRows: 50_000})
	c1, d1, err := readAll(data, 4096)
	if err != nil {
		t.Fatal(err)
	}
	c2, d2, err := readAllFrom(bytes.NewReader(data), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 || c1.NumRows != 120_000 || c2.NumRows != 120_000 {
		t.Fatalf("buffered read: %d rows, digest %v; whole read: %d rows, digest %v", c1.NumRows, d1, c2.NumRows, d2)
	}
}

func TestWriterHoldsOneRowGroupAndDiscardReleasesIt(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := topicSchema()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, layoutOf(t, schema), WriterOptions{RowGroupRows: 1000, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	rec := rows(t, schema, 0, 2500) // two full row groups are written, 500 rows are held
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if w.inGroup != 500 || len(w.pending) != 1 {
		t.Fatalf("holding %d rows in %d batches, want the 500 rows of the third row group", w.inGroup, len(w.pending))
	}
	written := buf.Len()
	if written == 0 {
		t.Fatal("nothing was written for two complete row groups")
	}
	w.Discard()
	if w.inGroup != 0 || len(w.pending) != 0 {
		t.Fatalf("after Discard: %d rows in %d batches held", w.inGroup, len(w.pending))
	}
}

// Chunks written by pandas (through pyarrow) store the row count of their index in a "pandas"
// pair and, again, in ARROW:schema's schema metadata: values that differ per file. They are
// per-file differences the outputs take from the first chunk; anything else is drift.
func TestPerFileDifferences(t *testing.T) {
	base := topicSchema()
	footer := func(sc *arrow.Schema, extra ...string) *Footer {
		rec := rows(t, base, 1, 1)
		defer rec.Release()
		data := encodePlainKV(t, sc, extra, array.NewRecordBatch(sc, rec.Columns(), 1))
		f, err := ReadFooter(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	withMD := func(kv ...string) *arrow.Schema { return arrow.NewSchema(base.Fields(), ptr(md(kv...))) }
	want := footer(withMD("pandas", `{"index_columns": [{"kind": "range", "stop": 40}]}`), "geo", `{"bbox": [1]}`)
	got := footer(withMD("pandas", `{"index_columns": [{"kind": "range", "stop": 17}]}`), "geo", `{"bbox": [2]}`)
	keys, drift := PerFileDifferences(want, got)
	if drift != "" || strings.Join(keys, ",") != "pandas,ARROW:schema,geo" {
		t.Fatalf("per-file values: keys %v, drift %q", keys, drift)
	}
	if keys, drift := PerFileDifferences(want, want); keys != nil || drift != "" {
		t.Fatalf("equal footers: %v %q", keys, drift)
	}
	fields := base.Fields()
	fields[1].Metadata = md("z", "last", "a", "changed")
	other := footer(arrow.NewSchema(fields, ptr(md("pandas", `{"index_columns": [{"kind": "range", "stop": 40}]}`))), "geo", `{"bbox": [1]}`)
	if _, drift := PerFileDifferences(want, other); !strings.Contains(drift, `footer value of "ARROW:schema" differs: field "seq" metadata differs`) {
		t.Fatalf("field metadata: drift %q", drift)
	}
	nullable := base.Fields()
	nullable[1].Nullable = true
	if _, drift := PerFileDifferences(want, footer(arrow.NewSchema(nullable, ptr(base.Metadata())))); !strings.Contains(drift, `Parquet schema element 2 differs: "seq"`) {
		t.Fatalf("nullability: drift %q", drift)
	}
	if _, drift := PerFileDifferences(want, footer(withMD("pandas", "{}"))); !strings.Contains(drift, `footer has 3 key/value pairs vs 2 (first extra key "geo")`) {
		t.Fatalf("missing pair: drift %q", drift)
	}
}

// No empty row group, no empty chunk: rows that are an exact multiple of the
// row group size end with a full row group, not an empty one; a writer closed without rows
// fails instead of writing a chunk of nothing.
func TestNoEmptyRowGroupsOrChunks(t *testing.T) {
	schema := topicSchema()
	data := write(t, schema, 3000, []int{1000, 500, 1500}, WriterOptions{RowGroupRows: 1000})
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.NumRowGroups() != 3 || c.EmptyRowGroup() != -1 {
		t.Fatalf("%d row groups, first empty one %d; want 3 full ones", c.NumRowGroups(), c.EmptyRowGroup())
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, layoutOf(t, schema), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty := rows(t, schema, 0, 0)
	defer empty.Release()
	if err := w.Write(empty); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrNoRows) {
		t.Fatalf("closing a writer without rows: %v, want ErrNoRows", err)
	}
}
