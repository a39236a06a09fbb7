package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/policy"
)

func ptr[T any](v T) *T { return &v }

// fixture is a catalog with one finalized topic of n chunks (chunk i: timestamps i*100 .. i*100+50).
type fixture struct {
	c        *catalog.Catalog
	topicID  int64
	chunkIDs []int64
}

func newFixture(t *testing.T, n int) fixture {
	t.Helper()
	c := pgtest.NewCatalog(t)
	return fixture{c: c, topicID: 0}.withTopic(t, "run_1/sensors/imu", n)
}

// withTopic adds a finalized topic of n chunks under sequence run_1 and makes it the fixture's.
func (f fixture) withTopic(t *testing.T, locator string, n int) fixture {
	t.Helper()
	ctx := context.Background()
	seq, err := f.c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	topicID, err := f.c.CreateTopic(ctx, seq, locator, "tp_OLD_"+locator, "parquet")
	require.NoError(t, err)
	f.topicID, f.chunkIDs = topicID, nil
	for i := range n {
		id, err := f.c.AddChunk(ctx, testChunk(topicID, i, fmt.Sprintf("tp_OLD_%s/data/%05d.parquet", locator, i)))
		require.NoError(t, err)
		f.chunkIDs = append(f.chunkIDs, id)
	}
	require.NoError(t, f.c.FinalizeTopic(ctx, topicID))
	return f
}

func testChunk(topicID int64, ordinal int, key string) catalog.Chunk {
	minTS, maxTS := int64(ordinal)*100, int64(ordinal)*100+50
	return catalog.Chunk{
		TopicID: topicID, Ordinal: ordinal, ObjectKey: key,
		SizeBytes: 1000 + int64(ordinal), RowCount: 10, ArrowSizeBytes: 2000, TimestampNullCount: 1,
		MinTimestampNs: &minTS, MaxTimestampNs: &maxTS,
		ColumnStats: map[string]catalog.ColumnStats{
			"timestamp_ns": {Min: minTS, Max: maxTS, NullCount: 1},
			"label":        {Min: "a", Max: "z"},
		},
	}
}

// lease takes the fixture topic's lease for run token with fresh prefix "tp_NEW_<token>".
func (f fixture) lease(t *testing.T, token string) catalog.Lease {
	t.Helper()
	l, err := f.c.AcquireLease(context.Background(), f.topicID, "optimize/"+fmt.Sprint(f.topicID), token, "tp_NEW_"+token)
	require.NoError(t, err)
	return l
}

// takeOver takes the fixture topic's lease over from run holder (a run that is gone) for run token
// with fresh prefix "tp_NEW_<token>".
func (f fixture) takeOver(t *testing.T, holder, token string) catalog.Lease {
	t.Helper()
	l, err := f.c.TakeOverLease(context.Background(), f.topicID, holder, "optimize/"+fmt.Sprint(f.topicID), token,
		"tp_NEW_"+token, policy.Full)
	require.NoError(t, err)
	return l
}

// planAndStage saves a plan over the topic's current chunks and stages `outputs` chunks for it.
func (f fixture) planAndStage(t *testing.T, l catalog.Lease, outputs int) catalog.PlanRecord {
	t.Helper()
	ctx := context.Background()
	topic, err := f.c.Topic(ctx, f.topicID)
	require.NoError(t, err)
	chunks, err := f.c.Chunks(ctx, f.topicID)
	require.NoError(t, err)
	p := catalog.PlanRecord{
		TopicID: f.topicID, FencingToken: l.FencingToken, FreshPrefix: l.FreshPrefix,
		ChunkSetVersion: topic.ChunkSetVersion, InputChunkIDs: chunkIDs(chunks),
		Body: []byte(fmt.Sprintf(`{"outputs":%d}`, outputs)),
	}
	require.NoError(t, f.c.SavePlan(ctx, p))
	for i := range outputs {
		s := catalog.StagedChunk{
			Chunk:  testChunk(f.topicID, i, fmt.Sprintf("%s/data/%05d.parquet", l.FreshPrefix, i)),
			Digest: []byte{byte(i), 0xAB},
		}
		*s.MinTimestampNs += 7 // distinguishable from the inputs
		require.NoError(t, f.c.StageChunk(ctx, l.FencingToken, s))
	}
	return p
}

func chunkIDs(chunks []catalog.Chunk) []int64 {
	ids := []int64{}
	for _, ch := range chunks {
		ids = append(ids, ch.ID)
	}
	return ids
}

// state is everything the catalog knows about one topic and one run, to check "nothing changed".
type state struct {
	Topic         catalog.Topic
	Chunks        []catalog.Chunk
	Lease         catalog.Lease
	LeaseErr      string
	Plan          catalog.PlanRecord
	PlanErr       string
	Staged        []catalog.StagedChunk
	Optimizations []catalog.Optimization
	QueueLength   int
}

func (f fixture) state(t *testing.T, token string) state {
	t.Helper()
	ctx := context.Background()
	var s state
	var err error
	s.Topic, err = f.c.Topic(ctx, f.topicID)
	require.NoError(t, err)
	s.Chunks, err = f.c.Chunks(ctx, f.topicID)
	require.NoError(t, err)
	s.Lease, err = f.c.LeaseOf(ctx, f.topicID)
	s.LeaseErr = errString(err)
	s.Plan, err = f.c.LoadPlan(ctx, f.topicID, token)
	s.PlanErr = errString(err)
	s.Staged, err = f.c.StagedChunks(ctx, f.topicID, token)
	require.NoError(t, err)
	s.Optimizations, err = f.c.Optimizations(ctx, f.topicID)
	require.NoError(t, err)
	s.QueueLength, err = f.c.QueueLength(ctx)
	require.NoError(t, err)
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// acceptAll is a verify function that accepts any staged output.
func acceptAll(catalog.PlanRecord, []catalog.StagedChunk) error { return nil }

// verifyError is a typed verification failure, to check that Commit keeps it reachable.
type verifyError struct{ chunk int }

func (e *verifyError) Error() string { return fmt.Sprintf("chunk %d: row count mismatch", e.chunk) }
