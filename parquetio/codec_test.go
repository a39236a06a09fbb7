package parquetio

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// noisyRows are n rows of a sensor topic: increasing timestamps, a repetitive label (both
// compress well) and a float of uniform noise (incompressible).
func noisyRows(n int) (*arrow.Schema, arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "noise", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 2_500_000)
		b.Field(1).(*array.StringBuilder).Append([]string{"imu", "imu-left", "imu-right"}[i%3])
		b.Field(2).(*array.Float64Builder).Append(r.Float64())
	}
	return schema, b.NewRecordBatch()
}

// encodeWith writes rec with plain pqarrow in codec, ARROW:schema stored.
func encodeWith(t *testing.T, rec arrow.RecordBatch, codec compress.Compression) []byte {
	t.Helper()
	return encodePlainWith(t, rec.Schema(), parquet.NewWriterProperties(parquet.WithCompression(codec)), nil, rec)
}

// codecs returns the codec of each leaf column of the file's first row group.
func codecs(t *testing.T, data []byte) map[string]compress.Compression {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]compress.Compression{}
	rg := r.MetaData().RowGroup(0)
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		out[cc.PathInSchema().String()] = cc.Compression()
	}
	return out
}

// TestIncompressibleColumnsAreStoredUncompressed proves that an output compresses only the
// columns its input's compression shrank, keeps that choice when it is rewritten itself, and
// compresses every column of an input another writer stored uncompressed; the rows stay the same.
func TestIncompressibleColumnsAreStoredUncompressed(t *testing.T) {
	_, rec := noisyRows(20_000)
	defer rec.Release()
	zstd, plain := compress.Codecs.Zstd, compress.Codecs.Uncompressed
	in := encodeWith(t, rec, zstd)
	_, want, err := readAll(in, 4096)
	if err != nil {
		t.Fatal(err)
	}
	out := rewrite(t, in, 4096)
	again := rewrite(t, out, 4096)
	fromPlain := rewrite(t, encodeWith(t, rec, plain), 4096)
	few := rec.NewSlice(0, 3)
	defer few.Release()
	_, wantFew, err := readAll(encodeWith(t, few, zstd), 4096)
	if err != nil {
		t.Fatal(err)
	}
	fromFew := rewrite(t, encodeWith(t, few, zstd), 4096)
	for _, tc := range []struct {
		name string
		data []byte
		want map[string]compress.Compression
	}{
		{"output of a zstd input", out, map[string]compress.Compression{"timestamp_ns": plain, "label": zstd, "noise": plain}},
		{"output of that output", again, map[string]compress.Compression{"timestamp_ns": plain, "label": zstd, "noise": plain}},
		{"output of an uncompressed input", fromPlain, map[string]compress.Compression{"timestamp_ns": plain, "label": zstd, "noise": zstd}},
	} {
		got := codecs(t, tc.data)
		for col, codec := range tc.want {
			if got[col] != codec {
				t.Errorf("%s: column %s is %s, want %s", tc.name, col, got[col], codec)
			}
		}
		if _, d, err := readAll(tc.data, 4096); err != nil || d != want {
			t.Errorf("%s: rows digest %v (%v), want the input's %v", tc.name, d, err, want)
		}
	}
	// Three rows, whose zstd frames are larger than their values, judge nothing: every column is
	// compressed, as the rest of such a topic may well compress (but timestamp_ns, delta-encoded:
	// TestTimestampsAreDeltaEncoded).
	for col, codec := range codecs(t, fromFew) {
		if codec != zstd && col != "timestamp_ns" {
			t.Errorf("output of a 3-row input: column %s is %s, want ZSTD", col, codec)
		}
	}
	if _, d, err := readAll(fromFew, 4096); err != nil || d != wantFew {
		t.Errorf("output of a 3-row input: rows digest %v (%v), want %v", d, err, wantFew)
	}
}

// jitteredRows are noisyRows whose timestamps come at a steady rate of 1 kHz with up to 40 µs of
// jitter, as a recorder stamps them.
func jitteredRows(n int) arrow.RecordBatch {
	schema, rec := noisyRows(n)
	defer rec.Release()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rec.NumRows() {
		b.Append(i*1_000_000 + r.Int64N(40_000))
	}
	ts := b.NewArray()
	defer ts.Release()
	return array.NewRecordBatch(schema, []arrow.Array{ts, rec.Column(1), rec.Column(2)}, rec.NumRows())
}

// TestTimestampsAreDeltaEncoded proves that an output stores timestamp_ns DELTA_BINARY_PACKED
// (its pages, not only its metadata's list: every data page is read back with that encoding) and
// uncompressed, in fewer bytes than its zstd input stores them plain, the other columns as before,
// the rows the same.
func TestTimestampsAreDeltaEncoded(t *testing.T) {
	rec := jitteredRows(20_000)
	defer rec.Release()
	in := encodeWith(t, rec, compress.Codecs.Zstd)
	_, want, err := readAll(in, 4096)
	if err != nil {
		t.Fatal(err)
	}
	out := rewrite(t, in, 4096)
	if _, d, err := readAll(out, 4096); err != nil || d != want {
		t.Fatalf("rows digest %v (%v), want the input's %v", d, err, want)
	}
	inBytes, _ := columnEncodings(t, in, "timestamp_ns")
	outBytes, encodings := columnEncodings(t, out, "timestamp_ns")
	if len(encodings) != 1 || !encodings[parquet.Encodings.DeltaBinaryPacked] {
		t.Errorf("timestamp_ns data pages encoded %v, want DELTA_BINARY_PACKED only", encodings)
	}
	if outBytes >= inBytes {
		t.Errorf("timestamp_ns stored in %d bytes, its zstd plain input in %d", outBytes, inBytes)
	}
	// zstd saved two thirds of the input's plain timestamps, nothing of their jittered
	// differences: they are stored uncompressed, and so in the output of the output (judged,
	// its input's timestamps delta-encoded already, by what their codec saved: nothing).
	again := rewrite(t, out, 4096)
	for name, data := range map[string][]byte{"output": out, "output of the output": again} {
		if c := codecs(t, data)["timestamp_ns"]; c != compress.Codecs.Uncompressed {
			t.Errorf("%s: timestamp_ns stored %s, want UNCOMPRESSED", name, c)
		}
	}
	if _, encodings := columnEncodings(t, out, "noise"); len(encodings) != 1 || !encodings[parquet.Encodings.Plain] {
		t.Errorf("noise data pages encoded %v, want PLAIN only", encodings)
	}
}

// columnEncodings returns the stored bytes of column name in the file and the encodings of its
// data pages, read page by page.
func columnEncodings(t *testing.T, data []byte, name string) (int64, map[parquet.Encoding]bool) {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	leaf := r.MetaData().Schema.ColumnIndexByName(name)
	var stored int64
	encodings := map[parquet.Encoding]bool{}
	for g := range r.NumRowGroups() {
		rg := r.RowGroup(g)
		cc, err := rg.MetaData().ColumnChunk(leaf)
		if err != nil {
			t.Fatal(err)
		}
		stored += cc.TotalCompressedSize()
		pr, err := rg.GetColumnPageReader(leaf)
		if err != nil {
			t.Fatal(err)
		}
		for pr.Next() {
			if p, ok := pr.Page().(file.DataPage); ok {
				encodings[parquet.Encoding(p.Encoding())] = true
			}
		}
		if err := pr.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return stored, encodings
}

// BenchmarkTimestampEncodings writes and reads the timestamp_ns column of jitteredRows stored
// as inputs store it (PLAIN, zstd) and as a Writer stores it (DELTA_BINARY_PACKED, zstd, as
// judged from such an input; and uncompressed, as judged from the Writer's own output), and
// reports its stored bytes per value.
func BenchmarkTimestampEncodings(b *testing.B) {
	rows := jitteredRows(1 << 20)
	defer rows.Release()
	schema := arrow.NewSchema(rows.Schema().Fields()[:1], nil)
	rec := array.NewRecordBatch(schema, rows.Columns()[:1], rows.NumRows())
	defer rec.Release()
	for _, tc := range []struct {
		name string
		enc  parquet.Encoding
		comp compress.Compression
	}{
		{"plain-zstd", parquet.Encodings.Plain, compress.Codecs.Zstd},
		{"delta-zstd", parquet.Encodings.DeltaBinaryPacked, compress.Codecs.Zstd},
		{"delta", parquet.Encodings.DeltaBinaryPacked, compress.Codecs.Uncompressed},
	} {
		props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithEncoding(tc.enc),
			parquet.WithCompression(tc.comp), parquet.WithMaxRowGroupLength(1<<20), parquet.WithDataPageSize(DataPageBytes))
		data := encodePlainWith(b, schema, props, nil, rec)
		b.Run("write/"+tc.name, func(b *testing.B) {
			b.SetBytes(rec.NumRows() * 8)
			for b.Loop() {
				encodePlainWith(b, schema, props, nil, rec)
			}
			b.ReportMetric(float64(len(data))/float64(rec.NumRows()), "bytes/value")
		})
		b.Run("read/"+tc.name, func(b *testing.B) {
			b.SetBytes(rec.NumRows() * 8)
			for b.Loop() {
				if _, _, err := readAll(data, 65536); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Delta-encoded timestamps read back as written whatever their differences: jumps between the
// ends of int64 (differences that wrap, stored in 64 bits), nulls among them, a row group of
// nulls only and one of a single value; compared with the values written, not with a decoding
// of the input.
func TestDeltaEncodedTimestampsReadBackAsWritten(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	ends := []int64{math.MinInt64, math.MaxInt64, 0, -1, math.MinInt64 + 1, math.MaxInt64 - 1}
	for i := range 9001 {
		switch {
		case i >= 3000 && i < 6000: // a row group of nulls only
			b.AppendNull()
		case i%5 == 0 && i < 9000:
			b.AppendNull()
		default:
			b.Append(ends[i%len(ends)])
		}
	}
	ts := b.NewArray()
	defer ts.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{ts}, int64(ts.Len()))
	defer rec.Release()
	out := rewriteWith(t, encodeWith(t, rec, compress.Codecs.Zstd), 777, WriterOptions{RowGroupRows: 3000})
	if _, encodings := columnEncodings(t, out, "timestamp_ns"); len(encodings) != 1 || !encodings[parquet.Encodings.DeltaBinaryPacked] {
		t.Fatalf("timestamp_ns data pages encoded %v, want DELTA_BINARY_PACKED only", encodings)
	}
	c, err := Open(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Timestamps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.Equal(got, ts) {
		t.Fatal("timestamps read back differ from those written")
	}
}
