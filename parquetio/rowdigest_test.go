package parquetio

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/storeopt/storeopt/internal/arrowtypes"
	"github.com/storeopt/storeopt/verify"
)

// batchDigest is the digest of every row of data read as record batches of lim.
func batchDigest(t testing.TB, data []byte, lim Limits) verify.Digest {
	t.Helper()
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := c.BatchesWithin(context.Background(), lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Release()
	var h verify.Hasher
	var d verify.Digest
	for rec := br.Next(); rec != nil; rec = br.Next() {
		h.AddRows(&d, rec, 0, rec.NumRows())
	}
	if err := br.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// rowDigest is DigestRows of every row group of data.
func rowDigest(data []byte, lim Limits) (verify.Digest, error) {
	var d verify.Digest
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		return d, err
	}
	defer c.Close()
	groups := make([]int, c.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	err = c.DigestRows(context.Background(), lim, groups, &d)
	return d, err
}

// TestDigestRowsIsTheBatchDigest digests chunks of every type the tests know, written by a
// Writer (PLAIN pages, digested from them where the type allows), by plain pqarrow (dictionary
// pages, read as Arrow arrays) and with V2 pages, from their pages and as record batches: the
// digests are equal, also when the row groups are read as batches because a column chunk is
// larger than two batches.
func TestDigestRowsIsTheBatchDigest(t *testing.T) {
	lim := Limits{Rows: 97, Bytes: 1 << 20}
	tiny := Limits{Rows: 97, Bytes: 64}
	check := func(name string, data []byte) {
		t.Helper()
		want := batchDigest(t, data, lim)
		for _, l := range []Limits{lim, tiny} {
			got, err := rowDigest(data, l)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if got != want {
				t.Errorf("%s, limits %+v: page digest %s, batch digest %s", name, l, got, want)
			}
		}
	}
	for _, tc := range arrowtypes.Cases() {
		in, err := arrowtypes.File(tc, 600)
		if err != nil {
			t.Fatal(err)
		}
		check(tc.Name+" (pqarrow)", in)
		check(tc.Name+" (Writer)", rewriteWith(t, in, 97, WriterOptions{RowGroupRows: 250}))
	}
	rec := cameraRows(t, 0, 500)
	defer rec.Release()
	camera := writeRecord(t, rec)
	check("camera rows", camera)
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithDataPageSize(16<<10), parquet.WithMaxRowGroupLength(200))
	check("camera rows, V2 pages", encodePlainWith(t, rec.Schema(), props, nil, rec))
	check("readings", writeRecord(t, readings(t, 3000)))
	sensor := rows(t, topicSchema(), 0, 1000)
	defer sensor.Release()
	check("sensor rows (nested)", writeRecord(t, sensor))

	// The camera rows' frames are digested from their pages, and a changed byte of a stored
	// frame page is an error or another digest.
	c, err := Open(bytes.NewReader(camera), nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := mustColumnChunk(t, c, 0, 2)
	c.Close()
	if _, ok := pageDigestible(arrow.BinaryTypes.Binary, c.pf.MetaData().Schema.Column(2), cc); !ok {
		t.Fatal("the camera rows' frames are not digested from their pages")
	}
	want := batchDigest(t, camera, lim)
	for _, at := range []int64{cc.DataPageOffset() + cc.TotalCompressedSize()/2, cc.DataPageOffset() + cc.TotalCompressedSize() - 3} {
		broken := bytes.Clone(camera)
		broken[at] ^= 0x10
		if got, err := rowDigest(broken, lim); err == nil && got == want {
			t.Errorf("a byte changed at %d of the frames' column chunk: the same digest", at)
		} else if err != nil && !IsInputError(err) {
			t.Errorf("a byte changed at %d: %v, not an input error", at, err)
		}
	}
}

func mustColumnChunk(t *testing.T, c *Chunk, rg, leaf int) *metadata.ColumnChunkMetaData {
	t.Helper()
	cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// readings builds n rows of a sensor topic of flat columns: a timestamp, required and nullable
// float64 readings, a nullable int16.
func readings(t *testing.T, n int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "status", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 2_500_000)
		b.Field(1).(*array.Float64Builder).Append(math.Sin(float64(i)) * 9.81)
		if i%11 == 3 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 7)
		}
		if i%5 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int16Builder).Append(int16(i*37) - 20000)
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkDigestRows digests a chunk of 300 000 IMU-like rows (a timestamp, a frame name, ten
// float64 readings) written by a Writer, from its pages (DigestRows) and as record batches.
func BenchmarkDigestRows(b *testing.B) {
	fields := []arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}, {Name: "frame_id", Type: arrow.BinaryTypes.String}}
	for _, n := range []string{"ax", "ay", "az", "gx", "gy", "gz", "qx", "qy", "qz", "qw"} {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64})
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer bld.Release()
	for i := range 300_000 {
		bld.Field(0).(*array.Int64Builder).Append(int64(i) * 2_500_000)
		bld.Field(1).(*array.StringBuilder).Append("imu_link")
		for k := 2; k < 12; k++ {
			bld.Field(k).(*array.Float64Builder).Append(math.Sin(float64(i*k)) * 9.81)
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	data := writeRecord(b, rec)
	lim := Limits{Rows: 65536, Bytes: 2 << 20}
	b.Run("pages", func(b *testing.B) {
		for b.Loop() {
			if _, err := rowDigest(data, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batches", func(b *testing.B) {
		for b.Loop() {
			batchDigest(b, data, lim)
		}
	})
}
