package e2e

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/internal/testrows"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/topicread"
)

// TestLiveTopicUnderAutoSchedule: a live topic receives a chunk every 50 ms for a minute while a
// Temporal Schedule runs the auto policy every 3 s (leveled compactions of the live topic). Readers
// sample the whole topic through topicread.Window all along and always see exactly the rows of
// the chunks ingested so far, each once, in order. After finalization a last pass leaves one
// sorted L1 run with the rows, in order, of one full rewrite of the same input.
func TestLiveTopicUnderAutoSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of live ingestion")
	}
	e := newEnv(t)
	ctx := context.Background()
	const (
		interval = 50 * time.Millisecond
		chunks   = 1200    // a minute
		maxChunk = 1 << 20 // the run's last chunk is merged while below half of it and the new bytes
	)
	spec := ingest.TopicSpec{Path: "sensors/imu", Kind: ingest.IMU, Chunks: chunks, RowsPerChunk: 20, Overlap: 0.1,
		UnsortedFraction: 0.05, EqualTimestamps: true, NullTimestamps: 30}
	live := ingest.Options{Sequence: "live", Seed: 7, Topics: []ingest.TopicSpec{spec}, ChunkInterval: interval}
	whole := ingest.Options{Sequence: "whole", Seed: 7, Topics: []ingest.TopicSpec{spec}}
	var recorded atomic.Int64
	live.Progress = func(_ string, done, _ int) { recorded.Store(int64(done)) }

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	pass := app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: string(policy.Auto), MinChunks: 2, Scope: []string{"sequence:live"}}
	if err := app.EnsureSchedule(ctx, e.srv.Client, e.cfg, pass, 3*time.Second, ""); err != nil {
		t.Fatal(err)
	}

	var (
		wg       sync.WaitGroup
		ingestOK = make(chan []ingest.IngestedTopic, 1)
		ingErr   error
	)
	wg.Go(func() {
		topics, err := ingest.Ingest(ctx, e.cat, e.b, live)
		ingErr = err
		ingestOK <- topics
	})
	// Wait for the topic, then sample it until ingestion ends.
	var prefix string
	deadline := time.Now().Add(30 * time.Second)
	for prefix == "" {
		if tp, err := e.cat.TopicByLocator(ctx, "live/sensors/imu"); err == nil {
			prefix = tp.DataPrefix
		} else if time.Now().After(deadline) {
			t.Fatalf("live topic never appeared: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rows [][]testrows.Row // rows of every ingested chunk read so far, by ordinal
	samples := 0
	var topics []ingest.IngestedTopic
	for done := false; !done; {
		select {
		case topics = <-ingestOK:
			done = true
		case <-time.After(700 * time.Millisecond):
		}
		if ingErr != nil {
			t.Fatal(ingErr)
		}
		before := int(recorded.Load())
		var got []string
		st, err := topicread.Window(ctx, e.cat, e.b, "live/sensors/imu", math.MinInt64, math.MaxInt64, nil, func(rec arrow.RecordBatch) error {
			for i := range int(rec.NumRows()) {
				got = append(got, testrows.Text(rec, i))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("sample %d: %v", samples, err)
		}
		after := int(recorded.Load())
		for len(rows) < after {
			chunk, err := testrows.Read(ctx, e.b, ingest.ChunkKey(prefix, len(rows)), len(rows))
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, chunk)
		}
		// The read saw the catalog at one moment between before and after: exactly the chunks
		// 0..k-1 for one k in [before, after].
		matched := -1
		for k := before; k <= after && matched < 0; k++ {
			if want := testrows.Window(slices.Concat(rows[:k]...), math.MinInt64, math.MaxInt64); slices.Equal(got, want) {
				matched = k
			}
		}
		if matched < 0 {
			want := testrows.Window(slices.Concat(rows[:before]...), math.MinInt64, math.MaxInt64)
			t.Fatalf("sample %d: %d rows read, not the rows of the first %d..%d chunks in order (%d rows at %d chunks, first difference at %d)",
				samples, len(got), before, after, len(want), before, testrows.FirstDifference(got, want))
		}
		samples++
		if samples%10 == 0 {
			t.Logf("sample %d: %d chunks, %d rows in order; %d chunks %d blocks %d bytes fetched", samples, matched, len(got), st.Chunks, st.Blocks, st.BytesFetched)
		}
	}
	wg.Wait()
	if err := e.srv.Client.ScheduleClient().GetHandle(ctx, app.ScheduleID).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	// The last pass after finalization (a scheduled run may still be going: wait for it by
	// running until the topic is one sorted run).
	id := topics[0].TopicID
	for attempt := 0; ; attempt++ {
		e.runPass(t, pass)
		lv, err := e.cat.Levels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lv[id].L0Chunks == 0 {
			break
		}
		if attempt > 5 {
			t.Fatalf("after finalization the topic still has %d L0 chunks", lv[id].L0Chunks)
		}
		time.Sleep(time.Second)
	}
	opts, err := e.cat.Optimizations(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var tiered, leveled int
	for _, o := range opts {
		switch o.Policy {
		case policy.Tiered:
			tiered++
		case policy.Leveled:
			leveled++
		}
	}
	t.Logf("%d samples; compactions: %d tiered, %d leveled", samples, tiered, leveled)
	if tiered != 0 || leveled < 5 || samples < 20 {
		t.Fatalf("compactions %d tiered, %d leveled, %d samples: want leveled compactions (auto) and many samples", tiered, leveled, samples)
	}

	// One full rewrite of the same input, for comparison.
	if _, err := ingest.Ingest(ctx, e.cat, e.b, whole); err != nil {
		t.Fatal(err)
	}
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Scope: []string{"sequence:whole"}})
	if res.Optimized != 1 {
		t.Fatalf("full rewrite %+v", res)
	}
	wholeTopic, err := e.cat.TopicByLocator(ctx, "whole/sensors/imu")
	if err != nil {
		t.Fatal(err)
	}
	a := readTopic(t, e.b, chunkKeys(t, e.cat, id))
	b := readTopic(t, e.b, chunkKeys(t, e.cat, wholeTopic.ID))
	checkOrder(t, a)
	if !slices.Equal(a.ordered, b.ordered) || len(a.ordered) != chunks*20 {
		t.Fatalf("live topic after its last pass: %d rows, one full rewrite %d (first difference at %d)",
			len(a.ordered), len(b.ordered), testrows.FirstDifference(a.ordered, b.ordered))
	}
	for _, l := range e.levels(t, id) {
		if l != "L1" {
			t.Fatalf("live topic after its last pass: %v, want one sorted L1 run", e.levels(t, id))
		}
	}
}
