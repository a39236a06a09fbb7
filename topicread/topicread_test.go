package topicread_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/topicread"
)

// row is one row of the topic as the brute-force reader sees it.
type row struct {
	ts      int64
	null    bool
	ordinal int   // ingestion order of its chunk
	index   int64 // stored row index in that chunk
	text    string
}

// ingested reads every ingested chunk of the topic (their objects stay in the store after
// compactions) and returns every row.
func ingested(t *testing.T, b *blob.Bucket, prefix string, chunks int) []row {
	t.Helper()
	var out []row
	for o := range chunks {
		data, err := b.ReadAll(context.Background(), ingest.ChunkKey(prefix, o))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 0)
		var idx int64
		for tr.Next() {
			rec := tr.RecordBatch()
			for i := range int(rec.NumRows()) {
				r := row{ordinal: o, index: idx, text: render(rec, i)}
				ts := rec.Column(rec.Schema().FieldIndices("timestamp_ns")[0]).(*array.Int64)
				r.null = ts.IsNull(i)
				if !r.null {
					r.ts = ts.Value(i)
				}
				out = append(out, r)
				idx++
			}
		}
		tr.Release()
		tbl.Release()
	}
	return out
}

func render(rec arrow.RecordBatch, i int) string {
	parts := make([]string, rec.NumCols())
	for c, col := range rec.Columns() {
		parts[c] = col.ValueStr(i)
	}
	return strings.Join(parts, "|")
}

// window is what a reader must see: the rows with from <= ts < to in global order (timestamp,
// then ingestion order, then stored row).
func window(rows []row, from, to int64) []string {
	var in []row
	for _, r := range rows {
		if !r.null && r.ts >= from && r.ts < to {
			in = append(in, r)
		}
	}
	slices.SortFunc(in, func(a, b row) int {
		if a.ts != b.ts {
			return compare(a.ts, b.ts)
		}
		if a.ordinal != b.ordinal {
			return a.ordinal - b.ordinal
		}
		return compare(a.index, b.index)
	})
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = r.text
	}
	return out
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compact runs one compaction of policy through the activities (no Temporal: WithRun stands for
// the workflow run) and reports whether it did anything.
func compact(t *testing.T, a *activities.Activities, topicID int64, token, policy string, maxChunk int64) bool {
	t.Helper()
	ctx := activities.WithRun(context.Background(), "owner", token)
	lease, err := a.Lease(ctx, activities.LeaseInput{TopicID: topicID, Policy: policy, MaxChunkSizeBytes: maxChunk})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: topicID, MaxChunkSizeBytes: maxChunk, Policy: lease.Policy})
	if err != nil {
		t.Fatal(err)
	}
	if rs.NothingToDo {
		if _, err := a.Release(ctx, activities.ReleaseInput{TopicID: topicID, Reason: "nothing to do"}); err != nil {
			t.Fatal(err)
		}
		return false
	}
	for g := range rs.Groups {
		if _, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: topicID, Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Commit(ctx, activities.CommitInput{TopicID: topicID}); err != nil {
		t.Fatal(err)
	}
	return true
}

func TestWindowsAreTheRowsOfOneFullRewrite(t *testing.T) {
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	b, _ := testenv.NewBucket(t)
	opts, err := ingest.Preset("test", 1)
	if err != nil {
		t.Fatal(err)
	}
	opts.Sequence, opts.NoFinalize = "win", true
	opts.Topics = opts.Topics[:1] // IMU: overlapping and unsorted chunks, equal and null timestamps
	opts.Topics[0].Chunks = 12
	topics, err := ingest.Ingest(ctx, cat, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	tp := topics[0]
	a := &activities.Activities{Catalog: cat, Bucket: b}
	const maxChunk = 64 << 10

	check := func(step string, chunks int) {
		t.Helper()
		rows := ingested(t, b, tp.Prefix, chunks)
		var lo, hi int64 = 1 << 62, -1 << 62
		for _, r := range rows {
			if !r.null {
				lo, hi = min(lo, r.ts), max(hi, r.ts)
			}
		}
		span := hi - lo
		for _, w := range [][2]int64{{lo, hi + 1}, {lo, lo + span/10}, {lo + span/3, lo + span/3 + span/20}, {hi - span/7, hi}, {hi + 1, hi + 100}} {
			var got []string
			st, err := topicread.Window(ctx, cat, b, tp.Locator, w[0], w[1], nil, func(rec arrow.RecordBatch) error {
				for i := range int(rec.NumRows()) {
					got = append(got, render(rec, i))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: window %v: %v", step, w, err)
			}
			want := window(rows, w[0], w[1])
			if !slices.Equal(got, want) {
				t.Fatalf("%s: window [%d, %d): %d rows, want %d (first difference at %d)", step, w[0], w[1], len(got), len(want), firstDiff(got, want))
			}
			if st.Rows != int64(len(want)) {
				t.Fatalf("%s: stats say %d rows, %d read", step, st.Rows, len(want))
			}
			t.Logf("%s: window [%d, %d): %d rows, %d chunks, %d blocks, %d bytes fetched", step, w[0], w[1], st.Rows, st.Chunks, st.Blocks, st.BytesFetched)
		}
	}
	check("ingested", 12)
	if !compact(t, a, tp.TopicID, "run-tiered", "tiered", maxChunk) {
		t.Fatal("tiered had nothing to do")
	}
	check("tiered", 12)
	if !compact(t, a, tp.TopicID, "run-leveled", "leveled", maxChunk) {
		t.Fatal("leveled had nothing to do")
	}
	check("leveled", 12)
	if err := ingest.Append(ctx, cat, b, opts, topics, 12, 6); err != nil {
		t.Fatal(err)
	}
	check("leveled and appended", 18)
	if !compact(t, a, tp.TopicID, "run-tiered-2", "tiered", maxChunk) {
		t.Fatal("second tiered had nothing to do")
	}
	check("L1 run and tiered L0", 18)
	if err := cat.FinalizeTopic(ctx, tp.TopicID); err != nil {
		t.Fatal(err)
	}
	if !compact(t, a, tp.TopicID, "run-full", "full", maxChunk) {
		t.Fatal("full had nothing to do")
	}
	check("full", 18)
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
