package activities_test

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
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/store"
)

// labelSchema is a topic schema with a dictionary<int8, utf8> column, as a writer of
// categorical labels stores it (pandas categoricals, Arrow dictionary builders).
// With nested, the column is a list of such labels (one per row).
func labelSchema(nested bool) *arrow.Schema {
	var label arrow.DataType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	if nested {
		label = arrow.ListOf(label)
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "label", Type: label, Nullable: true, Metadata: arrow.NewMetadata([]string{"unit"}, []string{"name"})},
	}, nil)
}

// labelChunk encodes chunk number chunk of a labels topic with the arrow-go writer (ARROW:schema
// stored): rows rows, each with a label of its own chunk's distinct labels (distinct of them,
// fewer than 128, so every chunk fits its int8 index) and a timestamp interleaving with the
// other chunks' (interleave) or after them (not). Every tenth label is null.
func labelChunk(t *testing.T, chunk, rows, distinct int, interleave, nested bool) ([]byte, chunkstats.Stats, arrow.RecordBatch) {
	t.Helper()
	schema := labelSchema(nested)
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
		ts := int64(chunk*rows + i)
		if interleave {
			ts = int64(i*8 + chunk)
		}
		bld.Field(0).(*array.Int64Builder).Append(ts * 1000)
		if i%10 == 9 {
			lb.AppendNull()
		} else if err := lb.AppendString(fmt.Sprintf("chunk%d-label%03d", chunk, i%distinct)); err != nil {
			t.Fatal(err)
		}
	}
	rec := bld.NewRecordBatch()
	data, stats := encodeChunk(t, rec)
	return data, stats, rec
}

// encodeChunk writes rec as one zstd Parquet chunk the way an ingestion service does (Arrow
// schema stored) and returns its bytes and chunk stats.
func encodeChunk(t *testing.T, rec arrow.RecordBatch) ([]byte, chunkstats.Stats) {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	acc, err := chunkstats.NewAccumulator(rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	acc.Add(rec)
	return buf.Bytes(), acc.Result()
}

// labelsTopic records a finalized topic of chunks labelChunk makes in a fresh catalog and store,
// and returns the activities, the topic ID and every row written ("ts label").
func labelsTopic(t *testing.T, pool int64, chunks, rows, distinct int, interleave, nested bool) (*activities.Activities, int64, []string) {
	t.Helper()
	var want []string
	a, id := chunkTopic(t, pool, "dict", "dict/labels", chunks, func(i int) ([]byte, chunkstats.Stats) {
		data, st, rec := labelChunk(t, i, rows, distinct, interleave, nested)
		if !nested {
			want = append(want, labelRows(t, rec)...)
		}
		rec.Release()
		return data, st
	})
	slices.Sort(want)
	return a, id, want
}

// chunkTopic records a finalized topic (sequence seq, topic locator, its metadata.json) of the
// chunks chunk(0…chunks-1) makes (object bytes and statistics) in a fresh catalog and store,
// and returns activities over them with a memory pool of pool bytes, and the topic ID.
func chunkTopic(t *testing.T, pool int64, seq, locator string, chunks int, chunk func(i int) ([]byte, chunkstats.Stats)) (*activities.Activities, int64) {
	t.Helper()
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	b, storeURL := testenv.NewBucket(t)
	seqID, err := cat.CreateSequence(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	prefix := store.NewPrefix()
	id, err := cat.CreateTopic(ctx, seqID, locator, prefix, "parquet")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, store.MetadataKey(prefix), []byte(`{"topic":"`+locator+`"}`+"\n"), nil); err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		data, st := chunk(i)
		key := store.ChunkKey(prefix, i)
		if err := b.WriteAll(ctx, key, data, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.AddChunk(ctx, catalog.Chunk{TopicID: id, Ordinal: i, ObjectKey: key, SizeBytes: int64(len(data)),
			RowCount: st.RowCount, ArrowSizeBytes: st.ArrowSizeBytes, MinTimestampNs: st.MinTimestampNs,
			MaxTimestampNs: st.MaxTimestampNs, TimestampNullCount: st.TimestampNullCount, ColumnStats: st.Columns}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.FinalizeTopic(ctx, id); err != nil {
		t.Fatal(err)
	}
	return &activities.Activities{Catalog: cat, Bucket: b, StoreURL: storeURL, MemoryPool: mempool.New(pool)}, id
}

// labelRows renders every row of rec as "ts label" (label "null" when null).
func labelRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	ts := rec.Column(0).(*array.Int64)
	out := make([]string, rec.NumRows())
	for i := range out {
		label := "null"
		switch col := rec.Column(1).(type) {
		case *array.Dictionary:
			if col.IsValid(i) {
				label = col.Dictionary().(*array.String).Value(col.GetValueIndex(i))
			}
		case *array.String:
			if col.IsValid(i) {
				label = col.Value(i)
			}
		default:
			t.Fatalf("label column reads as %s", rec.Column(1).DataType())
		}
		out[i] = fmt.Sprintf("%d %s", ts.Value(i), label)
	}
	return out
}

// readLabels reads a chunk with the plain arrow-go reader, in the types its ARROW:schema names
// (as any reader of the topic does), and returns its rows and the type of its label column.
func readLabels(t *testing.T, data []byte) ([]string, arrow.DataType, int) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	var dt arrow.DataType
	for rg := range pf.NumRowGroups() {
		rr, err := fr.GetRecordReader(context.Background(), nil, []int{rg})
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			dt = rec.Column(1).DataType()
			rows = append(rows, labelRows(t, rec)...)
		}
		if err := rr.Err(); err != nil {
			t.Fatalf("row group %d: %v", rg, err)
		}
		rr.Release()
	}
	return rows, dt, pf.NumRowGroups()
}

// TestDictionaryColumnsWiderThanTheirIndexTogether optimizes topics whose chunks each hold fewer
// than 128 labels in a dictionary<int8, utf8> column but more than 128 together: interleaved
// (short runs of every chunk are concatenated into one batch) and one after the other (batches of
// several dictionaries reach one row group). Every output chunk reads back with the plain
// arrow-go reader as the topic's declared dictionary<int8, utf8>, with every input row, and the
// commit verifies it.
func TestDictionaryColumnsWiderThanTheirIndexTogether(t *testing.T) {
	for _, interleave := range []bool{true, false} {
		t.Run(fmt.Sprintf("interleave=%v", interleave), func(t *testing.T) {
			a, id, want := labelsTopic(t, 256<<20, 4, 600, 100, interleave, false)
			outs := optimize(t, a, id, "run-dict", 0, 0)
			var got []string
			for i, data := range outs {
				rows, dt, groups := readLabels(t, data)
				if !arrow.TypeEqual(dt, labelSchema(false).Field(1).Type) {
					t.Errorf("output %d: label column reads as %s, the topic declares %s", i, dt, labelSchema(false).Field(1).Type)
				}
				t.Logf("output %d: %d rows in %d row groups", i, len(rows), groups)
				got = append(got, rows...)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("outputs hold %d rows, want the %d input rows", len(got), len(want))
			}
			ctx := activities.WithRun(context.Background(), "test-owner", "run-dict")
			if _, err := a.Commit(ctx, activities.CommitInput{TopicID: id}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNestedNarrowDictionaryIsRefusedAtOnce: a list of dictionary<int8, utf8> labels, fewer than
// 128 per chunk and more together, is not read in its value type (only top-level columns are):
// arrow-go cannot combine the interleaved chunks' dictionaries, and WriteChunks refuses the topic
// at once, as an input error that names the topic, the output chunk and the cause, so that it is
// quarantined like bad input instead of being retried as if the store were down.
func TestNestedNarrowDictionaryIsRefusedAtOnce(t *testing.T) {
	a, id, _ := labelsTopic(t, 256<<20, 3, 600, 100, true, true)
	_, err := optimizeTopic(a, id, "run-nested", 0, 0)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("got %v (%T), want an application error", err, err)
	}
	msg := appErr.Error()
	if appErr.Type() != activities.ErrTypeInput || !appErr.NonRetryable() {
		t.Errorf("error type %q, non-retryable %v, want %q, non-retryable: %s", appErr.Type(), appErr.NonRetryable(), activities.ErrTypeInput, msg)
	}
	for _, want := range []string{"topic dict/labels", "output chunk tp_", ".parquet", "cannot combine dictionaries"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not name %q", msg, want)
		}
	}
}
