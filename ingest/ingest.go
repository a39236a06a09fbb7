// Package ingest simulates the ingestion service: it writes topics the way the service does,
// one small Parquet chunk per received record batch under a fresh data prefix, each recorded in
// the catalog as it is written, and finalizes every topic at the end. The data is synthetic
// (IMU, GPS, camera) and deterministic for a seed, with the irregularities compaction has to cope
// with: chunks overlapping in time, unsorted chunks, equal and null timestamps.
//
// Layout of a topic in the store:
//
//	tp_<ULID>/metadata.json          description, fields with units, ingestion parameters
//	tp_<ULID>/data/00000.parquet     chunk 0 (one row group; Arrow schema stored in the footer)
//	tp_<ULID>/data/00001.parquet     ...
package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/oklog/ulid/v2"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
)

// IngestedTopic summarizes one ingested (and finalized) topic.
type IngestedTopic struct {
	TopicID int64
	Locator string // "<sequence>/<path>"
	Prefix  string // "tp_<ULID>"
	Chunks  int
	Rows    int64
	Bytes   int64 // total size of the topic's chunk objects (metadata.json excluded)
}

// ChunkKey returns the object key of a chunk: "<prefix>/data/NNNNN.parquet".
func ChunkKey(prefix string, ordinal int) string {
	return fmt.Sprintf("%s/data/%05d.parquet", prefix, ordinal)
}

// MetadataKey returns the object key of a topic's metadata.json.
func MetadataKey(prefix string) string { return prefix + "/metadata.json" }

// Ingest writes every topic of opts, one after the other: it records the sequence (idempotent),
// creates the topic under a fresh prefix tp_<ULID>, writes <prefix>/metadata.json, then each
// chunk as <prefix>/data/NNNNN.parquet followed by its catalog row (in ordinal order), and
// finalizes the topic. Chunks are generated, encoded and uploaded by opts.Workers goroutines;
// at most a few chunks are in memory at once, so topics of any size can be written.
//
// Everything written is a function of opts (Seed included) except the prefixes. Errors name the
// topic and chunk; on error the topic being written is left unfinalized with the chunks recorded
// so far, and the topics already finalized stay as they are. Topics that already exist
// (same locator) are refused with catalog.ErrAlreadyExists.
func Ingest(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, opts Options) ([]IngestedTopic, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ChunkInterval > 0 {
		return ingestLive(ctx, cat, bucket, opts)
	}
	var out []IngestedTopic
	for i, spec := range opts.Topics {
		t, err := ingestTopic(ctx, cat, bucket, opts, i, spec)
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

// topicWriter writes the chunks of one topic.
type topicWriter struct {
	bucket   *blob.Bucket
	locator  string
	prefix   string
	schema   *arrow.Schema
	timeline *topicTimeline
	props    *parquet.WriterProperties
}

// chunkResult is what a worker reports for one written chunk.
type chunkResult struct {
	key   string
	size  int64
	stats chunkstats.Stats
	err   error
}

func ingestTopic(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, opts Options, index int, spec TopicSpec) (IngestedTopic, error) {
	w, result, err := createTopic(ctx, cat, bucket, opts, index, spec)
	if err != nil {
		return IngestedTopic{}, err
	}
	fail := func(err error) (IngestedTopic, error) {
		return IngestedTopic{}, fmt.Errorf("topic %s: %w", w.locator, err)
	}
	err = w.writeChunks(ctx, opts.Workers, func(ordinal int, r chunkResult) error {
		return w.record(ctx, cat, opts, &result, ordinal, r)
	})
	if err != nil {
		return fail(err)
	}
	if opts.NoFinalize {
		return result, nil
	}
	if err := cat.FinalizeTopic(ctx, result.TopicID); err != nil {
		return fail(err)
	}
	return result, nil
}

// ingestLive writes every topic at once, one chunk per topic every opts.ChunkInterval (the chunks
// of one tick are written one after the other), until each topic has its chunks; then finalizes
// them unless opts.NoFinalize.
func ingestLive(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, opts Options) ([]IngestedTopic, error) {
	writers := make([]*topicWriter, len(opts.Topics))
	out := make([]IngestedTopic, len(opts.Topics))
	most := 0
	for i, spec := range opts.Topics {
		w, res, err := createTopic(ctx, cat, bucket, opts, i, spec)
		if err != nil {
			return out[:i], err
		}
		writers[i], out[i] = w, res
		most = max(most, spec.Chunks)
	}
	var scratch chunkScratch
	tick := time.NewTicker(opts.ChunkInterval)
	defer tick.Stop()
	for ordinal := range most {
		if ordinal > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		for i, w := range writers {
			if ordinal >= w.timeline.spec.Chunks {
				continue
			}
			r := w.writeChunk(ctx, ordinal, &scratch)
			if r.err != nil {
				return out, fmt.Errorf("topic %s: %w", w.locator, r.err)
			}
			if err := w.record(ctx, cat, opts, &out[i], ordinal, r); err != nil {
				return out, fmt.Errorf("topic %s: %w", w.locator, err)
			}
		}
	}
	if opts.NoFinalize {
		return out, nil
	}
	for _, t := range out {
		if err := cat.FinalizeTopic(ctx, t.TopicID); err != nil {
			return out, fmt.Errorf("topic %s: %w", t.Locator, err)
		}
	}
	return out, nil
}

// AppendHorizon is the chunk count of the timeline Append generates chunks from: the contents of
// an appended chunk depend only on the options, the topic and its ordinal, not on how many chunks
// are appended at once.
const AppendHorizon = 100_000

// Append appends chunks from, from+1, … from+n-1 to each live topic of topics (ingested by Ingest
// with opts and NoFinalize, topics[i] from opts.Topics[i]) into its ingestion prefix, as a longer
// recording would have written them; appended chunks have no null timestamps. Errors name the
// topic and chunk; a finalized topic is refused (catalog.ErrTopicFinalized).
func Append(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, opts Options, topics []IngestedTopic, from, n int) error {
	if len(topics) > len(opts.Topics) || from < 0 || n < 0 {
		return fmt.Errorf("append: %d topics for %d specs, from %d, n %d", len(topics), len(opts.Topics), from, n)
	}
	var scratch chunkScratch
	for i := range topics {
		spec := opts.Topics[i]
		spec.Chunks, spec.NullTimestamps = AppendHorizon, 0
		w := &topicWriter{bucket: bucket, locator: topics[i].Locator, prefix: topics[i].Prefix,
			schema: schemaOf(spec.Kind, opts.Sequence, topics[i].Locator), timeline: newTopicTimeline(opts.Seed, i, spec),
			props: writerProperties(spec)}
		for ordinal := from; ordinal < from+n; ordinal++ {
			r := w.writeChunk(ctx, ordinal, &scratch)
			if r.err != nil {
				return fmt.Errorf("topic %s: %w", w.locator, r.err)
			}
			if err := w.record(ctx, cat, opts, &topics[i], ordinal, r); err != nil {
				return fmt.Errorf("topic %s: %w", w.locator, err)
			}
		}
	}
	return nil
}

// Finalize finalizes every topic of the sequence (live topics written with NoFinalize); topics
// finalized already keep their finalization time. It returns the topics finalized. Errors: the
// sequence has no topic.
func Finalize(ctx context.Context, cat *catalog.Catalog, sequence string) ([]string, error) {
	topics, err := cat.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range topics {
		if !strings.HasPrefix(t.Locator, sequence+"/") {
			continue
		}
		if err := cat.FinalizeTopic(ctx, t.ID); err != nil {
			return done, fmt.Errorf("topic %s: %w", t.Locator, err)
		}
		done = append(done, t.Locator)
	}
	if len(done) == 0 {
		return nil, fmt.Errorf("sequence %q has no topic in the catalog", sequence)
	}
	return done, nil
}

// record adds a written chunk to the catalog and to the topic's totals.
func (w *topicWriter) record(ctx context.Context, cat *catalog.Catalog, opts Options, result *IngestedTopic, ordinal int, r chunkResult) error {
	_, err := cat.AddChunk(ctx, catalog.Chunk{
		TopicID:            result.TopicID,
		Ordinal:            ordinal,
		ObjectKey:          r.key,
		SizeBytes:          r.size,
		RowCount:           r.stats.RowCount,
		ArrowSizeBytes:     r.stats.ArrowSizeBytes,
		MinTimestampNs:     r.stats.MinTimestampNs,
		MaxTimestampNs:     r.stats.MaxTimestampNs,
		TimestampNullCount: r.stats.TimestampNullCount,
		ColumnStats:        r.stats.Columns,
	})
	if err != nil {
		return fmt.Errorf("chunk %s: %w", r.key, err)
	}
	result.Chunks++
	result.Rows += r.stats.RowCount
	result.Bytes += r.size
	if opts.Progress != nil {
		opts.Progress(w.locator, result.Chunks, w.timeline.spec.Chunks)
	}
	return nil
}

// createTopic records the sequence (idempotent) and the topic under a fresh prefix and writes its
// metadata.json.
func createTopic(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, opts Options, index int, spec TopicSpec) (*topicWriter, IngestedTopic, error) {
	locator := opts.Sequence + "/" + spec.Path
	fail := func(err error) (*topicWriter, IngestedTopic, error) {
		return nil, IngestedTopic{}, fmt.Errorf("topic %s: %w", locator, err)
	}

	seqID, err := cat.CreateSequence(ctx, opts.Sequence)
	if err != nil {
		return fail(err)
	}
	prefix := "tp_" + ulid.Make().String()
	topicID, err := cat.CreateTopic(ctx, seqID, locator, prefix, "parquet")
	if err != nil {
		return fail(err)
	}
	w := &topicWriter{
		bucket:   bucket,
		locator:  locator,
		prefix:   prefix,
		schema:   schemaOf(spec.Kind, opts.Sequence, locator),
		timeline: newTopicTimeline(opts.Seed, index, spec),
		props:    writerProperties(spec),
	}
	meta, err := w.metadataJSON(opts)
	if err != nil {
		return fail(err)
	}
	if err := bucket.WriteAll(ctx, MetadataKey(prefix), meta, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fail(fmt.Errorf("write %s: %w", MetadataKey(prefix), err))
	}
	return w, IngestedTopic{TopicID: topicID, Locator: locator, Prefix: prefix}, nil
}

// writeChunks writes the topic's chunks with `workers` goroutines and calls record for each, in
// ordinal order, from the calling goroutine. At most 2*workers chunks are in flight.
func (w *topicWriter) writeChunks(ctx context.Context, workers int, record func(ordinal int, r chunkResult) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()

	type job struct {
		ordinal int
		out     chan<- chunkResult
	}
	jobs := make(chan job)
	pending := make(chan chan chunkResult, workers) // results in ordinal order
	for range workers {
		wg.Go(func() {
			var scratch chunkScratch
			for j := range jobs {
				j.out <- w.writeChunk(ctx, j.ordinal, &scratch)
			}
		})
	}
	wg.Go(func() {
		defer close(pending)
		defer close(jobs)
		for i := range w.timeline.spec.Chunks {
			out := make(chan chunkResult, 1)
			select {
			case jobs <- job{i, out}:
			case <-ctx.Done():
				return
			}
			select {
			case pending <- out:
			case <-ctx.Done():
				return
			}
		}
	})

	ordinal := 0
	for out := range pending {
		r := <-out
		if r.err != nil {
			return r.err
		}
		if err := record(ordinal, r); err != nil {
			return err
		}
		ordinal++
	}
	if ordinal != w.timeline.spec.Chunks {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		return errors.New("chunk writer stopped early")
	}
	return nil
}

// chunkScratch holds a worker's reusable buffers.
type chunkScratch struct {
	parquet bytes.Buffer
	payload []byte
}

// writeChunk generates, encodes and uploads one chunk and computes its statistics.
func (w *topicWriter) writeChunk(ctx context.Context, ordinal int, scratch *chunkScratch) chunkResult {
	key := ChunkKey(w.prefix, ordinal)
	fail := func(err error) chunkResult { return chunkResult{err: fmt.Errorf("chunk %s: %w", key, err)} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	rec := w.generate(ordinal, &scratch.payload)
	defer rec.Release()

	acc, err := chunkstats.NewAccumulator(w.schema)
	if err != nil {
		return fail(err)
	}
	acc.Add(rec)
	if err := acc.Err(); err != nil {
		return fail(err)
	}

	scratch.parquet.Reset()
	if err := encodeParquet(&scratch.parquet, rec, w.props); err != nil {
		return fail(err)
	}
	body := scratch.parquet.Bytes()
	opts := &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"}
	if err := w.bucket.WriteAll(ctx, key, body, opts); err != nil {
		return fail(fmt.Errorf("upload: %w", err))
	}
	return chunkResult{key: key, size: int64(len(body)), stats: acc.Result()}
}

// generate builds the record batch of one chunk.
func (w *topicWriter) generate(ordinal int, payload *[]byte) arrow.RecordBatch {
	tl := w.timeline
	rng := tl.chunkRNG(ordinal)
	b := array.NewRecordBuilder(memory.DefaultAllocator, w.schema)
	defer b.Release()
	b.Reserve(tl.spec.RowsPerChunk)
	ts, valid := tl.timestamps(ordinal, rng)
	b.Field(0).(*array.Int64Builder).AppendValues(ts, valid)
	fillColumns(tl.spec.Kind, b.Fields(), rng, int64(ordinal)*int64(tl.spec.RowsPerChunk), tl.spec.RowsPerChunk,
		tl.spec.hugeRows(ordinal), tl.spec, payload)
	return b.NewRecordBatch()
}

// writerProperties are the Parquet settings of the ingestion service: the topic's codec and data
// page version, dictionary encoding for string columns only, statistics on, and the page index
// and row group length the topic asks for.
func writerProperties(spec TopicSpec) *parquet.WriterProperties {
	version := parquet.DataPageV1
	if spec.DataPageV2 {
		version = parquet.DataPageV2
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codecs[spec.Compression]),
		parquet.WithDataPageVersion(version),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(spec.PageIndex),
	}
	if spec.RowGroupRows > 0 {
		props = append(props, parquet.WithMaxRowGroupLength(int64(spec.RowGroupRows)))
	}
	for _, f := range fieldsOf(spec.Kind) {
		if f.typ.ID() == arrow.STRING {
			props = append(props, parquet.WithDictionaryFor(f.name, true))
		}
	}
	return parquet.NewWriterProperties(props...)
}

// encodeParquet writes rec as one Parquet file (one row group, or row groups of props' maximum
// length) with the Arrow schema, metadata
// included, stored in the footer.
func encodeParquet(dst *bytes.Buffer, rec arrow.RecordBatch, props *parquet.WriterProperties) error {
	fw, err := pqarrow.NewFileWriter(rec.Schema(), dst, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		_ = fw.Close()
		return fmt.Errorf("parquet write: %w", err)
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("parquet close: %w", err)
	}
	return nil
}

// topicMetadata is the document stored as <prefix>/metadata.json.
type topicMetadata struct {
	Locator             string          `json:"locator"`
	Sequence            string          `json:"sequence"`
	Topic               string          `json:"topic"`
	Ontology            string          `json:"ontology"`
	Description         string          `json:"description"`
	SerializationFormat string          `json:"serialization_format"`
	Fields              []fieldMetadata `json:"fields"`
	Ingestion           ingestionInfo   `json:"ingestion"`
}

type fieldMetadata struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Nullable    bool   `json:"nullable"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description"`
}

type ingestionInfo struct {
	Source           string  `json:"source"`
	Seed             int64   `json:"seed"`
	StartTimestampNs int64   `json:"start_timestamp_ns"`
	PeriodNs         int64   `json:"period_ns"`
	Chunks           int     `json:"chunks"`
	RowsPerChunk     int     `json:"rows_per_chunk"`
	PayloadBytes     int     `json:"payload_bytes,omitempty"`
	Compression      string  `json:"compression"`
	Overlap          float64 `json:"overlap"`
	UnsortedFraction float64 `json:"unsorted_fraction"`
	EqualTimestamps  bool    `json:"equal_timestamps"`
	NullTimestamps   int     `json:"null_timestamps"`
}

// metadataJSON renders the topic's metadata.json (deterministic for the options).
func (w *topicWriter) metadataJSON(opts Options) ([]byte, error) {
	spec := w.timeline.spec
	m := topicMetadata{
		Locator:             w.locator,
		Sequence:            opts.Sequence,
		Topic:               spec.Path,
		Ontology:            string(spec.Kind),
		Description:         kinds[spec.Kind].description,
		SerializationFormat: "parquet",
		Ingestion: ingestionInfo{
			Source:           "storeopt ingestion simulator",
			Seed:             opts.Seed,
			StartTimestampNs: w.timeline.startNs,
			PeriodNs:         w.timeline.periodNs,
			Chunks:           spec.Chunks,
			RowsPerChunk:     spec.RowsPerChunk,
			Compression:      spec.compressionName(),
			Overlap:          spec.Overlap,
			UnsortedFraction: spec.UnsortedFraction,
			EqualTimestamps:  spec.EqualTimestamps,
			NullTimestamps:   spec.NullTimestamps,
		},
	}
	if spec.Kind == Camera {
		m.Ingestion.PayloadBytes = spec.payloadBytes()
	}
	for _, f := range fieldsOf(spec.Kind) {
		m.Fields = append(m.Fields, fieldMetadata{Name: f.name, Type: f.typ.String(), Nullable: f.nullable,
			Unit: f.unit, Description: f.description})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("metadata.json: %w", err)
	}
	return append(b, '\n'), nil
}
