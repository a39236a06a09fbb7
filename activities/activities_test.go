package activities_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/mempool"
)

// These tests call the activities directly (activities.WithRun stands for the workflow run) on a
// real PostgreSQL catalog and a file store; the workflows are tested elsewhere.

func setup(t testing.TB, pool int64, topics []ingest.TopicSpec) (*activities.Activities, []ingest.IngestedTopic) {
	t.Helper()
	cat := pgtest.NewCatalog(t)
	b, storeURL := testenv.NewBucket(t)
	ingested, err := ingest.Ingest(context.Background(), cat, b, ingest.Options{Sequence: "acts", Seed: 7, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	return &activities.Activities{Catalog: cat, Bucket: b, StoreURL: storeURL, MemoryPool: mempool.New(pool)}, ingested
}

// optimize runs Lease, ReadSort and every WriteChunks group (all at once) for one topic under the
// given run token, and returns the object bytes of each output chunk by ordinal.
func optimize(t *testing.T, a *activities.Activities, topicID int64, token string, maxChunk int64, groupSize int) [][]byte {
	t.Helper()
	out, err := optimizeTopic(a, topicID, token, maxChunk, groupSize)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// optimizeTopic is optimize returning its first error instead of failing a test, for goroutines
// (t.Fatal must be called from the test's own goroutine).
func optimizeTopic(a *activities.Activities, topicID int64, token string, maxChunk int64, groupSize int) ([][]byte, error) {
	ctx := activities.WithRun(context.Background(), "test-owner", token)
	if _, err := a.Lease(ctx, activities.LeaseInput{TopicID: topicID}); err != nil {
		return nil, err
	}
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: topicID, MaxChunkSizeBytes: maxChunk, GroupTargetChunks: groupSize})
	if err != nil {
		return nil, err
	}
	var g errgroup.Group
	for group := range rs.Groups {
		g.Go(func() error {
			_, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: topicID, Group: group})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	staged, err := a.Catalog.StagedChunks(ctx, topicID, token)
	if err != nil {
		return nil, err
	}
	if len(staged) != rs.OutputChunks {
		return nil, fmt.Errorf("topic %d: %d chunks staged, %d planned", topicID, len(staged), rs.OutputChunks)
	}
	out := make([][]byte, len(staged))
	for i, s := range staged {
		if out[i], err = a.Bucket.ReadAll(ctx, s.ObjectKey); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestSeveralWritersGiveTheSameBytesAsOne writes one topic's plan once with one WriteChunks
// activity per output chunk, all running at once, and once with a single activity for all of
// them: every output chunk is byte-identical (docs/design.md#deterministic-output).
func TestSeveralWritersGiveTheSameBytesAsOne(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 30, RowsPerChunk: 300,
		Overlap: 0.2, UnsortedFraction: 0.2, EqualTimestamps: true, NullTimestamps: 4}})
	id := ts[0].TopicID
	ctx := activities.WithRun(context.Background(), "test-owner", "run-1")
	many := optimize(t, a, id, "run-1", 64<<10, 1)
	if _, err := a.Release(ctx, activities.ReleaseInput{TopicID: id, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	one := optimize(t, a, id, "run-2", 64<<10, 1000)
	if len(many) != len(one) || len(one) < 3 {
		t.Fatalf("%d chunks with many writers, %d with one; want the same, at least 3", len(many), len(one))
	}
	for i := range one {
		if string(one[i]) != string(many[i]) {
			t.Fatalf("output chunk %d differs between one writer and many (%d vs %d bytes)", i, len(one[i]), len(many[i]))
		}
	}
	ctx2 := activities.WithRun(context.Background(), "test-owner", "run-2")
	if _, err := a.Commit(ctx2, activities.CommitInput{TopicID: id}); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryPoolIsNeverExceeded optimizes three topics at once, every output group in its own
// goroutine, first with an unlimited pool and then with a pool far smaller than what that run
// used: the pool's accounting allocator (which sees every Arrow buffer) never holds more than the
// pool, and every topic commits verified output both times.
func TestMemoryPoolIsNeverExceeded(t *testing.T) {
	const pool = 8 << 20
	unlimited := optimizeConcurrently(t, 0)
	if unlimited <= pool {
		t.Fatalf("without a pool the run used only %d bytes at most: the test needs more than %d", unlimited, pool)
	}
	if hw := optimizeConcurrently(t, pool); hw == 0 || hw > pool {
		t.Fatalf("allocator high-water %d bytes, pool %d bytes", hw, pool)
	}
}

// optimizeConcurrently optimizes three topics at once with the given pool and returns the
// allocator's high-water mark.
func optimizeConcurrently(t *testing.T, pool int64) int64 {
	t.Helper()
	a, ts := setup(t, pool, []ingest.TopicSpec{
		{Path: "imu", Kind: ingest.IMU, Chunks: 60, RowsPerChunk: 2000, Overlap: 0.1, UnsortedFraction: 0.1, NullTimestamps: 3},
		{Path: "camera", Kind: ingest.Camera, Chunks: 30, RowsPerChunk: 10, PayloadBytes: 60_000, Overlap: 0.1},
		{Path: "gps", Kind: ingest.GPS, Chunks: 40, RowsPerChunk: 500, Overlap: 0.3, UnsortedFraction: 0.3},
	})
	var g errgroup.Group
	for i, it := range ts {
		g.Go(func() error {
			token := fmt.Sprintf("run-%d", i)
			if _, err := optimizeTopic(a, it.TopicID, token, 2<<20, 1); err != nil {
				return err
			}
			_, err := a.Commit(activities.WithRun(context.Background(), "test-owner", token), activities.CommitInput{TopicID: it.TopicID})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	hw := a.MemoryPool.Allocator().HighWater()
	t.Logf("pool %d bytes: allocator high-water %d bytes", pool, hw)
	if n := a.MemoryPool.Allocator().InUse(); n != 0 {
		t.Errorf("%d bytes of Arrow memory not freed", n)
	}
	for _, it := range ts {
		tp, err := a.Catalog.Topic(context.Background(), it.TopicID)
		if err != nil || tp.OptimizedAt == nil {
			t.Fatalf("topic %s not optimized (err %v)", it.Locator, err)
		}
	}
	return hw
}

// TestLeaseSkipsTopicQuarantinedSinceListed: a run's Lease (SkipIfOptimized) on a topic that
// another run's failures quarantined takes no lease and reports the quarantine; a direct lease
// (an operator's one-topic run) still takes it.
func TestLeaseSkipsTopicQuarantinedSinceListed(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 2, RowsPerChunk: 10}})
	ctx := context.Background()
	id := ts[0].TopicID
	if err := a.Catalog.Enqueue(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"r1", "r2", "r3"} {
		if _, err := a.Catalog.RecordFailure(ctx, id, run, activities.ErrTypeInput, "chunk x: not a Parquet file", 3); err != nil {
			t.Fatal(err)
		}
	}
	runCtx := activities.WithRun(ctx, "storeopt-topic:acts/imu", "run-4")
	l, err := a.Lease(runCtx, activities.LeaseInput{TopicID: id, SkipIfOptimized: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Quarantined == nil || l.Quarantined.Failures != 3 || !strings.Contains(l.Quarantined.Reason, "not a Parquet file") || l.FreshPrefix != "" {
		t.Fatalf("lease of a quarantined topic: %+v, want Quarantined with the reason and no lease", l)
	}
	if _, err := a.Catalog.LeaseOf(ctx, id); err == nil {
		t.Fatal("a lease was taken on a quarantined topic")
	}
	if l, err = a.Lease(runCtx, activities.LeaseInput{TopicID: id}); err != nil || l.Quarantined != nil || l.FreshPrefix == "" {
		t.Fatalf("direct lease: %+v, %v; want a lease", l, err)
	}
}

// TestQuarantineReportKeepsToScope: a scoped run's EnqueueTopics and dry run (PlanTopics)
// report only the quarantined topics inside the scope; an unscoped run reports them all.
func TestQuarantineReportKeepsToScope(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{
		{Path: "imu", Kind: ingest.IMU, Chunks: 2, RowsPerChunk: 10},
		{Path: "gps", Kind: ingest.GPS, Chunks: 2, RowsPerChunk: 10},
	})
	ctx := context.Background()
	for _, run := range []string{"r1", "r2", "r3"} {
		if _, err := a.Catalog.RecordFailure(ctx, ts[0].TopicID, run, activities.ErrTypeInput, "chunk x: not a Parquet file", 3); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		scope []string
		want  int
	}{{nil, 1}, {[]string{"topic:" + ts[1].Locator}, 0}, {[]string{"topic:" + ts[0].Locator}, 1}, {[]string{"sequence:other"}, 0}} {
		res, err := a.EnqueueTopics(ctx, activities.EnqueueTopicsInput{Scope: tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		if res.Quarantined != tc.want || len(res.QuarantinedTopics) != tc.want {
			t.Errorf("EnqueueTopics scope %v: quarantined %d %+v, want %d", tc.scope, res.Quarantined, res.QuarantinedTopics, tc.want)
		}
		plans, err := a.PlanTopics(ctx, activities.PlanTopicsInput{Scope: tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		if plans.Quarantined != tc.want || len(plans.QuarantinedTopics) != tc.want {
			t.Errorf("PlanTopics scope %v: quarantined %d %+v, want %d", tc.scope, plans.Quarantined, plans.QuarantinedTopics, tc.want)
		}
	}
}

// passThroughLimit is the output size limit at which each of chunks, recorded with a page index,
// of about one size, is an output of its own that passes through: the largest chunk.
func passThroughLimit(chunks []catalog.Chunk) int64 {
	var largest int64
	for _, c := range chunks {
		largest = max(largest, c.SizeBytes)
	}
	return largest
}
