package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/internal/testenv"
)

// thirdParty is what became of one file of parquet-testing.
type thirdParty struct {
	file     string
	category string // "round trip", "unreadable", "unwritable", "no rows"
	note     string // writer properties used, or why the file could not be converted
	chunks   []rawChunk
}

// TestThirdPartyParquet builds, for every file of parquet-testing, a topic of two chunks holding
// the file's rows plus a timestamp_ns column, written with the original's codec, dictionary,
// data encoding and data page version per column where arrow-go can write them, and checks that
// the optimizer rewrites it losslessly (row multiset, schema and its metadata verbatim). Files
// arrow-go cannot read or write back cannot be converted; every file used unmodified as a topic's
// only chunk is refused naming the chunk: with `no column "timestamp_ns"` when arrow-go maps its
// schema, with arrow-go's error otherwise (arrowRefusal). At least minThirdPartyRoundTrips files
// must round-trip. All topics go through one run.
func TestThirdPartyParquet(t *testing.T) {
	dir := sharedDataDir(t, "parquet-testing")
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(files) == 0 {
		t.Fatalf("no Parquet files in %s", dir)
	}
	e := newEnv(t)

	type rawFile struct {
		locator, key string
		before       topicRecord
	}
	var (
		converted []thirdParty
		toCheck   []snapshot
		optimized []int64
		raws      []rawFile
		refused   = map[string]string{} // locator → how its failure must start
		causes    = map[string]string{} // locator → the cause its failure must give
	)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		tp := convertThirdParty(t, name, data)
		converted = append(converted, tp)
		switch tp.category {
		case "round trip":
			id, _ := e.putTopic(t, rawTopic{sequence: "thirdparty", locator: "thirdparty/" + name, chunks: tp.chunks})
			optimized = append(optimized, id)
			toCheck = append(toCheck, e.snapshot(t, id))
		case "no rows":
			id, _ := e.putTopic(t, rawTopic{sequence: "thirdparty", locator: "thirdparty/" + name, chunks: tp.chunks})
			refused["thirdparty/"+name] = "read-sort: topic has no rows"
			raws = append(raws, rawFile{locator: "thirdparty/" + name, before: e.recordTopic(t, id)})
		}
		loc := "raw/" + name
		id, _ := e.putTopic(t, rawTopic{sequence: "raw", locator: loc, chunks: []rawChunk{{data: data, rows: footerRows(data)}}})
		raw := rawFile{locator: loc, key: chunkKeys(t, e.cat, id)[0], before: e.recordTopic(t, id)}
		raws = append(raws, raw)
		refused[loc] = "read-sort: chunk " + raw.key + ": "
		// No column "timestamp_ns" when arrow-go maps the schema, else arrow-go's own error.
		if causes[loc] = arrowRefusal(data); causes[loc] == "" {
			t.Fatalf("%s has a timestamp_ns column: this test does not know why it must be refused", name)
		}
	}
	storeBefore := e.storeContent(t)

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	const maxChunk = 64 << 10
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, MaxConcurrentTopics: 8})
	failures := failuresByLocator(t, res)
	for _, s := range toCheck {
		if msg, failed := failures[s.locator]; failed {
			t.Errorf("topic %s failed: %s", s.locator, msg)
			continue
		}
		e.checkOptimized(t, s, maxChunk)
	}
	for _, r := range raws {
		msg, ok := failures[r.locator]
		if want := "topic " + r.locator + ": " + refused[r.locator]; !ok || !strings.HasPrefix(msg, want) {
			t.Errorf("topic %s: failure %q, want it to start with %q", r.locator, msg, want)
		}
		if c := causes[r.locator]; c != "" && !strings.Contains(msg, c) {
			t.Errorf("topic %s: failure %q does not give the cause %q", r.locator, msg, c)
		}
		e.checkUntouched(t, r.before)
	}
	// parquet-testing's files round-trip but for the 6 arrow-go v18.8.0 cannot read (LZ4 of the
	// Hadoop framing, a corrupt page, a MAP with optional keys, an unknown logical type) and the
	// one without rows: fewer round trips mean files this test no longer proves anything about.
	if len(optimized) < minThirdPartyRoundTrips {
		t.Errorf("%d of %d files round-tripped, want at least %d", len(optimized), len(files), minThirdPartyRoundTrips)
	}
	if res.Optimized != len(optimized) || res.Failed != len(raws) {
		t.Errorf("run result: %d optimized, %d failed; want %d optimized, %d failed",
			res.Optimized, res.Failed, len(optimized), len(raws))
	}
	e.checkStoreAfterRun(t, storeBefore, optimized)
	e.queueEmpty(t)

	// The table for the report: which file landed where, and how its chunks were written.
	var table strings.Builder
	for _, c := range converted {
		fmt.Fprintf(&table, "%-52s %-11s %s\n", c.file, c.category, c.note)
	}
	for _, r := range raws {
		if strings.HasPrefix(r.locator, "raw/") {
			fmt.Fprintf(&table, "unmodified %-41s refused: %.200s\n", strings.TrimPrefix(r.locator, "raw/"),
				strings.TrimPrefix(failures[r.locator], "topic "+r.locator+": read-sort: chunk "+r.key+": "))
		}
	}
	t.Logf("third-party files:\n%s", table.String())
}

// minThirdPartyRoundTrips is the number of parquet-testing files that round-trip through the
// optimizer (51 of 58 with arrow-go v18.8.0).
const minThirdPartyRoundTrips = 51

// footerRows returns the row count in the file's footer, or 0 when the footer is unreadable (or
// the reader panics on it).
func footerRows(data []byte) (n int64) {
	defer func() {
		if recover() != nil {
			n = 0
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return 0
	}
	defer pf.Close()
	return pf.NumRows()
}

// convertThirdParty reads the file with arrow-go and writes its rows plus timestamp_ns as two
// chunks (one for files of one row) with the original's writer properties where arrow-go can
// write them, else with arrow-go's defaults.
func convertThirdParty(t *testing.T, name string, data []byte) (tp thirdParty) {
	t.Helper()
	tp.file = name
	tbl, layout, err := readThirdParty(data)
	if err != nil {
		tp.category, tp.note = "unreadable", firstLine(err.Error())
		return tp
	}
	defer tbl.Release()
	if tbl.NumRows() == 0 {
		tp.category, tp.note = "no rows", "the file holds no rows"
	}
	schema := withTimestampField(tbl.Schema())
	props, note := layout.writerProperties(schema)
	chunks, err := writeThirdParty(tbl, schema, props)
	if err == nil && props != nil {
		if d := layoutDifference(layout, chunks[0].data); d != "" {
			t.Errorf("%s: the written chunk does not repeat the original's layout: %s", name, d)
		}
	}
	if err != nil {
		note = fmt.Sprintf("arrow-go defaults (the original's properties failed: %s)", firstLine(err.Error()))
		if chunks, err = writeThirdParty(tbl, schema, nil); err != nil {
			tp.category, tp.note = "unwritable", firstLine(err.Error())
			return tp
		}
	}
	if tp.category == "" {
		tp.category = "round trip"
	}

	if tp.note == "" {
		tp.note = note
	}
	tp.chunks = chunks
	return tp
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// fileLayout is how the original file's leaf columns were written (from its first row group).
type fileLayout struct {
	leaves []leafLayout
	pageV2 bool
}

type leafLayout struct {
	codec    compress.Compression
	dict     bool
	encoding parquet.Encoding // data encoding when not dictionary-encoded
}

// readThirdParty reads the whole file with arrow-go (page size limits raised as storeopt does)
// and the layout of its first row group. A panic of the reader is an error.
func readThirdParty(data []byte) (tbl arrow.Table, layout fileLayout, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reader panicked: %v", r)
		}
	}()
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.MaxCompressedPageSize, props.MaxUncompressedPageSize = 1<<30, 2<<30
	pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(props))
	if err != nil {
		return nil, layout, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, layout, err
	}
	tbl, err = fr.ReadTable(context.Background())
	if err != nil {
		return nil, layout, err
	}
	if pf.NumRowGroups() == 0 {
		return tbl, layout, nil
	}
	rg := pf.RowGroup(0)
	md := pf.MetaData().RowGroup(0)
	for i := range md.NumColumns() {
		cc, err := md.ColumnChunk(i)
		if err != nil {
			return tbl, layout, err
		}
		l := leafLayout{codec: cc.Compression(), dict: cc.HasDictionaryPage(), encoding: parquet.Encodings.Plain}
		for _, enc := range cc.Encodings() {
			switch enc {
			case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.BitPacked:
			case parquet.Encodings.RLE:
				if cc.Type() == parquet.Types.Boolean && !slices.Contains(cc.Encodings(), parquet.Encodings.Plain) {
					l.encoding = enc
				}
			default:
				l.encoding = enc
			}
		}
		layout.leaves = append(layout.leaves, l)
		if i == 0 {
			layout.pageV2 = firstDataPageIsV2(rg, i)
		}
	}
	return tbl, layout, nil
}

func firstDataPageIsV2(rg *file.RowGroupReader, col int) bool {
	pr, err := rg.GetColumnPageReader(col)
	if err != nil {
		return false
	}
	for pr.Next() {
		switch pr.Page().(type) {
		case *file.DataPageV2:
			return true
		case *file.DataPageV1:
			return false
		}
	}
	return false
}

// writerProperties returns writer properties that repeat the layout for schema (the original's
// leaves followed by timestamp_ns) and a description of them. Per-column settings are only given
// when the written file has exactly one more leaf than the original.
func (l fileLayout) writerProperties(schema *arrow.Schema) ([]parquet.WriterProperty, string) {
	props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}
	desc := []string{}
	if l.pageV2 {
		props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
		desc = append(desc, "data page v2")
	}
	pqSchema, err := pqarrow.ToParquet(schema, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil || pqSchema.NumColumns() != len(l.leaves)+1 {
		return nil, "arrow-go defaults (leaf layout differs from the original's)"
	}
	codecs, encodings, dicts := map[string]bool{}, map[string]bool{}, 0
	for i, leaf := range l.leaves {
		path := pqSchema.Column(i).ColumnPath().String()
		props = append(props, parquet.WithCompressionFor(path, leaf.codec))
		codecs[leaf.codec.String()] = true
		if leaf.dict {
			// Keep it even where the writer would find plain pages smaller (uncompressed columns).
			props = append(props, parquet.WithDictionaryFor(path, true), parquet.WithDictionaryCostFallbackFor(path, false))
			dicts++
		} else if leaf.encoding != parquet.Encodings.Plain {
			props = append(props, parquet.WithEncodingFor(path, leaf.encoding))
			encodings[leaf.encoding.String()] = true
		}
	}
	if len(l.leaves) > 0 {
		props = append(props, parquet.WithCompressionFor(pqSchema.Column(len(l.leaves)).ColumnPath().String(), l.leaves[0].codec))
	}
	desc = append(desc, "codec "+strings.Join(sortedKeys(codecs), "+"), fmt.Sprintf("dictionary on %d/%d leaves", dicts, len(l.leaves)))
	if len(encodings) > 0 {
		desc = append(desc, "encodings "+strings.Join(sortedKeys(encodings), "+"))
	}
	return props, strings.Join(desc, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withTimestampField appends a nullable Int64 timestamp_ns field to schema.
func withTimestampField(schema *arrow.Schema) *arrow.Schema {
	md := schema.Metadata()
	fields := append(schema.Fields(), arrow.Field{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"unit"}, []string{"ns"})})
	return arrow.NewSchema(fields, &md)
}

// thirdPartyTimestamp is the added timestamp of row i: unsorted, with ties and nulls.
func thirdPartyTimestamp(i int64) (int64, bool) {
	if i%11 == 7 {
		return 0, false
	}
	return (i * 7919 % 997) * 1_000_000, true
}

// writeThirdParty writes the table's rows plus timestamp_ns as two chunks (rows split in half;
// one chunk for a table of fewer than two rows) and reads each back with arrow-go.
func writeThirdParty(tbl arrow.Table, schema *arrow.Schema, props []parquet.WriterProperty) (chunks []rawChunk, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("writer panicked: %v", r)
		}
	}()
	n := tbl.NumRows()
	bounds := []int64{0, n}
	if n >= 2 {
		bounds = []int64{0, n / 2, n}
	}
	recs, err := tableWithTimestamps(tbl, schema)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for c := 0; c+1 < len(bounds); c++ {
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(props...),
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, err
		}
		acc, accErr := chunkstats.NewAccumulator(schema)
		var off int64
		for _, rec := range recs {
			lo, hi := max(bounds[c]-off, 0), min(bounds[c+1]-off, rec.NumRows())
			off += rec.NumRows()
			if lo >= hi {
				continue
			}
			part := rec.NewSlice(lo, hi)
			err := w.Write(part)
			if accErr == nil {
				acc.Add(part)
			}
			part.Release()
			if err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		back, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(buf.Bytes()), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			return nil, fmt.Errorf("arrow-go cannot read back what it wrote: %w", err)
		}
		back.Release()
		chunk := rawChunk{data: buf.Bytes(), rows: bounds[c+1] - bounds[c]}
		if accErr == nil {
			st := acc.Result()
			chunk.stats = &st
		}
		chunks = append(chunks, chunk)
	}
	return chunks, nil
}

// tableWithTimestamps returns the table's rows as record batches of schema (the table's columns
// plus timestamp_ns).
func tableWithTimestamps(tbl arrow.Table, schema *arrow.Schema) ([]arrow.RecordBatch, error) {
	tr := array.NewTableReader(tbl, 1<<16)
	defer tr.Release()
	var out []arrow.RecordBatch
	var row int64
	for tr.Next() {
		rec := tr.RecordBatch()
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for range rec.NumRows() {
			if v, ok := thirdPartyTimestamp(row); ok {
				b.Append(v)
			} else {
				b.AppendNull()
			}
			row++
		}
		ts := b.NewArray()
		b.Release()
		out = append(out, array.NewRecordBatch(schema, append(slices.Clone(rec.Columns()), ts), rec.NumRows()))
		ts.Release()
	}
	return out, tr.Err()
}

// layoutDifference compares the original's layout with the first row group of a written chunk
// (its leaves before timestamp_ns) and describes the first difference, or returns "".
func layoutDifference(want fileLayout, data []byte) string {
	_, got, err := readThirdParty(data)
	if err != nil {
		return err.Error()
	}
	if len(got.leaves) == 0 || len(want.leaves) == 0 {
		return ""
	}
	if len(got.leaves) != len(want.leaves)+1 {
		return fmt.Sprintf("%d leaves, want %d", len(got.leaves)-1, len(want.leaves))
	}
	if got.pageV2 != want.pageV2 {
		return fmt.Sprintf("data page v2 %t, want %t", got.pageV2, want.pageV2)
	}
	for i, w := range want.leaves {
		if g := got.leaves[i]; g != w {
			return fmt.Sprintf("leaf %d: codec %s dictionary %t encoding %s, want %s %t %s",
				i, g.codec, g.dict, g.encoding, w.codec, w.dict, w.encoding)
		}
	}
	return ""
}
