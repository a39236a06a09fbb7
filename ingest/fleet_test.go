package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
)

// A fleet writes every robot's topics at once, each topic its chunks on its own interval, in
// order, and finalizes them; the totals count what the catalog holds.
func TestIngestFleet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	bucket := openBucket(t)
	opts, err := ingest.Preset("test", 1)
	require.NoError(t, err)
	f := ingest.Fleet{Sequence: "fleet", Robots: 3, Topics: opts.Topics, Interval: 100 * time.Millisecond,
		Intervals: map[string]time.Duration{"sensors/gps": 250 * time.Millisecond}, Duration: time.Second, Seed: 5}
	began := time.Now()
	topics, st, err := ingest.IngestFleet(ctx, cat, bucket, f)
	require.NoError(t, err)
	require.Less(t, time.Since(began), 5*time.Second)
	require.Len(t, topics, 9)
	require.Equal(t, 9, st.Topics)
	chunks, bytes := 0, int64(0)
	for i, tp := range topics {
		want := 10
		if i%3 == 1 { // the GPS topic of each robot
			want = 4
		}
		require.Equal(t, want, tp.Chunks, tp.Locator)
		cs, err := cat.Chunks(ctx, tp.TopicID)
		require.NoError(t, err)
		require.Len(t, cs, want, tp.Locator)
		for j, c := range cs {
			require.Equal(t, j, c.Ordinal, tp.Locator)
			bytes += c.SizeBytes
		}
		chunks += want
		topic, err := cat.Topic(ctx, tp.TopicID)
		require.NoError(t, err)
		require.NotNil(t, topic.FinalizedAt, tp.Locator)
	}
	require.Equal(t, "fleet_r002/camera/front", topics[8].Locator)
	require.Equal(t, chunks, st.Chunks)
	require.Equal(t, bytes, st.Bytes)
	require.Greater(t, st.ChunksPerSecond(), 30.0)

	_, _, err = ingest.IngestFleet(ctx, cat, bucket, ingest.Fleet{Sequence: "x", Robots: 1, Topics: opts.Topics,
		Interval: time.Second, Duration: time.Second, Intervals: map[string]time.Duration{"lidar": time.Second}})
	require.ErrorContains(t, err, `"lidar"`)
}

// With the write signal on, writers wait as the catalog's storeopt_write_signal says: a topic
// past the delay threshold is delayed, and nothing compacts here, so one past the stop threshold
// writes no further chunk until it is canceled.
func TestIngestFleetObeysTheWriteSignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat := pgtest.NewCatalog(t)
	require.NoError(t, cat.SetWriteThresholds(ctx, catalog.WriteThresholds{DelayL0Chunks: 3, StopL0Chunks: 6, MaxDelay: 40 * time.Millisecond}))
	opts, err := ingest.Preset("test", 1)
	require.NoError(t, err)
	f := ingest.Fleet{Sequence: "slow", Robots: 1, Topics: opts.Topics[:1], Interval: 50 * time.Millisecond,
		Duration: time.Second, WriteSignal: true, NoFinalize: true}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	topics, st, err := ingest.IngestFleet(ctx, cat, openBucket(t), f)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the stopped writer waits until it is canceled")
	require.Equal(t, 6, topics[0].Chunks, "stopped at the stop threshold")
	require.Equal(t, 3, st.Delayed, "chunks 3, 4 and 5 delayed")
	require.Positive(t, st.SignalWait)
}
