package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/parquetio"
)

// badCase is one topic of bad input and the failure it must be reported with.
type badCase struct {
	name  string // the topic is "bad/<name>"
	topic rawTopic
	// step is how the failure message goes on after "topic <locator>: ".
	step string
	// want returns the substrings the failure message must contain, given the topic's data
	// prefix and its chunks' object keys.
	want func(prefix string, keys []string) []string
}

// chunkSays expects "chunk <key of chunk i>: <cause>".
func chunkSays(i int, cause string) func(string, []string) []string {
	return func(_ string, keys []string) []string { return []string{"chunk " + keys[i] + ": " + cause} }
}

// TestBadInput runs one optimization pass over many topics of bad input and two good topics:
// every bad topic is reported once with its locator, the failed step, the chunk (where one is to
// blame) and the specific cause; it is left exactly as it was (catalog rows, objects, no lease,
// plan or staged output, not queued) and leaves no object behind; the good topics are optimized.
func TestBadInput(t *testing.T) {
	badDataDir := sharedDataDir(t, "bad_data")
	e := newEnv(t)

	good0 := handChunk(t, 0, rowsAt(1, 2, 3))
	good1 := handChunk(t, 1, rowsAt(4, 5, 6))
	withGood := func(bad rawChunk) []rawChunk { return []rawChunk{good0, bad} }
	handRec := buildRecord(handSchema(), 1, rowsAt(4, 5, 6))
	defer handRec.Release()

	// payloadTopic has 6 chunks of 40 KB rows (several output chunks of 32 KiB) whose last chunk
	// in time has a corrupt payload page: read-sort (timestamps only) passes, write-chunks fails.
	var payloadTopic []rawChunk
	for c := range 6 {
		rows := make([]handRow, 5)
		for i := range rows {
			rows[i] = handRow{ts: ts(int64(100*c + i)), payload: 8000}
		}
		payloadTopic = append(payloadTopic, handChunk(t, c, rows))
	}
	payloadTopic[5] = corruptColumn(t, payloadTopic[5], 4)

	cases := []badCase{
		{name: "not_parquet", topic: rawTopic{chunks: withGood(rawChunk{data: []byte(`{"this is": "JSON, not Parquet"}`), rows: 3})},
			step: "read-sort", want: chunkSays(1, "not a readable Parquet file")},
		{name: "truncated", topic: rawTopic{chunks: withGood(rawChunk{data: good1.data[:len(good1.data)/2], rows: 3})},
			step: "read-sort", want: chunkSays(1, "not a readable Parquet file")},
		{name: "truncated_footer", topic: rawTopic{chunks: withGood(rawChunk{data: truncateFooter(good1.data), rows: 3})},
			step: "read-sort", want: chunkSays(1, "not a readable Parquet file")},
		{name: "corrupt_timestamp_page", topic: rawTopic{chunks: withGood(corruptColumn(t, good1, 0))},
			step: "read-sort", want: chunkSays(1, "read timestamp_ns: ")},
		{name: "corrupt_payload_page", topic: rawTopic{chunks: payloadTopic},
			step: "write-chunks group ", want: chunkSays(5, "read rows: ")},
		{name: "missing_object", topic: rawTopic{chunks: withGood(rawChunk{data: good1.data, rows: 3, absent: true})},
			step: "read-sort", want: chunkSays(1, "object is missing from the store")},
		{name: "schema_differs", topic: rawTopic{chunks: withGood(recordChunk(t, dropColumn(handRec, 3)))},
			step: "read-sort", want: func(_ string, keys []string) []string {
				return []string{"chunk " + keys[1] + ": footer differs from chunk " + keys[0] + ": Parquet schema has 6 elements vs 5"}
			}},
		{name: "field_metadata_differs", topic: rawTopic{chunks: withGood(recordChunk(t, withFieldMetadata(handRec, 3, "unit", "km")))},
			step: "read-sort", want: func(_ string, keys []string) []string {
				return []string{"chunk " + keys[1] + ": footer differs from chunk " + keys[0] + `: footer value of "ARROW:schema" differs: `,
					`"value"`, `"unit":"m"`, `"unit":"km"`}
			}},
		// Chunks whose schema metadata values differ are not bad input: the values are per-file
		// (TestInteropFixtures' per_file_values topic is optimized with the first chunk's).
		{name: "no_timestamp_column", topic: rawTopic{chunks: []rawChunk{recordChunk(t, renameColumn(handRec, 0, "time_ns"))}},
			step: "read-sort", want: chunkSays(0, `no column "timestamp_ns" (type int64 required)`)},
		{name: "timestamp_int32", topic: rawTopic{chunks: []rawChunk{recordChunk(t, retypeTimestamp(t, handRec, arrow.PrimitiveTypes.Int32))}},
			step: "read-sort", want: chunkSays(0, `column "timestamp_ns" has type int32, int64 required`)},
		{name: "timestamp_string", topic: rawTopic{chunks: []rawChunk{recordChunk(t, retypeTimestamp(t, handRec, arrow.BinaryTypes.String))}},
			step: "read-sort", want: chunkSays(0, `column "timestamp_ns" has type utf8, int64 required`)},
		{name: "timestamp_timestamp_ns", topic: rawTopic{chunks: []rawChunk{recordChunk(t, retypeTimestamp(t, handRec, &arrow.TimestampType{Unit: arrow.Nanosecond}))}},
			step: "read-sort", want: chunkSays(0, `column "timestamp_ns" has type timestamp[ns], int64 required`)},
		{name: "timestamp_twice", topic: rawTopic{chunks: []rawChunk{recordChunk(t, renameColumn(handRec, 1, "timestamp_ns"))}},
			step: "read-sort", want: chunkSays(0, `column "timestamp_ns" appears 2 times`)},
		{name: "zero_chunks", topic: rawTopic{},
			step: "read-sort", want: func(string, []string) []string { return []string{"read-sort: topic has no chunks"} }},
		{name: "only_empty_chunks", topic: rawTopic{chunks: []rawChunk{emptyChunk(t, true), emptyChunk(t, false)}},
			step: "read-sort", want: func(string, []string) []string { return []string{"read-sort: topic has no rows"} }},
		{name: "empty_metadata", topic: rawTopic{chunks: []rawChunk{good0}, metadata: []byte{}},
			step: "read-sort", want: func(prefix string, _ []string) []string {
				return []string{"read-sort: " + prefix + "/metadata.json: topic metadata is empty"}
			}},
		{name: "no_metadata", topic: rawTopic{chunks: []rawChunk{good0}, noMetadata: true},
			step: "read-sort", want: func(prefix string, _ []string) []string {
				return []string{"read-sort: " + prefix + "/metadata.json: topic metadata is missing"}
			}},
		{name: "row_count_disagrees", topic: rawTopic{chunks: withGood(rawChunk{data: good1.data, rows: 5})},
			step: "read-sort", want: chunkSays(1, "file has 3 rows, catalog says 5")},
	}
	badFiles, _ := filepath.Glob(filepath.Join(badDataDir, "*.parquet"))
	if len(badFiles) == 0 {
		t.Fatalf("no Parquet files in %s", badDataDir)
	}
	for _, f := range badFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// These files have no timestamp_ns column: read-sort refuses them for that (or for what
		// arrow-go cannot read in their footer) before their broken pages are reached; the pages
		// of a chunk are tested by the corrupt_*_page cases.
		cause := arrowRefusal(data)
		if cause == "" {
			t.Fatalf("%s has a timestamp_ns column: this test does not know why it must be refused", f)
		}
		cases = append(cases, badCase{name: "bad_data/" + filepath.Base(f),
			topic: rawTopic{chunks: withGood(rawChunk{data: data, rows: 1})},
			step:  "read-sort", want: chunkSays(1, cause)})
	}

	goodIDs := []int64{
		makeTopic(t, e.cat, e.b, "good/a", [][]handRow{rowsAt(3, 1, 2), rowsAt(0, 5)}),
		makeTopic(t, e.cat, e.b, "good/b", [][]handRow{rowsAt(7), rowsAt(6, 6)}),
	}
	var goodBefore []snapshot
	for _, id := range goodIDs {
		goodBefore = append(goodBefore, e.snapshot(t, id))
	}
	type placed struct {
		badCase
		locator string
		prefix  string
		keys    []string
		before  topicRecord
	}
	var bad []placed
	for _, c := range cases {
		c.topic.sequence, c.topic.locator = "bad", "bad/"+c.name
		id, prefix := e.putTopic(t, c.topic)
		bad = append(bad, placed{badCase: c, locator: c.topic.locator, prefix: prefix,
			keys: chunkKeys(t, e.cat, id), before: e.recordTopic(t, id)})
	}
	storeBefore := e.storeContent(t)

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 32 << 10, MaxConcurrentTopics: 6})
	if res.Optimized != len(goodIDs) || res.Failed != len(bad) || res.Skipped != 0 {
		t.Errorf("run result: %d optimized, %d failed, %d skipped; want %d optimized, %d failed",
			res.Optimized, res.Failed, res.Skipped, len(goodIDs), len(bad))
	}
	failures := failuresByLocator(t, res)
	for _, b := range bad {
		msg, ok := failures[b.locator]
		if !ok {
			t.Errorf("topic %s: not reported as failed", b.locator)
			continue
		}
		t.Logf("%s", msg)
		if head := "topic " + b.locator + ": " + b.step; !strings.HasPrefix(msg, head) {
			t.Errorf("topic %s: failure %q does not start with %q", b.locator, msg, head)
		}
		for _, w := range b.want(b.prefix, b.keys) {
			if !strings.Contains(msg, w) {
				t.Errorf("topic %s: failure %q does not say %q", b.locator, msg, w)
			}
		}
		if n := strings.Count(msg, b.locator); n != 1 {
			t.Errorf("topic %s: failure names the topic %d times: %q", b.locator, n, msg)
		}
		e.checkUntouched(t, b.before)
	}
	for _, s := range goodBefore {
		e.checkOptimized(t, s, 32<<10)
	}
	e.checkStoreAfterRun(t, storeBefore, goodIDs)
	e.queueEmpty(t)
}

// corruptColumn returns c with the last 4 bytes of leaf column leaf of its first row group
// inverted: the zstd frame checksum of that column's last data page, so that decoding the page
// fails. It checks that the rest of the file still opens.
func corruptColumn(t *testing.T, c rawChunk, leaf int) rawChunk {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(c.data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(leaf)
	if err != nil {
		t.Fatal(err)
	}
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	end := start + cc.TotalCompressedSize()
	out := bytes.Clone(c.data)
	for i := end - 4; i < end; i++ {
		out[i] ^= 0xff
	}
	if _, err := parquetio.Open(bytes.NewReader(out), nil); err != nil {
		t.Fatalf("corrupting a page broke the footer: %v", err)
	}
	c.data = out
	return c
}

// truncateFooter cuts the file in the middle of its footer, keeping the trailing magic bytes.
func truncateFooter(data []byte) []byte {
	out := bytes.Clone(data[:len(data)-40])
	return append(out, data[len(data)-8:]...)
}

// emptyChunk is a valid chunk of handSchema without rows: one empty row group, or none.
func emptyChunk(t *testing.T, emptyRowGroup bool) rawChunk {
	t.Helper()
	var recs []arrow.RecordBatch
	if emptyRowGroup {
		rec := buildRecord(handSchema(), 0, nil)
		defer rec.Release()
		recs = append(recs, rec)
	}
	return rawChunk{data: encodeParquet(t, handSchema(), recs)}
}

// withFields returns rec with its schema's fields replaced (same columns).
func withFields(rec arrow.RecordBatch, fields []arrow.Field, cols []arrow.Array) arrow.RecordBatch {
	md := rec.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
}

func dropColumn(rec arrow.RecordBatch, i int) arrow.RecordBatch {
	fields := append(append([]arrow.Field{}, rec.Schema().Fields()[:i]...), rec.Schema().Fields()[i+1:]...)
	cols := append(append([]arrow.Array{}, rec.Columns()[:i]...), rec.Columns()[i+1:]...)
	return withFields(rec, fields, cols)
}

func renameColumn(rec arrow.RecordBatch, i int, name string) arrow.RecordBatch {
	fields := rec.Schema().Fields()
	fields[i].Name = name
	return withFields(rec, fields, rec.Columns())
}

func withFieldMetadata(rec arrow.RecordBatch, i int, key, value string) arrow.RecordBatch {
	fields := rec.Schema().Fields()
	keys, vals := slices.Clone(fields[i].Metadata.Keys()), slices.Clone(fields[i].Metadata.Values())
	for j := range keys {
		if keys[j] == key {
			vals[j] = value
		}
	}
	fields[i].Metadata = arrow.NewMetadata(keys, vals)
	return withFields(rec, fields, rec.Columns())
}

func withSchemaMetadata(rec arrow.RecordBatch, key, value string) arrow.RecordBatch {
	md := rec.Schema().Metadata()
	keys, vals := slices.Clone(md.Keys()), slices.Clone(md.Values())
	for j := range keys {
		if keys[j] == key {
			vals[j] = value
		}
	}
	md = arrow.NewMetadata(keys, vals)
	return array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields(), &md), rec.Columns(), rec.NumRows())
}

// retypeTimestamp returns rec with timestamp_ns (column 0) converted to type dt.
func retypeTimestamp(t *testing.T, rec arrow.RecordBatch, dt arrow.DataType) arrow.RecordBatch {
	t.Helper()
	src := rec.Column(0).(*array.Int64)
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for i := range src.Len() {
		if src.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := src.Value(i)
		switch b := b.(type) {
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.StringBuilder:
			b.Append(fmt.Sprint(v))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v))
		default:
			t.Fatalf("retypeTimestamp: no case for %s", dt)
		}
	}
	col := b.NewArray()
	defer col.Release()
	fields := rec.Schema().Fields()
	fields[0].Type = dt
	cols := append([]arrow.Array{col}, rec.Columns()[1:]...)
	return withFields(rec, fields, cols)
}
