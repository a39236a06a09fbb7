package compaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

const prefix = "tp_01J9Z8Y7X6W5V4T3S2R1Q0P9N8"

// Every row carries its identity (input, stored row) so output rows can be traced to inputs.
func testSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"topic", "format"}, []string{"run_7/imu", "imu-v2"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "input", Type: arrow.PrimitiveTypes.Int64},
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"unit"}, []string{"ns"})},
		{Name: "row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, &md)
}

// N stands for a null timestamp.
const N = -1 << 62

func chunkRecord(schema *arrow.Schema, input int, ts []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r, v := range ts {
		b.Field(0).(*array.Int64Builder).Append(int64(input))
		if v == N {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(v)
		}
		b.Field(2).(*array.Int64Builder).Append(int64(r))
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("in%d/row%d", input, r))
	}
	return b.NewRecordBatch()
}

// putChunk writes input's rows (timestamps ts, in stored order) as a chunk at key, in row groups
// of 4 rows.
func putChunk(t *testing.T, b *blob.Bucket, key string, input int, ts []int64) {
	t.Helper()
	putChunkRG(t, b, key, input, ts, 4)
}

// putChunkRG is putChunk with row groups of rgRows rows.
func putChunkRG(t *testing.T, b *blob.Bucket, key string, input int, ts []int64, rgRows int64) {
	t.Helper()
	rec := chunkRecord(testSchema(), input, ts)
	defer rec.Release()
	if err := b.WriteAll(context.Background(), key, encodeChunkRG(t, rec, rgRows), nil); err != nil {
		t.Fatal(err)
	}
}

// encodeChunk writes rec as the ingestion service writes chunks: plain pqarrow, ARROW:schema
// stored, row groups of 4 rows.
func encodeChunk(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	return encodeChunkRG(t, rec, 4)
}

// encodeChunkRG is encodeChunk with row groups of rgRows rows.
func encodeChunkRG(t *testing.T, rec arrow.RecordBatch, rgRows int64) []byte {
	t.Helper()
	return encodeChunkWith(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rgRows)))
}

// encodeChunkWith is encodeChunk with the writer properties props.
func encodeChunkWith(t *testing.T, rec arrow.RecordBatch, props *parquet.WriterProperties) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() > 0 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func k(ts int64, input int, row int64) plan.Key {
	if ts == N {
		return plan.Key{Null: true, Input: input, Row: row}
	}
	return plan.Key{Ts: ts, Input: input, Row: row}
}

func TestScanChunk(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	tests := []struct {
		name         string
		ts           []int64
		step         int64
		sorted       bool
		first, last  plan.Key
		nulls        int64
		minTs, maxTs *int64
		samples      []plan.Sample
	}{
		{
			name: "sorted with ties", ts: []int64{1, 2, 2, 5}, step: 2, sorted: true,
			first: k(1, 3, 0), last: k(5, 3, 3), minTs: ptr(int64(1)), maxTs: ptr(int64(5)),
			samples: []plan.Sample{{Key: k(1, 3, 0), Rows: 2}, {Key: k(2, 3, 2), Rows: 2}},
		},
		{
			name: "unsorted with a null, ties keep stored order", ts: []int64{5, 1, N, 3, 1}, step: 2, sorted: false,
			first: k(1, 3, 1), last: k(N, 3, 2), nulls: 1, minTs: ptr(int64(1)), maxTs: ptr(int64(5)),
			samples: []plan.Sample{{Key: k(1, 3, 1), Rows: 2}, {Key: k(3, 3, 3), Rows: 2}, {Key: k(N, 3, 2), Rows: 1}},
		},
		{
			name: "sorted with trailing nulls", ts: []int64{-7, 2, N, N}, step: 1, sorted: true,
			first: k(-7, 3, 0), last: k(N, 3, 3), nulls: 2, minTs: ptr(int64(-7)), maxTs: ptr(int64(2)),
			samples: []plan.Sample{{Key: k(-7, 3, 0), Rows: 1}, {Key: k(2, 3, 1), Rows: 1}, {Key: k(N, 3, 2), Rows: 1}, {Key: k(N, 3, 3), Rows: 1}},
		},
		{
			name: "null before a value is unsorted", ts: []int64{N, 4}, step: 0, sorted: false,
			first: k(4, 3, 1), last: k(N, 3, 0), nulls: 1, minTs: ptr(int64(4)), maxTs: ptr(int64(4)),
			samples: []plan.Sample{{Key: k(4, 3, 1), Rows: 1}, {Key: k(N, 3, 0), Rows: 1}},
		},
		{
			name: "all null", ts: []int64{N, N, N}, step: 5, sorted: true,
			first: k(N, 3, 0), last: k(N, 3, 2), nulls: 3,
			samples: []plan.Sample{{Key: k(N, 3, 0), Rows: 3}},
		},
		{name: "no rows", ts: nil, step: 3, sorted: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := store.ChunkKey(prefix, i)
			putChunkRG(t, b, key, 3, tc.ts, 100) // one row group
			s, err := ScanChunk(ctx, b, key, 3, tc.step, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Run{Sorted: true}
			if len(s.Runs) > 1 || (len(s.Runs) == 1 && s.Runs[0].RowGroups != nil) {
				t.Fatalf("one row group: runs %+v, want one run of the whole chunk", s.Runs)
			} else if len(s.Runs) == 1 {
				r = s.Runs[0]
			}
			got := fmt.Sprintf("rows=%d sorted=%t first=%s last=%s nulls=%d min=%s max=%s samples=%v",
				s.Rows, r.Sorted, r.First, r.Last, s.Nulls, str(s.MinTs), str(s.MaxTs), r.Samples)
			want := fmt.Sprintf("rows=%d sorted=%t first=%s last=%s nulls=%d min=%s max=%s samples=%v",
				len(tc.ts), tc.sorted, tc.first, tc.last, tc.nulls, str(tc.minTs), str(tc.maxTs), tc.samples)
			if got != want {
				t.Errorf("scan of %v:\n got %s\nwant %s", tc.ts, got, want)
			}
			if _, ok := s.Footer.Value(parquetio.ArrowSchemaKey); !ok || s.Footer.ID == "" || s.FooterBytes <= 0 {
				t.Errorf("footer %v id %q footer bytes %d", s.Footer, s.Footer.ID, s.FooterBytes)
			}
		})
	}
}

func str(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func ptr[T any](v T) *T { return &v }

func TestScanChunkFaults(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	missing := store.ChunkKey(prefix, 7)
	_, err := ScanChunk(ctx, b, missing, 0, 1, nil)
	var ce *ChunkError
	if !errors.As(err, &ce) || ce.Key != missing || !strings.Contains(err.Error(), missing) || !IsInputFault(err) {
		t.Errorf("missing chunk: %v, want a *ChunkError naming %s", err, missing)
	}
	garbage := store.ChunkKey(prefix, 8)
	if err := b.WriteAll(ctx, garbage, []byte("not parquet at all"), nil); err != nil {
		t.Fatal(err)
	}
	_, err = ScanChunk(ctx, b, garbage, 0, 1, nil)
	if !errors.As(err, &ce) || ce.Key != garbage || !IsInputFault(err) || !strings.Contains(err.Error(), "not a readable Parquet file") {
		t.Errorf("garbage chunk: %v", err)
	}
}

// topic is a set of input chunks in the bucket with their scans and every row's key.
type topic struct {
	bucket  *blob.Bucket
	refs    []ChunkRef
	inputs  []plan.Input
	samples [][]plan.Sample
	scans   []Scan
	keys    []plan.Key // every row's key, in key order
	ids     []plan.Key // identity (chunk, row) of every row, in key order
}

func newTopic(t *testing.T, chunks [][]int64) *topic {
	t.Helper()
	return newTopicWith(t, chunks, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4)))
}

// newTopicWith is newTopic with its chunks written with the writer properties props.
func newTopicWith(t *testing.T, chunks [][]int64, props *parquet.WriterProperties) *topic {
	t.Helper()
	return newTopicEach(t, chunks, func(int) *parquet.WriterProperties { return props })
}

// newTopicEach is newTopicWith with chunk j written with props(j).
func newTopicEach(t *testing.T, chunks [][]int64, props func(j int) *parquet.WriterProperties) *topic {
	t.Helper()
	ctx := context.Background()
	tp := &topic{bucket: memblob.OpenBucket(nil)}
	t.Cleanup(func() { tp.bucket.Close() })
	var totals plan.Totals
	for j, ts := range chunks {
		key := store.ChunkKey(prefix, j)
		rec := chunkRecord(testSchema(), j, ts)
		err := tp.bucket.WriteAll(ctx, key, encodeChunkWith(t, rec, props(j)), nil)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		s, err := ScanChunk(ctx, tp.bucket, key, j, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := tp.bucket.Attributes(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		tp.scans = append(tp.scans, s)
		// 1 MiB a row: 16-row batches, so the collector concatenates
		tp.refs = append(tp.refs, ChunkRef{ID: int64(j), Key: key, SizeBytes: attrs.Size, ArrowBytes: s.Rows << 20, Ordinal: j})
		totals.Rows += s.Rows
	}
	// Every row's key (the input position of its run, its stored row index) and its identity
	// (chunk, row) as the output rows carry it.
	tp.inputs, tp.samples = MergeInputs(tp.refs, tp.scans)
	for pos, in := range tp.inputs {
		ts := chunks[in.ChunkID]
		for r := in.FirstRow; r < in.FirstRow+in.Rows; r++ {
			tp.keys = append(tp.keys, k(ts[r], pos, r))
		}
	}
	slices.SortFunc(tp.keys, plan.Key.Compare)
	for _, kk := range tp.keys {
		tp.ids = append(tp.ids, tp.identity(kk))
	}
	return tp
}

// identity returns the key of a row as the output carries it: Input is the chunk, not the run.
func (tp *topic) identity(kk plan.Key) plan.Key {
	kk.Input = int(tp.inputs[kk.Input].ChunkID)
	return kk
}

func (tp *topic) plan(t *testing.T, maxBytes int64) *plan.Plan {
	t.Helper()
	p, err := plan.Compute(tp.inputs, tp.samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = tp.scans[0].Footer.ID
	return p
}

// layout returns the layout of the topic's first input.
func (tp *topic) layout(t *testing.T) *parquetio.Layout {
	t.Helper()
	return chunkLayout(t, tp.bucket, tp.inputs[0].ObjectKey)
}

// chunkLayout returns the layout (schema and footer values the outputs copy) of the chunk at key.
func chunkLayout(t *testing.T, b *blob.Bucket, key string) *parquetio.Layout {
	t.Helper()
	obj, err := store.OpenObject(context.Background(), b, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parquetio.Open(obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Layout()
}

// readOutput returns the keys of the rows of the chunk at key, in stored order, and its footer.
func readOutput(t *testing.T, b *blob.Bucket, key string) ([]plan.Key, *parquetio.Footer, verify.Digest) {
	t.Helper()
	obj, err := store.OpenObject(context.Background(), b, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parquetio.Open(obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := c.Batches(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Release()
	var keys []plan.Key
	var d verify.Digest
	var h verify.Hasher
	for rec := br.Next(); rec != nil; rec = br.Next() {
		h.AddRows(&d, rec, 0, rec.NumRows())
		in, ts, row := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			v := int64(N)
			if !ts.IsNull(i) {
				v = ts.Value(i)
			}
			keys = append(keys, k(v, int(in.Value(i)), row.Value(i)))
		}
	}
	if err := br.Err(); err != nil {
		t.Fatal(err)
	}
	return keys, c.Footer, d
}

func TestWriteOutput(t *testing.T) {
	chunks := [][]int64{
		{10, 20, 30, 40, 50, 60, 70, 80},                   // sorted
		{45, 15, N, 25, 15, 90, 5, 35, 55, 65, 75, 85, 95}, // unsorted, a null, equal timestamps
		{30, 30, 30, 31, 32, 33, 34, 35, 36, 37, 38, N, N}, // ties with input 0, trailing nulls
		{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120},
	}
	tp := newTopic(t, chunks)
	// Row groups of 4 rows: chunk 0 is one sorted run of two row groups, chunk 1 has unsorted row
	// groups (runs of their own, sorted in memory), and every run is an input of the merge.
	if n := len(tp.scans[0].Runs); n != 1 || tp.scans[0].Runs[0].RowGroups != nil {
		t.Fatalf("chunk 0: runs %+v, want one run of the whole chunk", tp.scans[0].Runs)
	}
	unsorted := 0
	for _, r := range tp.scans[1].Runs {
		if !r.Sorted {
			unsorted++
		}
	}
	if len(tp.scans[1].Runs) < 3 || unsorted < 2 || len(tp.inputs) < 6 {
		t.Fatalf("chunk 1 runs %+v (%d unsorted), %d inputs: want several runs, unsorted ones among them", tp.scans[1].Runs, unsorted, len(tp.inputs))
	}
	// Inputs hold 8+13+13+21 = 55 rows; a budget of ~20 rows gives a few outputs.
	var rowBytes, footer int64
	for _, in := range tp.inputs {
		rowBytes = max(rowBytes, (in.SizeBytes-in.FooterBytes+in.Rows-1)/in.Rows)
		footer = max(footer, in.FooterBytes)
	}
	// Budgets of a few rows put cuts everywhere, inside runs of equal timestamps of the unsorted
	// input too; 20 rows give outputs longer than one 16-row batch.
	for _, budgetRows := range []int64{20, 7, 3, 2} {
		t.Run(fmt.Sprint(budgetRows, " rows"), func(t *testing.T) {
			p := tp.plan(t, footer+budgetRows*rowBytes)
			if len(p.Outputs) < 3 || p.BatchRows != 16 {
				t.Fatalf("want at least 3 outputs and 16-row batches, got %d and %d\n%s", len(p.Outputs), p.BatchRows, p.Picture())
			}
			checkOutputs(t, tp, p)
		})
	}
}

// checkOutputs writes every output of p twice and checks it against the brute-force merge.
func checkOutputs(t *testing.T, tp *topic, p *plan.Plan) {
	t.Helper()
	ctx := context.Background()
	var all []plan.Key
	layout := tp.layout(t)
	for _, o := range p.Outputs {
		key := store.ChunkKey(prefix+"X", o.Ordinal)
		in := Inputs{Bucket: tp.bucket, Plan: p}
		var progress []int64
		res, err := WriteOutput(ctx, in, o, key, layout, func(rows int64) { progress = append(progress, rows) })
		if err != nil {
			t.Fatalf("output %d: %v\n%s", o.Ordinal, err, p.Picture())
		}
		got, footer, digest := readOutput(t, tp.bucket, key)
		var want []plan.Key
		for _, kk := range tp.keys {
			if plan.InRange(kk, o.Lo, o.Hi) {
				want = append(want, tp.identity(kk))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("output %d rows\n  %v\nwant\n  %v\n%s", o.Ordinal, got, want, p.Picture())
		}
		if d := parquetio.FirstFooterDifference(tp.scans[0].Footer, footer); d != "" || !bytes.Equal(res.Footer, footer.Digest()) {
			t.Fatalf("output %d footer: %s (digest %x, read back %x)", o.Ordinal, d, res.Footer, footer.Digest())
		}
		// A copied output's digests are of its pages (parquetio.CopyDigest), a passed-through
		// one's of its bytes, not of its rows.
		if res.Read != res.Written || (!res.Copied && !res.PassedThrough && res.Written != digest) || res.Read.Rows != int64(len(want)) {
			t.Fatalf("output %d digests: read %s written %s file %s", o.Ordinal, res.Read, res.Written, digest)
		}
		if res.Stats.RowCount != int64(len(want)) || res.Key != key || len(progress) == 0 || progress[len(progress)-1] != int64(len(want)) {
			t.Fatalf("output %d: stats rows %d key %s progress %v", o.Ordinal, res.Stats.RowCount, res.Key, progress)
		}
		first, err := tp.bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if res.SizeBytes != int64(len(first)) {
			t.Fatalf("output %d: SizeBytes %d, object %d bytes", o.Ordinal, res.SizeBytes, len(first))
		}
		// A retried write gives the same bytes.
		if _, err := WriteOutput(ctx, in, o, key, layout, nil); err != nil {
			t.Fatal(err)
		}
		second, err := tp.bucket.ReadAll(ctx, key)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("output %d: second write differs (%d vs %d bytes, %v)", o.Ordinal, len(first), len(second), err)
		}
		all = append(all, got...)
	}
	if !slices.Equal(all, tp.ids) {
		t.Fatalf("outputs together hold %d rows, inputs %d", len(all), len(tp.ids))
	}
}

func TestWriteOutputByCopy(t *testing.T) {
	// Sorted chunks that follow each other in time (equal timestamps across chunks sort by the
	// chunk's position: the concatenation is the merge), written as the ingestion service does:
	// no dictionary but for strings, so the numbers' pages are copied and the strings re-encoded.
	chunks := [][]int64{
		{10, 20, 30, 40, 50, 60, 70, 80, 90},
		{90, 100, 110, 120},
		{130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141},
		{150, 150, 150, N, N},
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("payload", true), parquet.WithStats(true))
	tp := newTopicWith(t, chunks, props)
	var rowBytes, footer int64
	for _, in := range tp.inputs {
		rowBytes = max(rowBytes, (in.SizeBytes-in.FooterBytes+in.Rows-1)/in.Rows)
		footer = max(footer, in.FooterBytes)
	}
	for _, maxBytes := range []int64{1 << 30, footer + 10*rowBytes} {
		p := tp.plan(t, maxBytes)
		if len(p.Outputs) == 0 || (maxBytes < 1<<30) != (len(p.Outputs) > 1) {
			t.Fatalf("%d outputs\n%s", len(p.Outputs), p.Picture())
		}
		checkOutputs(t, tp, p)
	}
	// One output of all: copied, its rows those of the rewrite.
	p := tp.plan(t, 1<<30)
	key := store.ChunkKey(prefix+"C", 0)
	res, err := WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil || !res.Copied {
		t.Fatalf("copied %v, %v\n%s", res.Copied, err, p.Picture())
	}
	copied, _, copiedRows := readOutput(t, tp.bucket, key)
	CopyPages = false
	defer func() { CopyPages = true }()
	res, err = WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil || res.Copied {
		t.Fatalf("rewritten: copied %v, %v", res.Copied, err)
	}
	rewritten, _, rewrittenRows := readOutput(t, tp.bucket, key)
	if !slices.Equal(copied, rewritten) || copiedRows != rewrittenRows {
		t.Fatalf("copied output holds %s, the rewrite %s", copiedRows, rewrittenRows)
	}
	CopyPages = true
	// Chunks that overlap in time are merged, not concatenated.
	tp = newTopicWith(t, [][]int64{{10, 20, 30, 40}, {25, 35, 45, 55}, {60, 70}}, props)
	p = tp.plan(t, 1<<30)
	checkOutputs(t, tp, p)
	res, err = WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil || res.Copied {
		t.Fatalf("overlapping inputs: copied %v, %v", res.Copied, err)
	}
}

func TestWriteOutputMissingInput(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, [][]int64{{1, 2, 3}, {2, 3, 4}})
	p := tp.plan(t, 1<<30)
	gone := p.Inputs[1].ObjectKey
	if err := tp.bucket.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	out := store.ChunkKey(prefix+"X", 0)
	_, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], out, tp.layout(t), nil)
	var ce *ChunkError
	if !errors.As(err, &ce) || ce.Key != gone || !strings.Contains(err.Error(), gone) || !IsInputFault(err) {
		t.Fatalf("missing input: %v, want a *ChunkError naming %s", err, gone)
	}
	if ok, _ := tp.bucket.Exists(ctx, out); ok {
		t.Fatalf("a failed write left %s behind", out)
	}
}

// An input whose footer no longer matches the topic's (its schema changed since planning) is
// refused, naming the chunk.
func TestWriteOutputFooterChanged(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, [][]int64{{1, 2, 3}})
	p := tp.plan(t, 1<<30)
	// A layout of a topic whose payload column is int64 instead of utf8.
	other := newTopic(t, nil)
	fields := testSchema().Fields()
	fields[3].Type = arrow.PrimitiveTypes.Int64
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 4 {
		b.Field(i).(*array.Int64Builder).Append(1)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	key := store.ChunkKey(prefix+"O", 0)
	if err := other.bucket.WriteAll(ctx, key, encodeChunk(t, rec), nil); err != nil {
		t.Fatal(err)
	}
	other.inputs = []plan.Input{{ObjectKey: key}}
	_, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"X", 0), other.layout(t), nil)
	var ce *ChunkError
	if !errors.As(err, &ce) || ce.Key != p.Inputs[0].ObjectKey || !strings.Contains(err.Error(), `footer changed since planning: Parquet schema element 4 differs: "payload"`) {
		t.Fatalf("changed footer: %v", err)
	}
}

// A writer whose footer differs from the inputs' fails the output with a verification error
// (the written footer is read back), and so does an output without rows.
func TestWriteOutputChecksWrittenFooter(t *testing.T) {
	withoutPassThrough(t) // a chunk kept is not written by a writer
	ctx := context.Background()
	tp := newTopic(t, [][]int64{{1, 2, 3}})
	p := tp.plan(t, 1<<30)
	key := store.ChunkKey(prefix+"X", 0)
	_, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t).WithKeyValue("extra", "1"), nil)
	var me *verify.MismatchError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), `footer differs from the inputs': footer has 3 key/value pairs vs 4 (first extra key "extra")`) {
		t.Fatalf("altered footer: %v", err)
	}
	empty := p.Outputs[0]
	empty.Lo, empty.Hi = &plan.Key{Ts: 100}, &plan.Key{Ts: 200}
	_, err = WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, empty, key, tp.layout(t), nil)
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "would have no rows") {
		t.Fatalf("empty output: %v", err)
	}
}

func TestScanRuns(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	tests := []struct {
		ts   []int64
		want string
	}{
		// Row groups of 3 rows.
		{[]int64{1, 2, 3, 4, 5, 6, 7}, "[nil s 0+7]"},                          // one sorted run over all row groups
		{[]int64{1, 2, 3, 2, 5, 6, 7, 8}, "[[0] s 0+3 [1 2] s 3+5]"},           // a block starting before the last ends
		{[]int64{1, 2, 3, 9, 5, 6, 10, 11}, "[[0] s 0+3 [1] u 3+3 [2] s 6+2]"}, // an unsorted block alone
		{[]int64{1, 2, N, 3, 4, 5}, "[[0] s 0+3 [1] s 3+3]"},                   // a null ends a run
		{[]int64{1, 1, 1, 1, 1, 1}, "[nil s 0+6]"},                             // ties continue a run
	}
	for i, tc := range tests {
		key := store.ChunkKey(prefix, 50+i)
		putChunkRG(t, b, key, 0, tc.ts, 3)
		s, err := ScanChunk(ctx, b, key, 0, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range s.Runs {
			mark := "s"
			if !r.Sorted {
				mark = "u"
			}
			rgs := "nil"
			if r.RowGroups != nil {
				rgs = fmt.Sprint(r.RowGroups)
			}
			got = append(got, fmt.Sprintf("%s %s %d+%d", rgs, mark, r.FirstRow, r.Rows))
		}
		if g := fmt.Sprint(got); g != tc.want {
			t.Errorf("runs of %v: %s, want %s", tc.ts, g, tc.want)
		}
	}
}

func TestWriteRollup(t *testing.T) {
	chunks := [][]int64{
		{10, 20, 30, 40, 50, 60, 70}, // sorted, two row groups of 4: one run, two blocks
		{45, 15, N, 25},              // unsorted block with a null
		{30, 30, 31},                 // ties with chunk 0
	}
	testWriteRollup(t, newTopic(t, chunks), []int{0}, false, []plan.Key{
		k(10, 0, 0), k(20, 0, 1), k(30, 0, 2), k(40, 0, 3), k(50, 0, 4), k(60, 0, 5), k(70, 0, 6),
		k(15, 1, 1), k(25, 1, 3), k(45, 1, 0), k(N, 1, 2),
		k(30, 2, 0), k(30, 2, 1), k(31, 2, 2),
	})
}

func TestWriteRollupByCopy(t *testing.T) {
	// Blocks stored in key order that overlap each other: the copy path keeps each a row group.
	chunks := [][]int64{{10, 20, 30, 40, 50, 60, 70}, {15, 25, 45, N}, {30, 30, 31}}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("payload", true), parquet.WithStats(true))
	testWriteRollup(t, newTopicWith(t, chunks, props), nil, true, []plan.Key{
		k(10, 0, 0), k(20, 0, 1), k(30, 0, 2), k(40, 0, 3), k(50, 0, 4), k(60, 0, 5), k(70, 0, 6),
		k(15, 1, 0), k(25, 1, 1), k(45, 1, 2), k(N, 1, 3),
		k(30, 2, 0), k(30, 2, 1), k(31, 2, 2),
	})
}

// testWriteRollup writes a rollup of tp's three chunks, the second's row groups unsorted as
// given, and checks its rows (want), blocks and path (copied).
func testWriteRollup(t *testing.T, tp *topic, unsortedBlocks []int, copied bool, want []plan.Key) {
	ctx := context.Background()
	inputs := make([]plan.Input, len(tp.refs))
	for j, r := range tp.refs {
		s := tp.scans[j]
		inputs[j] = plan.Input{ChunkID: r.ID, ObjectKey: r.Key, Rows: s.Rows, SizeBytes: r.SizeBytes,
			FooterBytes: s.FooterBytes, ArrowBytes: r.ArrowBytes, Ordinal: j}
	}
	inputs[1].Unsorted = unsortedBlocks
	inputs[2].BlockSources = []string{"tp_older/data/00002.parquet"}
	p, err := plan.Rollup(inputs, [][]int{{0, 1, 2}}, plan.Totals{}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = tp.scans[0].Footer.ID
	key := store.ChunkKey(prefix+"R", 0)
	res, err := WriteRollup(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, digest := readOutput(t, tp.bucket, key)
	// Each input's rows in input order; each block sorted on its own.
	if !slices.Equal(got, want) {
		t.Fatalf("rollup rows\n  %v\nwant\n  %v", got, want)
	}
	if res.Copied != copied || res.Read != res.Written || (!copied && res.Written != digest) {
		t.Fatalf("digests: read %s written %s file %s", res.Read, res.Written, digest)
	}
	var blocks []string
	for i, b := range res.Blocks {
		blocks = append(blocks, fmt.Sprintf("%d rows [%s..%s] from %s", b.Rows, str(b.MinTs), str(b.MaxTs), res.Sources[i]))
		if b.Offset <= 0 || b.Length <= 0 {
			t.Errorf("block %d: offset %d length %d", i, b.Offset, b.Length)
		}
	}
	wantBlocks := []string{
		"4 rows [10..40] from " + tp.refs[0].Key,
		"3 rows [50..70] from " + tp.refs[0].Key,
		"4 rows [15..45] from " + tp.refs[1].Key,
		"3 rows [30..31] from tp_older/data/00002.parquet",
	}
	if !slices.Equal(blocks, wantBlocks) {
		t.Fatalf("blocks\n  %v\nwant\n  %v", blocks, wantBlocks)
	}
	if res.Blocks[2].Nulls != 1 || res.Blocks[0].Nulls != 0 {
		t.Errorf("null counts %d %d", res.Blocks[2].Nulls, res.Blocks[0].Nulls)
	}
	// A retried write gives the same bytes.
	first, _ := tp.bucket.ReadAll(ctx, key)
	if _, err := WriteRollup(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil); err != nil {
		t.Fatal(err)
	}
	second, _ := tp.bucket.ReadAll(ctx, key)
	if !bytes.Equal(first, second) {
		t.Fatal("second rollup write differs")
	}
}

// storeChunk stores data as chunk j of the test topic and scans it (one sample per row).
func storeChunk(t *testing.T, b *blob.Bucket, j int, data []byte) (string, Scan) {
	t.Helper()
	ctx := context.Background()
	key := store.ChunkKey(prefix, j)
	if err := b.WriteAll(ctx, key, data, nil); err != nil {
		t.Fatal(err)
	}
	s, err := ScanChunk(ctx, b, key, j, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, s
}
