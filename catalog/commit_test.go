package catalog_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/policy"
)

func TestSavePlanAndStageChunkNeedTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 2)
	l := f.lease(t, "run-A")
	p := f.planAndStage(t, l, 2)
	before := f.state(t, "run-A")

	foreign := p
	foreign.FencingToken = "run-ZOMBIE"
	require.ErrorIs(t, f.c.SavePlan(ctx, foreign), catalog.ErrLeaseLost)
	staged := before.Staged[0]
	staged.Digest = []byte{9, 9}
	require.ErrorIs(t, f.c.StageChunk(ctx, "run-ZOMBIE", staged), catalog.ErrLeaseLost)
	require.Equal(t, before, f.state(t, "run-A"))
	_, err := f.c.LoadPlan(ctx, f.topicID, "run-ZOMBIE")
	require.ErrorIs(t, err, catalog.ErrNotFound)

	// After a takeover the old run is the zombie.
	f.takeOver(t, "run-A", "run-B")
	require.ErrorIs(t, f.c.SavePlan(ctx, p), catalog.ErrLeaseLost)
	require.ErrorIs(t, f.c.StageChunk(ctx, "run-A", staged), catalog.ErrLeaseLost)
	_, err = f.c.LoadPlan(ctx, f.topicID, "run-A")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func TestSavePlanAndStageChunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 3)
	l := f.lease(t, "run-A")

	// Staging needs a plan.
	s := catalog.StagedChunk{Chunk: testChunk(f.topicID, 0, l.FreshPrefix+"/data/00000.parquet"), Digest: []byte{1}}
	require.ErrorIs(t, f.c.StageChunk(ctx, "run-A", s), catalog.ErrNotFound)

	p := f.planAndStage(t, l, 2)
	loaded, err := f.c.LoadPlan(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Equal(t, p, loaded)
	require.Equal(t, f.chunkIDs, loaded.InputChunkIDs)

	// A retried StageChunk replaces the row at its ordinal.
	staged, err := f.c.StagedChunks(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Len(t, staged, 2)
	require.Equal(t, []int{0, 1}, []int{staged[0].Ordinal, staged[1].Ordinal})
	retried := staged[1]
	retried.RowCount, retried.Digest = 99, []byte{7, 7, 7}
	require.NoError(t, f.c.StageChunk(ctx, "run-A", retried))
	staged, err = f.c.StagedChunks(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Equal(t, retried, staged[1])

	// Saving the same plan again keeps the staged chunks; a changed body drops them.
	require.NoError(t, f.c.SavePlan(ctx, p))
	staged, err = f.c.StagedChunks(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Len(t, staged, 2)
	changed := p
	changed.Body = []byte(`{"outputs":1}`)
	require.NoError(t, f.c.SavePlan(ctx, changed))
	staged, err = f.c.StagedChunks(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Empty(t, staged)
	loaded, err = f.c.LoadPlan(ctx, f.topicID, "run-A")
	require.NoError(t, err)
	require.Equal(t, changed, loaded)

	// The plan must write where the lease says.
	elsewhere := changed
	elsewhere.FreshPrefix = "tp_SOMEWHERE_ELSE"
	require.ErrorIs(t, f.c.SavePlan(ctx, elsewhere), catalog.ErrInvalid)
	empty := changed
	empty.Body = nil
	require.ErrorIs(t, f.c.SavePlan(ctx, empty), catalog.ErrInvalid)
	s.Digest = nil
	require.ErrorIs(t, f.c.StageChunk(ctx, "run-A", s), catalog.ErrInvalid)
}

func TestCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 3)
	l := f.lease(t, "run-A")
	p := f.planAndStage(t, l, 2)
	before := f.state(t, "run-A")

	var seenPlan catalog.PlanRecord
	var seenStaged []catalog.StagedChunk
	res, err := f.c.Commit(ctx, f.topicID, "run-A", func(plan catalog.PlanRecord, staged []catalog.StagedChunk) error {
		seenPlan, seenStaged = plan, staged
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, catalog.CommitResult{
		OldPrefix: "tp_OLD_run_1/sensors/imu", NewPrefix: "tp_NEW_run-A", InputChunks: 3, OutputChunks: 2, Policy: policy.Full,
	}, res)
	p.Inputs = before.Chunks // verify sees the chunk rows the commit replaces: all of them
	require.Equal(t, p, seenPlan)
	require.Equal(t, before.Staged, seenStaged)

	after := f.state(t, "run-A")
	require.Equal(t, "tp_NEW_run-A", after.Topic.DataPrefix)
	require.NotNil(t, after.Topic.OptimizedAt)
	require.Equal(t, before.Topic.ChunkSetVersion+1, after.Topic.ChunkSetVersion)
	require.Equal(t, ptr(int64(7)), after.Topic.MinTimestampNs, "bounds come from the new chunks")
	require.Equal(t, ptr(int64(150)), after.Topic.MaxTimestampNs)
	require.Equal(t, before.Topic.FinalizedAt, after.Topic.FinalizedAt)

	require.Len(t, after.Chunks, 2)
	for i, ch := range after.Chunks {
		require.NotContains(t, f.chunkIDs, ch.ID, "new chunk rows")
		want := before.Staged[i].Chunk
		want.ID = ch.ID
		want.Level = policy.L1 // a full compaction writes the topic's sorted run
		require.Equal(t, want, ch)
	}
	require.Zero(t, after.QueueLength)
	require.Contains(t, after.LeaseErr, "not queued")
	require.Contains(t, after.PlanErr, "no plan")
	require.Empty(t, after.Staged)
	require.Len(t, after.Optimizations, 1)
	o := after.Optimizations[0]
	require.False(t, o.CommittedAt.IsZero())
	require.NotNil(t, o.Seconds)
	require.GreaterOrEqual(t, *o.Seconds, 0.0)
	inputBytes, arrowBytes, outputBytes, rows := int64(1000+1001+1002), int64(3*2000), int64(1000+1001), int64(2*10)
	require.Equal(t, catalog.Optimization{
		TopicID: f.topicID, FencingToken: "run-A", LeaseOwner: l.Owner, OldPrefix: "tp_OLD_run_1/sensors/imu",
		NewPrefix: "tp_NEW_run-A", InputChunks: 3, OutputChunks: 2, CommittedAt: o.CommittedAt, Policy: policy.Full,
		InputBytes: &inputBytes, InputArrowBytes: &arrowBytes, OutputBytes: &outputBytes, Rows: &rows, Seconds: o.Seconds,
	}, o)
	costs, err := f.c.RecentCosts(ctx, policy.Full, 10)
	require.NoError(t, err)
	require.Equal(t, []catalog.OptimizationCost{{InputBytes: inputBytes, InputArrowBytes: arrowBytes,
		OutputBytes: outputBytes, Rows: rows, Seconds: *o.Seconds}}, costs)
	costs, err = f.c.RecentCosts(ctx, policy.Tiered, 10)
	require.NoError(t, err)
	require.Empty(t, costs)

	// A retried commit succeeds without doing anything, and does not call verify.
	again, err := f.c.Commit(ctx, f.topicID, "run-A", func(catalog.PlanRecord, []catalog.StagedChunk) error {
		return errors.New("verify must not run again")
	})
	require.NoError(t, err)
	res.AlreadyCommitted = true
	require.Equal(t, res, again)
	require.Equal(t, after, f.state(t, "run-A"))
}

func TestCommitConcurrentRetries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	l := f.lease(t, "run-A")
	f.planAndStage(t, l, 2)

	const n = 4
	results := make([]catalog.CommitResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = f.c.Commit(context.Background(), f.topicID, "run-A", acceptAll) })
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		require.NoError(t, errs[i])
		if !results[i].AlreadyCommitted {
			fresh++
		}
		require.Equal(t, "tp_NEW_run-A", results[i].NewPrefix)
	}
	require.Equal(t, 1, fresh, "exactly one call committed")
	st := f.state(t, "run-A")
	require.Len(t, st.Optimizations, 1)
	require.Len(t, st.Chunks, 2)
}

func TestCommitRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		meddle func(t *testing.T, f fixture) // after SavePlan and staging, before Commit
		verify func(catalog.PlanRecord, []catalog.StagedChunk) error
		check  func(t *testing.T, err error)
		run    string // state to compare afterwards: the run whose plan must be untouched
	}{{
		name:   "lease taken over",
		meddle: func(t *testing.T, f fixture) { f.takeOver(t, "run-A", "run-B") },
		check:  func(t *testing.T, err error) { require.ErrorIs(t, err, catalog.ErrLeaseLost) },
		run:    "run-B",
	}, {
		name: "lease released",
		meddle: func(t *testing.T, f fixture) {
			released, _, err := f.c.ReleaseLease(context.Background(), f.topicID, "run-A")
			require.NoError(t, err)
			require.True(t, released)
		},
		check: func(t *testing.T, err error) { require.ErrorIs(t, err, catalog.ErrLeaseLost) },
		run:   "run-A",
	}, {
		name: "chunk row added behind the catalog's back",
		meddle: func(t *testing.T, f fixture) {
			// AddChunk refuses finalized topics, so an out-of-band writer is simulated in SQL
			// (no version bump: the chunk ID comparison must catch it).
			_, err := f.c.Pool.Exec(context.Background(), `INSERT INTO chunks
				(topic_id, ordinal, object_key, size_bytes, row_count, arrow_size_bytes)
				VALUES ($1, 99, 'tp_OLD/data/00099.parquet', 1, 1, 1)`, f.topicID)
			require.NoError(t, err)
		},
		check: func(t *testing.T, err error) { require.ErrorIs(t, err, catalog.ErrChunkSetChanged) },
		run:   "run-A",
	}, {
		name: "chunk set version bumped",
		meddle: func(t *testing.T, f fixture) {
			_, err := f.c.Pool.Exec(context.Background(),
				`UPDATE topics SET chunk_set_version = chunk_set_version + 1 WHERE id = $1`, f.topicID)
			require.NoError(t, err)
		},
		check: func(t *testing.T, err error) { require.ErrorIs(t, err, catalog.ErrChunkSetChanged) },
		run:   "run-A",
	}, {
		name:   "verify fails",
		verify: func(catalog.PlanRecord, []catalog.StagedChunk) error { return &verifyError{chunk: 1} },
		check: func(t *testing.T, err error) {
			var ve *verifyError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, 1, ve.chunk)
			require.ErrorContains(t, err, "verify")
		},
		run: "run-A",
	}, {
		name: "no plan saved",
		meddle: func(t *testing.T, f fixture) {
			_, err := f.c.Pool.Exec(context.Background(), `DELETE FROM plans WHERE topic_id = $1`, f.topicID)
			require.NoError(t, err)
		},
		check: func(t *testing.T, err error) { require.ErrorIs(t, err, catalog.ErrNotFound) },
		run:   "run-A",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 3)
			f.planAndStage(t, f.lease(t, "run-A"), 2)
			if tc.meddle != nil {
				tc.meddle(t, f)
			}
			verify := tc.verify
			if verify == nil {
				verify = acceptAll
			}
			before := f.state(t, tc.run)
			res, err := f.c.Commit(context.Background(), f.topicID, "run-A", verify)
			require.Error(t, err)
			require.ErrorContains(t, err, "run-A")
			tc.check(t, err)
			require.Zero(t, res)
			require.Equal(t, before, f.state(t, tc.run), "a refused commit changes nothing")
			require.Empty(t, before.Optimizations)
		})
	}
	t.Run("nil verify", func(t *testing.T) {
		t.Parallel()
		_, err := (&catalog.Catalog{}).Commit(context.Background(), 1, "run-A", nil)
		require.ErrorIs(t, err, catalog.ErrInvalid)
	})
}
