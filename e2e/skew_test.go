package e2e

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/store"
)

// Tests of topics whose row sizes are skewed: a few huge rows among many small ones
// must neither crash a worker nor take it beyond its memory pool.

// blobSchema is a topic of status rows and occasional blobs: every row carries its identity
// (source chunk, stored row) and a binary payload.
func blobSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"topic"}, []string{"skewed"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "src_chunk", Type: arrow.PrimitiveTypes.Int64},
		{Name: "src_row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
	}, &md)
}

// blobRow is one row of a blob topic: its timestamp and payload (fill writes the payload's
// bytes into a buffer of its size).
type blobRow struct {
	ts   int64
	size int
	fill func(p []byte)
}

// blobChunk encodes rows as one chunk of blobSchema in one row group (the way an ingestion
// service that buffers a whole chunk writes it), one row per record batch so that the test
// never holds more than one payload, with exact catalog stats.
func blobChunk(t *testing.T, chunk int64, rows []blobRow) rawChunk {
	t.Helper()
	schema := blobSchema()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<30),
		parquet.WithDictionaryDefault(false)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := chunkstats.NewAccumulator(schema)
	if err != nil {
		t.Fatal(err)
	}
	var payload []byte
	for i := 0; i < len(rows); {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for n := 0; i < len(rows) && (n == 0 || rows[i].size < 1<<20) && n < 4096; i, n = i+1, n+1 {
			r := rows[i]
			if cap(payload) < r.size {
				payload = make([]byte, r.size)
			}
			p := payload[:r.size]
			r.fill(p)
			b.Field(0).(*array.Int64Builder).Append(r.ts)
			b.Field(1).(*array.Int64Builder).Append(chunk)
			b.Field(2).(*array.Int64Builder).Append(int64(i))
			b.Field(3).(*array.BinaryBuilder).Append(p)
		}
		rec := b.NewRecordBatch()
		b.Release()
		acc.Add(rec)
		if err := w.WriteBuffered(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := acc.Result()
	return rawChunk{data: buf.Bytes(), rows: st.RowCount, stats: &st}
}

// blobIdentity identifies a row of a blob topic in the output: source chunk and row, timestamp,
// payload size and a digest of the payload.
type blobIdentity struct {
	chunk, row, ts int64
	size           int
	sum            uint64
}

// payloadSum is a cheap digest of a payload (FNV-1a of its first and last 4 KiB and its size).
func payloadSum(p []byte) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	mix(p[:min(len(p), 4096)])
	mix(p[max(len(p)-4096, 0):])
	return h ^ uint64(len(p))
}

// expectedRows returns the identities of the rows of a topic's chunks, sorted by timestamp (the
// tests' timestamps are distinct).
func expectedRows(chunks [][]blobRow) []blobIdentity {
	var ids []blobIdentity
	var payload []byte
	for c, rows := range chunks {
		for i, r := range rows {
			if cap(payload) < r.size {
				payload = make([]byte, r.size)
			}
			p := payload[:r.size]
			r.fill(p)
			ids = append(ids, blobIdentity{chunk: int64(c), row: int64(i), ts: r.ts, size: r.size, sum: payloadSum(p)})
		}
	}
	slices.SortFunc(ids, func(a, b blobIdentity) int { return int(a.ts - b.ts) })
	return ids
}

// readBlobTopic reads the topic's chunks in catalog order in batches of at most 8 MiB (a larger
// row alone) and returns the identities of their rows in stored order, and each chunk's size.
func readBlobTopic(t *testing.T, e *env, topicID int64) ([]blobIdentity, []int64) {
	t.Helper()
	ctx := context.Background()
	var ids []blobIdentity
	var sizes []int64
	for _, c := range chunksOf(t, e, topicID) {
		obj, err := store.OpenObject(ctx, e.b, c.ObjectKey)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := parquetio.Open(obj, nil)
		if err != nil {
			t.Fatalf("open %s: %v", c.ObjectKey, err)
		}
		br, err := pc.BatchesWithin(ctx, parquetio.Limits{Rows: 4096, Bytes: 8 << 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for rec := br.Next(); rec != nil; rec = br.Next() {
			ts, src, row := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
			payload := rec.Column(3).(*array.Binary)
			for i := range int(rec.NumRows()) {
				p := payload.Value(i)
				ids = append(ids, blobIdentity{chunk: src.Value(i), row: row.Value(i), ts: ts.Value(i), size: len(p), sum: payloadSum(p)})
			}
		}
		if err := br.Err(); err != nil {
			t.Fatalf("read %s: %v", c.ObjectKey, err)
		}
		br.Release()
		pc.Close()
		sizes = append(sizes, c.SizeBytes)
	}
	return ids, sizes
}

// checkBlobTopic checks that the optimized topic holds exactly the expected rows, in timestamp
// order, in chunks of at most maxChunk bytes plus 10 % plus the largest row.
func checkBlobTopic(t *testing.T, e *env, topicID int64, want []blobIdentity, maxChunk int64) {
	t.Helper()
	got, sizes := readBlobTopic(t, e, topicID)
	if len(got) != len(want) {
		t.Fatalf("optimized topic holds %d rows, want %d", len(got), len(want))
	}
	var largest int
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d of the optimized topic is %+v, want %+v", i, got[i], want[i])
		}
		largest = max(largest, got[i].size)
	}
	for i, s := range sizes {
		if s > maxChunk+maxChunk/10+int64(largest) {
			t.Errorf("output chunk %d has %d bytes, over the soft limit %d", i, s, maxChunk)
		}
	}
	t.Logf("%d rows in %d chunks %v", len(got), len(sizes), sizes)
}

// TestHugeRowsAmongSmallOnes is the skewed topic: chunk 0 holds 20 000 rows of 100 bytes, chunk
// 1 twelve rows of 200 MiB (binary, zeros: the files are tiny), timestamps interleaved. A worker
// with a 256 MiB pool refuses it before writing anything, with a non-retryable error naming the
// topic, the chunk and the row's size against the pool (4 copies of a 200 MiB row do not fit),
// and leaves the topic as it was; a worker with a 1 GiB pool then optimizes it: every row once,
// in timestamp order, no worker crashed on the way (the in-process workers would take the test
// down with them).
func TestHugeRowsAmongSmallOnes(t *testing.T) {
	e := newEnv(t)
	const small, huge, hugeBytes = 20000, 12, 200 << 20
	zeros := func(p []byte) { clear(p) }
	var chunk0, chunk1 []blobRow
	for i := range small {
		chunk0 = append(chunk0, blobRow{ts: int64(i) * 1000, size: 100, fill: func(p []byte) {
			clear(p)
			p[0] = byte(i)
		}})
	}
	for i := range huge {
		chunk1 = append(chunk1, blobRow{ts: int64(i)*(small*1000/huge) + 500, size: hugeBytes, fill: zeros})
	}
	chunks := [][]blobRow{chunk0, chunk1}
	raw := []rawChunk{blobChunk(t, 0, chunk0), blobChunk(t, 1, chunk1)}
	t.Logf("chunk objects: %d and %d bytes", len(raw[0].data), len(raw[1].data))
	const locator = "skew/sensors/blobs"
	id, _ := e.putTopic(t, rawTopic{sequence: "skew", locator: locator, chunks: raw})
	before := e.recordTopic(t, id)
	hugeKey := before.chunks[1].ObjectKey

	cfg := e.cfg
	cfg.MemoryPoolBytes = 256 << 20
	stop := testenv.StartWorker(t, e.srv.Client, cfg)
	res := e.runPass(t, app.PassOptions{})
	if res.Optimized != 0 || res.Failed != 1 {
		t.Fatalf("run with a 256 MiB pool: %+v, want the topic refused", res)
	}
	msg := failuresByLocator(t, res)[locator]
	t.Logf("refused: %s", msg)
	for _, want := range []string{"topic " + locator + ": read-sort: chunk " + hugeKey, "a row of 200.0 MiB",
		"800.0 MiB of the memory pool", "pool of 256.0 MiB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal does not say %q: %s", want, msg)
		}
	}
	e.checkUntouched(t, before)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	cfg.MemoryPoolBytes = 1 << 30
	testenv.StartWorker(t, e.srv.Client, cfg)
	res = e.runPass(t, app.PassOptions{})
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run with a 1 GiB pool: %+v, want the topic optimized", res)
	}
	checkBlobTopic(t, e, id, expectedRows(chunks), app.DefaultMaxChunkSizeBytes)
	e.queueEmpty(t)
}

// TestCameraFramesOfVaryingSize is a camera-like topic whose frames vary from 10 KB to 50 MB
// (random bytes, as compressed images are): the camera switches between modes, so chunks of
// thumbnails and preview frames (10 KB to 2 MB) alternate with chunks of raw frames (20 to
// 50 MB), timestamps interleaved. A worker with a 256 MiB pool optimizes it into chunks of at
// most 64 MB (plus the soft margin: the planner weighs every chunk's rows by that chunk's
// bytes, not by the topic's average): every frame once, in timestamp order.
func TestCameraFramesOfVaryingSize(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(12, 34))
	modes := []struct {
		frames   int
		min, max int
	}{{24, 10_000, 200_000}, {4, 45_000_000, 50_000_000}, {24, 100_000, 2_000_000}, {3, 20_000_000, 50_000_000}}
	var chunks [][]blobRow
	var total int
	for c, m := range modes {
		var rows []blobRow
		for i := range m.frames {
			size := m.min + rng.IntN(m.max-m.min+1)
			seed := uint64(c*1000 + i)
			ts := int64(i) * 1_000_000_000 / int64(m.frames) // each chunk spans the same second
			rows = append(rows, blobRow{ts: ts + int64(c), size: size, fill: func(p []byte) {
				r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
				_, _ = r.Read(p)
			}})
			total += size
		}
		chunks = append(chunks, rows)
	}
	var raw []rawChunk
	for c, rows := range chunks {
		raw = append(raw, blobChunk(t, int64(c), rows))
	}
	t.Logf("%d MB of frames", total/1_000_000)
	id, _ := e.putTopic(t, rawTopic{sequence: "camera", locator: "camera/front", chunks: raw})

	cfg := e.cfg
	cfg.MemoryPoolBytes = 256 << 20
	testenv.StartWorker(t, e.srv.Client, cfg)
	const maxChunk = 64_000_000
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk})
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run: %+v, want the topic optimized", res)
	}
	checkBlobTopic(t, e, id, expectedRows(chunks), maxChunk)
	if n := len(chunksOf(t, e, id)); n < total/maxChunk {
		t.Errorf("%d output chunks for %d MB at %d MB each", n, total/1_000_000, maxChunk/1_000_000)
	}
	e.queueEmpty(t)
}
