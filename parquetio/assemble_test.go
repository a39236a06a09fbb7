package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/storeopt/storeopt/verify"
)

// flatSchema is a sensor topic's: every field a leaf column, one string column (dictionary
// encoded by the ingestion service, so re-encoded by the copy path).
func flatSchema() *arrow.Schema {
	schemaMD := md("mosaico:topic", "run_7/imu")
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: md("unit", "ns")},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "frame", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "accel", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, &schemaMD)
}

// flatRows builds rows [from, from+n) of flatSchema: timestamps ascending (every 9th null when
// nulls, which sort last), the rest varied.
func flatRows(schema *arrow.Schema, from, n int, nulls bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		if nulls && i%9 == 4 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i) * 1000)
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("label-%d", i%13))
		}
		b.Field(3).(*array.BinaryBuilder).Append([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		b.Field(4).(*array.BooleanBuilder).Append(i%3 == 0)
		b.Field(5).(*array.Float64Builder).Append(float64(i) * 0.37)
	}
	return b.NewRecordBatch()
}

// ingestedChunk writes rows as the ingestion service does: zstd, statistics, dictionary
// encoding for strings only, row groups of rowGroupRows.
func ingestedChunk(t testing.TB, rec arrow.RecordBatch, rowGroupRows int64) []byte {
	t.Helper()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("label", true), parquet.WithStats(true), parquet.WithMaxRowGroupLength(rowGroupRows))
	return encodePlainWith(t, rec.Schema(), props, nil, rec)
}

// assemble opens inputs and assembles all their row groups, in order, into one chunk (the copy
// spec taken from the first, as the copy path takes it).
func assemble(t testing.TB, inputs [][]byte, opts WriterOptions) ([]byte, *CopySpec, verify.Digest) {
	t.Helper()
	out, spec, read, err := assembleInputs(t, inputs, opts)
	if spec == nil {
		t.Fatal("no copy spec for the inputs")
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, spec, read
}

func TestAssembledChunkHoldsTheInputsRows(t *testing.T) {
	schema := flatSchema()
	var inputs [][]byte
	var recs []arrow.RecordBatch
	for i := range 5 {
		rec := flatRows(schema, i*3000, 3000, i == 4)
		t.Cleanup(rec.Release)
		recs = append(recs, rec)
		inputs = append(inputs, ingestedChunk(t, rec, 1000))
	}
	opts := WriterOptions{RowGroupRows: 7000}
	out, spec, read := assemble(t, inputs, opts)
	wantCopied := []bool{false, true, false, true, true, true}
	if fmt.Sprint(spec.Copied) != fmt.Sprint(wantCopied) {
		t.Fatalf("copied leaves %v, want %v (timestamp_ns stored PLAIN is re-encoded delta, label is dictionary encoded)", spec.Copied, wantCopied)
	}
	// Rows, footer, copy digest, statistics and page index, the same bytes again.
	checkAssembled(t, inputs, recs, opts, out, spec, read)

	oc, err := Open(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	// Row groups are cut between input row groups: 7 + 7 + 1 input row groups of 1000 rows.
	if oc.NumRowGroups() != 3 || oc.RowGroupRows(0) != 7000 || oc.RowGroupRows(2) != 1000 {
		t.Fatalf("row groups: %d, first %d rows", oc.NumRowGroups(), oc.RowGroupRows(0))
	}
	// timestamp_ns is stored as a rewrite stores it: delta-encoded.
	if !storedDelta(oc.pf.MetaData(), oc.TimestampLeaf) {
		t.Fatal("the output's timestamp_ns is not delta-encoded in every row group")
	}
	// The page index lets a window read fetch a few pages: the timestamps' column index is
	// there, its pages' bounds right.
	w, ok, err := oc.TimestampPages(0, 2_000_000, 2_500_000)
	if err != nil || !ok {
		t.Fatalf("timestamp pages of row group 0: ok %v, %v", ok, err)
	}
	if w.Bytes() <= 0 {
		t.Fatalf("no pages for a window")
	}

	// One flipped bit in a copied page is seen by the copy digest.
	damaged := bytes.Clone(out)
	cc, _ := oc.pf.MetaData().RowGroup(1).ColumnChunk(5)
	damaged[cc.DataPageOffset()+cc.TotalCompressedSize()-1] ^= 1
	dc, err := Open(bytes.NewReader(damaged), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	if d, err := CopyDigest(context.Background(), dc, spec); err == nil && d == read {
		t.Fatal("a damaged page gives the same copy digest")
	}
}

func TestCopySpecRefusesNestedSchemas(t *testing.T) {
	schema := topicSchema()
	rec := rows(t, schema, 0, 100)
	defer rec.Release()
	c, err := Open(bytes.NewReader(encodePlain(t, schema, rec)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if spec := c.Layout().CopySpecFor([]*Chunk{c}); spec != nil {
		t.Fatalf("copy spec %v for a schema with a list column", spec.Copied)
	}
}

func TestAssemblerRefusesInputsStoredOtherwise(t *testing.T) {
	schema := flatSchema()
	first := flatRows(schema, 0, 100, false)
	defer first.Release()
	second := flatRows(schema, 100, 100, false)
	defer second.Release()
	a0 := ingestedChunk(t, first, 100)
	// The second input stores every column with a dictionary: its pages cannot join the first's.
	dict := encodePlainWith(t, schema, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), nil, second)
	// A third stores its values in pages larger than CopiedPageRows rows.
	big := flatRows(schema, 200, CopiedPageRows+1, false)
	defer big.Release()
	large := ingestedChunk(t, big, CopiedPageRows+1)
	for name, other := range map[string][]byte{"dictionary": dict, "large pages": large} {
		c0, err := Open(bytes.NewReader(a0), nil)
		if err != nil {
			t.Fatal(err)
		}
		c1, err := Open(bytes.NewReader(other), nil)
		if err != nil {
			t.Fatal(err)
		}
		spec := c0.Layout().CopySpecFor([]*Chunk{c0})
		a, err := NewAssembler(&bytes.Buffer{}, c0.Layout(), spec, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Append(context.Background(), c0, 0); err != nil {
			t.Fatal(err)
		}
		if err := a.Append(context.Background(), c1, 0); !errors.Is(err, ErrNotCopyable) {
			t.Errorf("%s: appending the second input: %v, want ErrNotCopyable", name, err)
		}
		a.Discard()
		c0.Close()
		c1.Close()
	}
}

// readLog is a chunk's bytes that record the range of every read.
type readLog struct {
	*bytes.Reader
	reads [][2]int64 // offset, length
}

func (r *readLog) ReadAt(p []byte, off int64) (int, error) {
	r.reads = append(r.reads, [2]int64{off, int64(len(p))})
	return r.Reader.ReadAt(p, off)
}

// The copy digest reads a row group's copied column chunks, which an Assembler writes one after
// the other, in one request when they hold at most copiedReadBytes (one read of the store for
// the row group, not one per column chunk), and takes the same digest as from the inputs.
func TestCopyDigestReadsARowGroupsCopiedColumnsAtOnce(t *testing.T) {
	inputs := ingestedChunks(t, 5, 3000, 1000)
	out, spec, read := assemble(t, inputs, WriterOptions{RowGroupRows: 7000})
	log := &readLog{Reader: bytes.NewReader(out)}
	c, err := Open(log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log.reads = nil
	if d, err := CopyDigest(context.Background(), c, spec); err != nil || d != read {
		t.Fatalf("copy digest %s (%v), the inputs' %s", d, err, read)
	}
	// Reads of copied column chunks' bytes: one per row group, holding all of them.
	for rg := range c.NumRowGroups() {
		var touching [][2]int64
		for _, r := range log.reads {
			for leaf, copied := range spec.Copied {
				cc, _ := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
				if copied && r[0] < cc.DataPageOffset()+cc.TotalCompressedSize() && cc.DataPageOffset() < r[0]+r[1] {
					touching = append(touching, r)
					break
				}
			}
		}
		if len(touching) != 1 {
			t.Fatalf("row group %d: %d reads of its copied column chunks %v, want 1", rg, len(touching), touching)
		}
	}
}

// ingestedChunks returns n ingested chunks of flatSchema, each of rows rows following the
// previous one's in time, in row groups of rowGroup rows.
func ingestedChunks(t testing.TB, n, rows, rowGroup int) [][]byte {
	t.Helper()
	schema := flatSchema()
	var inputs [][]byte
	for i := range n {
		rec := flatRows(schema, i*rows, rows, false)
		inputs = append(inputs, ingestedChunk(t, rec, int64(rowGroup)))
		rec.Release()
	}
	return inputs
}
