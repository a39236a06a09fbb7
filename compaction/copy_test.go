package compaction

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
)

// Inputs the copy path must concatenate, or leave to a rewrite, without a row out of place:
// each output against the brute-force merge (checkOutputs), and whether the one output of all
// was copied.
func TestWriteOutputByCopyEdgeCases(t *testing.T) {
	withoutPassThrough(t) // one sorted input would be kept
	plain := func(codec compress.Compression, v parquet.DataPageVersion) func(int) *parquet.WriterProperties {
		return func(int) *parquet.WriterProperties {
			return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3), parquet.WithDictionaryDefault(false),
				parquet.WithStats(true), parquet.WithCompression(codec), parquet.WithDataPageVersion(v))
		}
	}
	var tiny [][]int64
	for i := range 400 {
		tiny = append(tiny, []int64{int64(3 * i), int64(3*i + 1)}[:1+i%2])
	}
	for _, tc := range []struct {
		name   string
		chunks [][]int64
		props  func(int) *parquet.WriterProperties
		copied bool
	}{
		{"one input", [][]int64{{1, 2, 3, 4, 5}}, plain(compress.Codecs.Zstd, parquet.DataPageV1), true},
		{"nulls before the next input", [][]int64{{1, 2, N}, {3, 4}, {5}}, plain(compress.Codecs.Zstd, parquet.DataPageV1), false},
		{"nulls only, then values", [][]int64{{N, N}, {1, 2}}, plain(compress.Codecs.Zstd, parquet.DataPageV1), true}, // appended in key order
		{"values, then nulls only", [][]int64{{1, 2}, {N, N}}, plain(compress.Codecs.Zstd, parquet.DataPageV1), true},
		{"an input inside another's range", [][]int64{{1, 10}, {5, 6}}, plain(compress.Codecs.Zstd, parquet.DataPageV1), false},
		{"uncompressed", [][]int64{{1, 2, 3}, {4, 5, 6, 7}}, plain(compress.Codecs.Uncompressed, parquet.DataPageV1), true},
		{"V2 pages", [][]int64{{1, 2, 3}, {4, 5, 6, 7}}, plain(compress.Codecs.Zstd, parquet.DataPageV2), true},
		{"V2 pages uncompressed", [][]int64{{1, 2, 3}, {4, 5, 6, 7}}, plain(compress.Codecs.Uncompressed, parquet.DataPageV2), true},
		{"V1 and V2 pages", [][]int64{{1, 2, 3}, {4, 5, 6, 7}, {8, N}}, func(j int) *parquet.WriterProperties {
			return plain(compress.Codecs.Snappy, []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2}[j%2])(j)
		}, true},
		{"codecs differ", [][]int64{{1, 2, 3}, {4, 5, 6, 7}}, func(j int) *parquet.WriterProperties {
			return plain([]compress.Compression{compress.Codecs.Zstd, compress.Codecs.Snappy}[j%2], parquet.DataPageV1)(j)
		}, false},
		{"400 tiny inputs", tiny, plain(compress.Codecs.Snappy, parquet.DataPageV1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopicEach(t, tc.chunks, tc.props)
			p := tp.plan(t, 1<<30)
			checkOutputs(t, tp, p)
			if len(p.Outputs) != 1 {
				return
			}
			res, err := WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"C", 0), tp.layout(t), nil)
			if err != nil || res.Copied != tc.copied {
				t.Fatalf("copied %v (%s), want %v; %v\n%s", res.Copied, res.NotCopied, tc.copied, err, p.Picture())
			}
		})
	}
}

// An input whose copied column holds a corrupt page (a byte array's length changed, the page
// still the size its header says; V1 and V2 pages) fails the output with a ChunkError naming
// that input (its topic quarantined after repeated runs), not an output that verifies with the
// page copied.
func TestWriteOutputByCopyCorruptInput(t *testing.T) {
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3), parquet.WithDictionaryDefault(false),
			parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDataPageVersion(v))
		tp := newTopicWith(t, [][]int64{{1, 2, 3}, {4, 5, 6}}, props)
		ctx := context.Background()
		key := store.ChunkKey(prefix, 1)
		data, err := tp.bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(data, []byte("\x08\x00\x00\x00in1/row0")) // a PLAIN value: its length, its bytes
		if at < 0 {
			t.Fatal("no payload value in the chunk")
		}
		data[at+1] ^= 0x10 // the length, little endian: 8 + 4096
		if err := tp.bucket.WriteAll(ctx, key, data, nil); err != nil {
			t.Fatal(err)
		}
		p := tp.plan(t, 1<<30)
		_, err = WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"C", 0), tp.layout(t), nil)
		var ce *ChunkError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Fatalf("page version %d: writing an output of a corrupt input: %v, want a ChunkError of %s", v, err, key)
		}
	}
}

// An input storing one column otherwise than the others (an earlier rewrite's output among
// ingested chunks) costs the copy of that column only: the output is copied, the column re-encoded
// by the writer (stored as the writer stores it, ZSTD), the other columns' pages copied (stored as
// the inputs store them, SNAPPY).
func TestWriteOutputByCopyOneColumnStoredOtherwise(t *testing.T) {
	tp := newTopicEach(t, [][]int64{{1, 2, 3}, {4, 5, 6, 7}, {8, 9}}, func(j int) *parquet.WriterProperties {
		row := compress.Codecs.Snappy
		if j == 1 {
			row = compress.Codecs.Gzip
		}
		return parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3), parquet.WithDictionaryDefault(false),
			parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithCompressionFor("row", row))
	})
	p := tp.plan(t, 1<<30)
	checkOutputs(t, tp, p)
	ctx := context.Background()
	key := store.ChunkKey(prefix+"C", 0)
	res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil || !res.Copied {
		t.Fatalf("copied %v (%s), want true; %v", res.Copied, res.NotCopied, err)
	}
	r := parquetFile(t, tp.bucket, key)
	want := map[string]compress.Compression{"input": compress.Codecs.Snappy, "payload": compress.Codecs.Snappy, "row": compress.Codecs.Zstd}
	for rg := range r.NumRowGroups() {
		for leaf := range r.MetaData().Schema.NumColumns() {
			cc, err := r.MetaData().RowGroup(rg).ColumnChunk(leaf)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := want[cc.PathInSchema().String()]; ok && cc.Compression() != c {
				t.Errorf("row group %d: column %s stored %s, want %s", rg, cc.PathInSchema(), cc.Compression(), c)
			}
		}
	}
}

// A chunk without rows among a rollup's inputs holds no page to copy: its storage (no column
// stored, Chunk.PageStorage) must not cost the other inputs their copy.
func TestWriteRollupByCopyWithAChunkWithoutRows(t *testing.T) {
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithDictionaryDefault(false), parquet.WithStats(true))
	for _, chunks := range [][][]int64{{{10, 20, 30}, nil, {40, 50}}, {nil, {10, 20, 30}, {40, 50}}} {
		tp := newTopicWith(t, chunks, props)
		inputs := make([]plan.Input, len(tp.refs))
		for j, r := range tp.refs {
			s := tp.scans[j]
			inputs[j] = plan.Input{ChunkID: r.ID, ObjectKey: r.Key, Rows: s.Rows, SizeBytes: r.SizeBytes,
				FooterBytes: s.FooterBytes, ArrowBytes: r.ArrowBytes, Ordinal: j, Storage: s.Storage}
		}
		p, err := plan.Rollup(inputs, [][]int{{0, 1, 2}}, plan.Totals{}, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.FooterID = tp.scans[0].Footer.ID
		res, err := WriteRollup(context.Background(), Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], store.ChunkKey(prefix+"R", 0), tp.layout(t), nil)
		if err != nil || !res.Copied || res.Stats.RowCount != 5 {
			t.Fatalf("chunks %v: copied %v (%s), %d rows; %v", chunks, res.Copied, res.NotCopied, res.Stats.RowCount, err)
		}
	}
}

// An output of an earlier rewrite (timestamp_ns delta-encoded, payload dictionary-encoded) and
// of ingested chunks (every column PLAIN) is copied: timestamp_ns and payload re-encoded as the
// writer stores them, the other columns' pages copied; its rows are those of a rewrite.
func TestWriteOutputByCopyOfARewriteAndIngestedChunks(t *testing.T) {
	ctx := context.Background()
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3), parquet.WithDictionaryDefault(false),
		parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Zstd))
	tp := newTopicWith(t, [][]int64{{1, 2, 3}, {4, 5, 6, 7}, {8, 9}, {10, 11, N}}, props)
	// The first two chunks rewritten into one, as a leveled compaction's earlier run did.
	inputs, samples := MergeInputs(tp.refs[:2], tp.scans[:2])
	p, err := plan.Compute(inputs, samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	p.FooterID = tp.scans[0].Footer.ID
	rewritten := store.ChunkKey(prefix, 10)
	CopyPages = false
	_, err = WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], rewritten, tp.layout(t), nil)
	CopyPages = true
	if err != nil {
		t.Fatal(err)
	}
	s, err := ScanChunk(ctx, tp.bucket, rewritten, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := tp.bucket.Attributes(ctx, rewritten)
	if err != nil {
		t.Fatal(err)
	}
	refs := []ChunkRef{{ID: 10, Key: rewritten, SizeBytes: attrs.Size, ArrowBytes: s.Rows << 20}, tp.refs[2], tp.refs[3]}
	refs[1].Ordinal, refs[2].Ordinal = 1, 2
	inputs, samples = MergeInputs(refs, []Scan{s, tp.scans[2], tp.scans[3]})
	if p, err = plan.Compute(inputs, samples, plan.Totals{}, plan.Options{MaxChunkSizeBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	p.FooterID = tp.scans[0].Footer.ID
	key := store.ChunkKey(prefix+"C", 0)
	res, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil)
	if err != nil || !res.Copied {
		t.Fatalf("copied %v (%s), want true; %v\n%s", res.Copied, res.NotCopied, err, p.Picture())
	}
	copied, _, copiedRows := readOutput(t, tp.bucket, key)
	r := parquetFile(t, tp.bucket, key)
	want := map[string]parquet.Encoding{"input": parquet.Encodings.Plain, "timestamp_ns": parquet.Encodings.DeltaBinaryPacked,
		"row": parquet.Encodings.Plain, "payload": parquet.Encodings.RLEDict}
	for rg := range r.NumRowGroups() {
		for leaf := range r.MetaData().Schema.NumColumns() {
			cc, err := r.MetaData().RowGroup(rg).ColumnChunk(leaf)
			if err != nil {
				t.Fatal(err)
			}
			if e := want[cc.PathInSchema().String()]; !slices.Contains(cc.Encodings(), e) {
				t.Errorf("row group %d: column %s encoded %v, want %s", rg, cc.PathInSchema(), cc.Encodings(), e)
			}
		}
	}
	CopyPages = false
	defer func() { CopyPages = true }()
	if _, err := WriteOutput(ctx, Inputs{Bucket: tp.bucket, Plan: p}, p.Outputs[0], key, tp.layout(t), nil); err != nil {
		t.Fatal(err)
	}
	rewrittenRows, _, rewrittenDigest := readOutput(t, tp.bucket, key)
	if !slices.Equal(copied, rewrittenRows) || copiedRows != rewrittenDigest {
		t.Fatalf("copied output holds %v, the rewrite %v", copied, rewrittenRows)
	}
}

// parquetFile opens the chunk at key with arrow-go's file reader, for its column chunks' metadata.
func parquetFile(t *testing.T, b *blob.Bucket, key string) *file.Reader {
	t.Helper()
	data, err := b.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
