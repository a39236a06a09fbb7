package topicread_test

import (
	"context"
	"testing"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/internal/testrows"
)

// ingested reads every ingested chunk of the topic (their objects stay in the store after
// compactions) and returns every row.
func ingested(t *testing.T, b *blob.Bucket, prefix string, chunks int) []testrows.Row {
	t.Helper()
	keys := make([]string, chunks)
	for o := range keys {
		keys[o] = ingest.ChunkKey(prefix, o)
	}
	rows, err := testrows.ReadAll(context.Background(), b, keys)
	if err != nil {
		t.Fatal(err)
	}
	return rows
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
		lo, hi := testrows.Span(rows)
		span := hi - lo
		for _, w := range [][2]int64{{lo, hi + 1}, {lo, lo + span/10}, {lo + span/3, lo + span/3 + span/20}, {hi - span/7, hi}, {hi + 1, hi + 100}} {
			st, err := testrows.CheckWindow(ctx, cat, b, tp.Locator, rows, w[0], w[1])
			if err != nil {
				t.Fatalf("%s: %v", step, err)
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
