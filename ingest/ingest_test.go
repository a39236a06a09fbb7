package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/store"
)

func openBucket(t *testing.T) *blob.Bucket {
	t.Helper()
	b, err := store.OpenFileURL(context.Background(), &url.URL{Scheme: "file", Path: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// chunkData is one chunk read back from the store.
type chunkData struct {
	schema *arrow.Schema
	stats  chunkstats.Stats
	ts     []int64 // timestamp_ns values, nulls removed
	groups int     // row groups
}

func readChunk(t *testing.T, bucket *blob.Bucket, key string) chunkData {
	t.Helper()
	ctx := context.Background()
	body, err := bucket.ReadAll(ctx, key)
	require.NoError(t, err, key)
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	require.NoError(t, err, key)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err, key)
	schema, err := fr.Schema()
	require.NoError(t, err, key)
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	require.NoError(t, err, key)
	defer rr.Release()

	acc, err := chunkstats.NewAccumulator(schema)
	require.NoError(t, err, key)
	var ts []int64
	for rr.Next() {
		rec := rr.RecordBatch()
		acc.Add(rec)
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			if col.IsValid(i) {
				ts = append(ts, col.Value(i))
			}
		}
	}
	require.NoError(t, rr.Err(), key)
	require.NoError(t, acc.Err(), key)
	return chunkData{schema: schema, stats: acc.Result(), ts: ts, groups: pf.NumRowGroups()}
}

func metaValue(md arrow.Metadata, key string) string {
	if i := md.FindKey(key); i >= 0 {
		return md.Values()[i]
	}
	return ""
}

func hasDuplicate(ts []int64) bool {
	s := slices.Clone(ts)
	slices.Sort(s)
	return len(slices.Compact(s)) < len(ts)
}

// interleaves reports whether some value of next lies strictly inside prev's range and is not
// one of prev's values.
func interleaves(prev, next []int64) bool {
	if len(prev) == 0 {
		return false
	}
	lo, hi := slices.Min(prev), slices.Max(prev)
	for _, v := range next {
		if v > lo && v < hi && !slices.Contains(prev, v) {
			return true
		}
	}
	return false
}

var prefixPattern = regexp.MustCompile(`^tp_[0-9A-HJKMNP-TV-Z]{26}$`)

func TestIngestTestPreset(t *testing.T) {
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	bucket := openBucket(t)
	opts, err := ingest.Preset("test", 1)
	require.NoError(t, err)

	var progress int
	opts.Progress = func(string, int, int) { progress++ }
	topics, err := ingest.Ingest(ctx, cat, bucket, opts)
	require.NoError(t, err)
	require.Len(t, topics, len(opts.Topics))

	totalChunks := 0
	for i, spec := range opts.Topics {
		got := topics[i]
		totalChunks += spec.Chunks
		t.Run(spec.Path, func(t *testing.T) {
			locator := opts.Sequence + "/" + spec.Path
			assert.Equal(t, locator, got.Locator)
			assert.Regexp(t, prefixPattern, got.Prefix)
			assert.Equal(t, spec.Chunks, got.Chunks)
			assert.Equal(t, int64(spec.Chunks*spec.RowsPerChunk), got.Rows)

			topic, err := cat.Topic(ctx, got.TopicID)
			require.NoError(t, err)
			assert.Equal(t, locator, topic.Locator)
			assert.Equal(t, got.Prefix, topic.DataPrefix)
			assert.Equal(t, "parquet", topic.SerializationFormat)
			require.NotNil(t, topic.FinalizedAt, "topic must be finalized")

			// metadata.json
			raw, err := bucket.ReadAll(ctx, ingest.MetadataKey(got.Prefix))
			require.NoError(t, err)
			var meta struct {
				Locator, Ontology string
				Fields            []struct{ Name, Unit string }
			}
			require.NoError(t, json.Unmarshal(raw, &meta))
			assert.Equal(t, locator, meta.Locator)
			assert.Equal(t, string(spec.Kind), meta.Ontology)
			assert.Equal(t, "timestamp_ns", meta.Fields[0].Name)

			// Object names: exactly the catalog's chunks, 00000 upwards.
			var keys []string
			iter := bucket.List(&blob.ListOptions{Prefix: got.Prefix + "/data/"})
			for {
				obj, err := iter.Next(ctx)
				if err == io.EOF {
					break
				}
				require.NoError(t, err, "list the store")
				keys = append(keys, obj.Key)
			}
			chunks, err := cat.Chunks(ctx, got.TopicID)
			require.NoError(t, err)
			require.Len(t, chunks, spec.Chunks)
			var wantKeys []string
			for j := range spec.Chunks {
				wantKeys = append(wantKeys, fmt.Sprintf("%s/data/%05d.parquet", got.Prefix, j))
			}
			assert.Equal(t, wantKeys, keys)

			var data []chunkData
			var bytesTotal, nulls int64
			for j, ch := range chunks {
				assert.Equal(t, j, ch.Ordinal)
				assert.Equal(t, wantKeys[j], ch.ObjectKey)
				attrs, err := bucket.Attributes(ctx, ch.ObjectKey)
				require.NoError(t, err)
				assert.Equal(t, attrs.Size, ch.SizeBytes, ch.ObjectKey)
				bytesTotal += ch.SizeBytes
				nulls += ch.TimestampNullCount

				d := readChunk(t, bucket, ch.ObjectKey)
				data = append(data, d)
				assert.Equal(t, 1, d.groups, "one row group per chunk")
				assert.Equal(t, int64(spec.RowsPerChunk), ch.RowCount)
				assert.Equal(t, d.stats.RowCount, ch.RowCount, ch.ObjectKey)
				assert.Equal(t, d.stats.ArrowSizeBytes, ch.ArrowSizeBytes, ch.ObjectKey)
				assert.Equal(t, d.stats.TimestampNullCount, ch.TimestampNullCount, ch.ObjectKey)
				assert.Equal(t, d.stats.MinTimestampNs, ch.MinTimestampNs, ch.ObjectKey)
				assert.Equal(t, d.stats.MaxTimestampNs, ch.MaxTimestampNs, ch.ObjectKey)
				for name, cs := range d.stats.Columns {
					assert.Equal(t, cs.NullCount, ch.ColumnStats[name].NullCount, "%s column %s", ch.ObjectKey, name)
				}

				// Schema and field metadata survive in the footer.
				assert.Equal(t, locator, metaValue(d.schema.Metadata(), "mosaico:topic"))
				assert.Equal(t, string(spec.Kind), metaValue(d.schema.Metadata(), "mosaico:ontology"))
				for _, f := range d.schema.Fields() {
					assert.NotEmpty(t, metaValue(f.Metadata, "description"), "field %s", f.Name)
					assert.GreaterOrEqual(t, f.Metadata.FindKey("unit"), 0, "field %s", f.Name)
				}
			}
			assert.Equal(t, bytesTotal, got.Bytes)
			assert.Equal(t, int64(spec.NullTimestamps), nulls, "null timestamps")
			assert.Equal(t, *chunks[0].MinTimestampNs, slices.Min(data[0].ts))
			require.NotNil(t, topic.MinTimestampNs)

			// Irregularities are really in the data.
			unsorted, duplicates, overlapping, interleaved := 0, 0, 0, 0
			for j, d := range data {
				if !slices.IsSorted(d.ts) {
					unsorted++
				}
				if hasDuplicate(d.ts) {
					duplicates++
				}
				if j > 0 && *chunks[j].MinTimestampNs < *chunks[j-1].MaxTimestampNs {
					overlapping++
				}
				if j > 0 && interleaves(data[j-1].ts, d.ts) {
					interleaved++
				}
			}
			wantUnsorted := max(1, int(float64(spec.Chunks)*spec.UnsortedFraction+0.5))
			assert.Equal(t, wantUnsorted, unsorted, "unsorted chunks")
			if spec.EqualTimestamps {
				assert.GreaterOrEqual(t, duplicates, spec.Chunks/2, "chunks with equal timestamps")
			} else {
				assert.Zero(t, duplicates, "chunks with equal timestamps")
			}
			assert.GreaterOrEqual(t, overlapping, (spec.Chunks-1)/2, "chunks overlapping their predecessor")
			assert.GreaterOrEqual(t, interleaved, (spec.Chunks-1)/2, "chunks interleaving with their predecessor")
		})
	}
	assert.Equal(t, totalChunks, progress)
}

func TestIngestRegularTopicHasNoIrregularities(t *testing.T) {
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	bucket := openBucket(t)
	topics, err := ingest.Ingest(ctx, cat, bucket, ingest.Options{Sequence: "plain", Seed: 3, Topics: []ingest.TopicSpec{
		{Path: "gps", Kind: ingest.GPS, Chunks: 5, RowsPerChunk: 40},
	}})
	require.NoError(t, err)
	chunks, err := cat.Chunks(ctx, topics[0].TopicID)
	require.NoError(t, err)
	require.Len(t, chunks, 5)
	for j, ch := range chunks {
		d := readChunk(t, bucket, ch.ObjectKey)
		assert.True(t, slices.IsSorted(d.ts), ch.ObjectKey)
		assert.False(t, hasDuplicate(d.ts), ch.ObjectKey)
		assert.Zero(t, ch.TimestampNullCount)
		if j > 0 {
			assert.Less(t, *chunks[j-1].MaxTimestampNs, *ch.MinTimestampNs, "chunks must not overlap")
		}
	}
}

// ingestBytes ingests opts into a fresh catalog and directory and returns every object's bytes
// keyed by its name relative to the topic prefix ("<locator>:data/00000.parquet").
func ingestBytes(t *testing.T, opts ingest.Options) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	bucket := openBucket(t)
	topics, err := ingest.Ingest(ctx, pgtest.NewCatalog(t), bucket, opts)
	require.NoError(t, err)
	out := make(map[string][]byte)
	for _, tp := range topics {
		iter := bucket.List(&blob.ListOptions{Prefix: tp.Prefix + "/"})
		for {
			obj, err := iter.Next(ctx)
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "list the store")
			body, err := bucket.ReadAll(ctx, obj.Key)
			require.NoError(t, err)
			out[tp.Locator+":"+obj.Key[len(tp.Prefix)+1:]] = body
		}
	}
	return out
}

func TestIngestIsDeterministic(t *testing.T) {
	opts, err := ingest.Preset("test", 0.5)
	require.NoError(t, err)
	first := ingestBytes(t, opts)
	opts.Workers = 1
	second := ingestBytes(t, opts)
	require.NotEmpty(t, first)
	require.Equal(t, len(first), len(second))
	for name, body := range first {
		assert.True(t, bytes.Equal(body, second[name]), "%s differs between runs with the same seed", name)
	}

	opts.Seed++
	third := ingestBytes(t, opts)
	name := "test_run/sensors/imu:data/00000.parquet"
	require.Contains(t, third, name)
	assert.False(t, bytes.Equal(first[name], third[name]), "another seed must give other data")
}

func TestIngestRefusesExistingTopic(t *testing.T) {
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	bucket := openBucket(t)
	opts := ingest.Options{Sequence: "again", Topics: []ingest.TopicSpec{
		{Path: "imu", Kind: ingest.IMU, Chunks: 1, RowsPerChunk: 10},
	}}
	_, err := ingest.Ingest(ctx, cat, bucket, opts)
	require.NoError(t, err)
	_, err = ingest.Ingest(ctx, cat, bucket, opts)
	require.ErrorIs(t, err, catalog.ErrAlreadyExists)
	assert.ErrorContains(t, err, "topic again/imu")
}

func TestIngestValidatesOptions(t *testing.T) {
	good := ingest.TopicSpec{Path: "imu", Kind: ingest.IMU, Chunks: 2, RowsPerChunk: 10}
	for _, tc := range []struct {
		name string
		mod  func(*ingest.Options)
		want string
	}{
		{"sequence with slash", func(o *ingest.Options) { o.Sequence = "a/b" }, `sequence "a/b"`},
		{"empty path", func(o *ingest.Options) { o.Topics[0].Path = "" }, `topic s/: path ""`},
		{"unknown kind", func(o *ingest.Options) { o.Topics[0].Kind = "lidar" }, `unknown kind "lidar"`},
		{"no rows", func(o *ingest.Options) { o.Topics[0].RowsPerChunk = 0 }, "rows per chunk 0"},
		{"overlap", func(o *ingest.Options) { o.Topics[0].Overlap = 1.5 }, "overlap 1.5"},
		{"unsorted", func(o *ingest.Options) { o.Topics[0].UnsortedFraction = -1 }, "unsorted fraction -1"},
		{"too many nulls", func(o *ingest.Options) { o.Topics[0].NullTimestamps = 21 }, "null timestamps 21 outside 0..20"},
		{"codec", func(o *ingest.Options) { o.Topics[0].Compression = "lzo" }, `unknown compression "lzo"`},
		{"duplicate", func(o *ingest.Options) { o.Topics = append(o.Topics, good) }, "topic s/imu: listed twice"},
		// A huge count (a long --live with a tiny --chunk-interval) once exhausted the memory
		// (runtime: out of memory) after the topic had been created in the catalog.
		{"too many chunks", func(o *ingest.Options) { o.Topics[0].Chunks = 1 << 50 }, "topic s/imu: chunks 1125899906842624 > 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ingest.Options{Sequence: "s", Topics: []ingest.TopicSpec{good}}
			tc.mod(&opts)
			// Invalid options are refused before the catalog or the store is touched.
			_, err := ingest.Ingest(context.Background(), nil, nil, opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPreset(t *testing.T) {
	demo, err := ingest.Preset("demo", 1)
	require.NoError(t, err)
	chunks, arrowBytes := 0, int64(0)
	for _, tp := range demo.Topics {
		chunks += tp.Chunks
		// Rough Arrow row sizes: IMU 11 fixed columns + frame_id, GPS 6 columns, camera payload.
		switch tp.Kind {
		case ingest.IMU:
			arrowBytes += int64(tp.Chunks*tp.RowsPerChunk) * 100
		case ingest.GPS:
			arrowBytes += int64(tp.Chunks*tp.RowsPerChunk) * 50
		case ingest.Camera:
			arrowBytes += int64(tp.Chunks*tp.RowsPerChunk) * int64(tp.PayloadBytes)
		}
	}
	assert.Equal(t, 2600, chunks)
	assert.Greater(t, arrowBytes, int64(500e6))
	assert.Less(t, arrowBytes, int64(1e9))

	half, err := ingest.Preset("demo", 0.5)
	require.NoError(t, err)
	assert.Equal(t, 1000, half.Topics[0].Chunks)
	assert.Equal(t, 150, half.Topics[2].Chunks)

	tiny, err := ingest.Preset("test", 0.001)
	require.NoError(t, err)
	for _, tp := range tiny.Topics {
		assert.Equal(t, 1, tp.Chunks)
	}

	_, err = ingest.Preset("huge", 1)
	assert.ErrorContains(t, err, `unknown preset "huge"`)
	_, err = ingest.Preset("test", 0)
	assert.ErrorContains(t, err, "scale 0")
	_, err = ingest.Preset("test", -1)
	assert.Error(t, err)
	// A scale that gives a topic more than MaxChunks chunks is refused (it once ran the
	// ingestion out of memory), also where the chunk count overflows an int.
	for _, scale := range []float64{1e12, 1e300} {
		_, err = ingest.Preset("demo", scale)
		assert.ErrorContains(t, err, "chunks, more than 1000000", "scale %v", scale)
	}
	most, err := ingest.Preset("test", ingest.MaxChunks/10)
	require.NoError(t, err)
	assert.Equal(t, ingest.MaxChunks, most.Topics[0].Chunks)
}
