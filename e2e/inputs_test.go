package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// Helpers for the tests of bad input, hostile values and third-party Parquet: topics whose chunks
// are arbitrary bytes with arbitrary catalog rows, and the checks that a failed topic was left
// exactly as it was.

// sharedDataDir returns ../../shared/data/<sub>, or $STOREOPT_SHARED_DATA/<sub> when set (the
// project's shared test files, read in place), skipping the test when it is missing and $CI is
// unset.
func sharedDataDir(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join(cmp.Or(os.Getenv("STOREOPT_SHARED_DATA"), filepath.Join("..", "..", "shared", "data")), sub)
	if _, err := os.Stat(dir); err != nil {
		testenv.Missing(t, fmt.Sprintf("shared test data not found: %v", err))
	}
	return dir
}

// rawChunk is one chunk of a topic made by putTopic: its object bytes and its catalog row.
type rawChunk struct {
	data   []byte
	absent bool   // no object is written (the catalog row points at nothing)
	key    string // catalog object key; "" = store.ChunkKey(prefix, ordinal)
	rows   int64  // catalog row count
	stats  *chunkstats.Stats
}

// rawTopic is a finalized topic made by putTopic.
type rawTopic struct {
	sequence string
	locator  string
	prefix   string // data prefix; "" = store.NewPrefix()
	chunks   []rawChunk
	// metadata is the metadata.json document; nil = a small JSON document.
	metadata   []byte
	noMetadata bool // write no metadata.json at all
}

// putTopic writes the topic's objects under a fresh prefix and records it in the catalog the way
// the ingestion service does (chunks in ordinal order, then finalized). It returns the topic ID
// and the prefix.
func (e *env) putTopic(t *testing.T, rt rawTopic) (int64, string) {
	t.Helper()
	ctx := context.Background()
	seqID, err := e.cat.CreateSequence(ctx, rt.sequence)
	if err != nil {
		t.Fatal(err)
	}
	prefix := rt.prefix
	if prefix == "" {
		prefix = store.NewPrefix()
	}
	id, err := e.cat.CreateTopic(ctx, seqID, rt.locator, prefix, "parquet")
	if err != nil {
		t.Fatal(err)
	}
	if !rt.noMetadata {
		md := rt.metadata
		if md == nil {
			md = []byte(`{"topic":` + quoteJSON(rt.locator) + `}` + "\n")
		}
		if err := e.b.WriteAll(ctx, store.MetadataKey(prefix), md, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range rt.chunks {
		key := c.key
		if key == "" {
			key = store.ChunkKey(prefix, i)
		}
		if !c.absent {
			if err := e.b.WriteAll(ctx, key, c.data, nil); err != nil {
				t.Fatalf("write %s: %v", key, err)
			}
		}
		row := catalog.Chunk{TopicID: id, Ordinal: i, ObjectKey: key, SizeBytes: int64(len(c.data)),
			RowCount: c.rows, ArrowSizeBytes: int64(len(c.data))}
		if st := c.stats; st != nil {
			row.RowCount, row.ArrowSizeBytes = st.RowCount, st.ArrowSizeBytes
			row.MinTimestampNs, row.MaxTimestampNs = st.MinTimestampNs, st.MaxTimestampNs
			row.TimestampNullCount, row.ColumnStats = st.TimestampNullCount, st.Columns
		}
		if _, err := e.cat.AddChunk(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.cat.FinalizeTopic(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id, prefix
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// encodeParquet writes the batches as one Parquet file with schema stored verbatim (zstd unless
// props say otherwise).
func encodeParquet(t *testing.T, schema *arrow.Schema, recs []arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	props = append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd)}, props...)
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// handChunk is a valid chunk of handSchema (see makeTopic) with rows at the given timestamps and
// its exact catalog stats.
func handChunk(t *testing.T, chunk int, rows []handRow) rawChunk {
	t.Helper()
	rec := buildRecord(handSchema(), chunk, rows)
	defer rec.Release()
	return recordChunk(t, rec)
}

// recordChunk encodes rec as one chunk with exact catalog stats.
func recordChunk(t *testing.T, rec arrow.RecordBatch) rawChunk {
	t.Helper()
	data := encodeParquet(t, rec.Schema(), []arrow.RecordBatch{rec})
	c := rawChunk{data: data, rows: rec.NumRows()}
	if acc, err := chunkstats.NewAccumulator(rec.Schema()); err == nil {
		acc.Add(rec)
		st := acc.Result()
		c.stats = &st
	}
	return c
}

// topicRecord is everything of one topic in the catalog, for checking that a failed topic was
// left alone.
type topicRecord struct {
	topic  catalog.Topic
	chunks []catalog.Chunk
}

func (e *env) recordTopic(t *testing.T, id int64) topicRecord {
	t.Helper()
	tp, err := e.cat.Topic(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := e.cat.Chunks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return topicRecord{topic: tp, chunks: chunks}
}

// checkUntouched fails unless the topic's catalog rows are exactly as recorded (prefix, not
// optimized, chunk set version, every chunk row) and no lease, plan or staged output of it is
// left.
func (e *env) checkUntouched(t *testing.T, before topicRecord) {
	t.Helper()
	e.checkRowsUntouched(t, before, "optimization_queue", "plans", "staged_chunks", "optimizations")
}

// checkRowsUntouched is checkUntouched with the tables that must hold no row of the topic.
func (e *env) checkRowsUntouched(t *testing.T, before topicRecord, tables ...string) {
	t.Helper()
	ctx := context.Background()
	after := e.recordTopic(t, before.topic.ID)
	loc := before.topic.Locator
	if !reflect.DeepEqual(before.topic, after.topic) {
		t.Errorf("topic %q changed in the catalog:\nbefore %+v\nafter  %+v", loc, before.topic, after.topic)
	}
	if after.topic.OptimizedAt != nil {
		t.Errorf("topic %q: optimized_at set", loc)
	}
	if !reflect.DeepEqual(before.chunks, after.chunks) {
		t.Errorf("topic %q: chunk rows changed:\nbefore %+v\nafter  %+v", loc, before.chunks, after.chunks)
	}
	for _, table := range tables {
		var n int
		if err := e.cat.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE topic_id = $1", before.topic.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("topic %q: %d rows left in %s", loc, n, table)
		}
	}
}

// storeContent maps every object key of the store, and every temporary file of an unfinished
// write, to the SHA-256 of its bytes.
type storeContent map[string][32]byte

func (e *env) storeContent(t *testing.T) storeContent {
	t.Helper()
	out := storeContent{}
	for _, keys := range []map[string]bool{listKeys(t, e), tempKeys(t, e)} {
		for k := range keys {
			data, err := e.b.ReadAll(context.Background(), k)
			if err != nil {
				t.Fatalf("read %s: %v", k, err)
			}
			out[k] = sha256.Sum256(data)
		}
	}
	return out
}

// checkStoreAfterRun fails unless every object of before is still there with the same bytes and
// every new object lies under the current data prefix of one of the optimized topics: failed
// optimizations left nothing behind, nothing was written outside a fresh prefix.
func (e *env) checkStoreAfterRun(t *testing.T, before storeContent, optimized []int64) {
	t.Helper()
	prefixes := map[string]bool{}
	for _, id := range optimized {
		tp, err := e.cat.Topic(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		prefixes[tp.DataPrefix] = true
	}
	after := e.storeContent(t)
	for k, sum := range before {
		got, ok := after[k]
		switch {
		case !ok:
			t.Errorf("object %q was deleted", k)
		case got != sum:
			t.Errorf("object %q was modified", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; ok {
			continue
		}
		p, _, _ := strings.Cut(k, "/")
		if !prefixes[p] {
			t.Errorf("object %q left behind (not under the new prefix of an optimized topic)", k)
		}
	}
}

// failuresByLocator indexes a run's failures, failing on a topic reported twice.
func failuresByLocator(t *testing.T, res workflows.StoreOptimizerResult) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range res.Failures {
		if _, dup := out[f.Locator]; dup {
			t.Errorf("topic %q reported twice", f.Locator)
		}
		out[f.Locator] = f.Error
	}
	return out
}

// arrowRefusal is how read-sort must refuse a chunk holding data, worked out from what arrow-go
// itself makes of the file: "not a readable Parquet file" when it cannot open it, its own
// error when it cannot map the Parquet schema to Arrow (the mapping error, or the value its
// reader panicked with), `no column "timestamp_ns" (type int64 required)` when the schema maps
// but has no such column, and "" when the file has the column (the caller must know the cause).
func arrowRefusal(data []byte) (cause string) {
	defer func() {
		if r := recover(); r != nil {
			cause = fmt.Sprint(r)
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return "not a readable Parquet file"
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return err.Error()
	}
	schema, err := fr.Schema()
	if err != nil {
		return err.Error()
	}
	if len(schema.FieldIndices("timestamp_ns")) == 0 {
		return `no column "timestamp_ns" (type int64 required)`
	}
	return ""
}
