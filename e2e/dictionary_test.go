package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
)

// labelRecord is chunk number chunk of a labels topic: rows rows whose timestamps interleave
// with the other chunks', each with one of the chunk's own distinct labels (every tenth null), in
// a dictionary<int8, utf8> column (nested: a list of one such label per row).
func labelRecord(t *testing.T, chunk, rows, distinct int, nested bool) arrow.RecordBatch {
	t.Helper()
	var label arrow.DataType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	if nested {
		label = arrow.ListOf(label)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "label", Type: label, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	var lb *array.BinaryDictionaryBuilder
	if nested {
		lst := bld.Field(1).(*array.ListBuilder)
		lb = lst.ValueBuilder().(*array.BinaryDictionaryBuilder)
		for range rows {
			lst.Append(true)
		}
	} else {
		lb = bld.Field(1).(*array.BinaryDictionaryBuilder)
	}
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i*8+chunk) * 1000)
		if i%10 == 9 {
			lb.AppendNull()
		} else if err := lb.AppendString(fmt.Sprintf("chunk%d-label%03d", chunk, i%distinct)); err != nil {
			t.Fatal(err)
		}
	}
	return bld.NewRecordBatch()
}

// labelStrings renders the rows of a labels batch as "ts label".
func labelStrings(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	ts := rec.Column(0).(*array.Int64)
	col, ok := rec.Column(1).(*array.Dictionary)
	if !ok {
		t.Fatalf("label column reads as %s", rec.Column(1).DataType())
	}
	out := make([]string, rec.NumRows())
	for i := range out {
		label := "null"
		if col.IsValid(i) {
			label = col.Dictionary().(*array.String).Value(col.GetValueIndex(i))
		}
		out[i] = fmt.Sprintf("%d %s", ts.Value(i), label)
	}
	return out
}

// TestTinyTopicsWithNarrowDictionaries runs one pass with default options (tiny topics batched)
// over ten tiny topics and two of labels in dictionary<int8, utf8> columns, fewer than 128 per
// chunk and more together: the top-level one is optimized with its batch mates, each output row
// group reads back with plain arrow-go as the declared type with every input row; the nested one
// (a list of such labels, which storeopt does not read in the value type) is refused at once as
// bad input naming the topic, the output chunk and the cause (a retried error would keep the run
// for 14 minutes, past runPass's 5), and only it fails.
func TestTinyTopicsWithNarrowDictionaries(t *testing.T) {
	e := newEnv(t)
	var want []string
	topic := func(locator string, nested bool) rawTopic {
		rt := rawTopic{sequence: "labels", locator: locator}
		for c := range 4 {
			rec := labelRecord(t, c, 600, 100, nested)
			if !nested {
				want = append(want, labelStrings(t, rec)...)
			}
			rt.chunks = append(rt.chunks, recordChunk(t, rec))
			rec.Release()
		}
		return rt
	}
	dictID, _ := e.putTopic(t, topic("labels/flat", false))
	e.putTopic(t, topic("labels/nested", true))
	for i := range 10 {
		e.putTopic(t, rawTopic{sequence: "labels", locator: fmt.Sprintf("labels/tiny%02d", i),
			chunks: []rawChunk{handChunk(t, 0, rowsAt(1, 3, 5)), handChunk(t, 1, rowsAt(2, 4, 6))}})
	}

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{Scope: []string{"sequence:labels"}})
	failures := failuresByLocator(t, res)
	if res.Optimized != 11 || res.Failed != 1 || len(failures) != 1 {
		t.Fatalf("optimized %d, failed %d (%v), want 11 optimized and labels/nested failed", res.Optimized, res.Failed, failures)
	}
	msg := failures["labels/nested"]
	for _, part := range []string{"topic labels/nested: ", "cannot combine dictionaries", "output chunk tp_"} {
		if !strings.Contains(msg, part) {
			t.Errorf("failure of labels/nested %q does not say %q", msg, part)
		}
	}

	var got []string
	ctx := context.Background()
	for _, key := range chunkKeys(t, e.cat, dictID) {
		data, err := e.b.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for rg := range pf.NumRowGroups() {
			rr, err := fr.GetRecordReader(ctx, nil, []int{rg})
			if err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
				got = append(got, labelStrings(t, rr.RecordBatch())...)
			}
			if err := rr.Err(); err != nil {
				t.Fatalf("%s row group %d: %v", key, rg, err)
			}
			rr.Release()
		}
		pf.Close()
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("labels/flat holds %d rows after the run, %d ingested", len(got), len(want))
	}
}
