package parquetio

import (
	"bytes"
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
		{"output of a zstd input", out, map[string]compress.Compression{"timestamp_ns": zstd, "label": zstd, "noise": plain}},
		{"output of that output", again, map[string]compress.Compression{"timestamp_ns": zstd, "label": zstd, "noise": plain}},
		{"output of an uncompressed input", fromPlain, map[string]compress.Compression{"timestamp_ns": zstd, "label": zstd, "noise": zstd}},
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
	// compressed, as the rest of such a topic may well compress.
	for col, codec := range codecs(t, fromFew) {
		if codec != zstd {
			t.Errorf("output of a 3-row input: column %s is %s, want ZSTD", col, codec)
		}
	}
	if _, d, err := readAll(fromFew, 4096); err != nil || d != wantFew {
		t.Errorf("output of a 3-row input: rows digest %v (%v), want %v", d, err, wantFew)
	}
}
