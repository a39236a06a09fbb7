package catalog_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
)

func TestSequencesAndTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)

	seq, err := c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	again, err := c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	require.Equal(t, seq, again, "CreateSequence is idempotent by locator")
	other, err := c.CreateSequence(ctx, "run_2")
	require.NoError(t, err)
	require.NotEqual(t, seq, other)

	imu, err := c.CreateTopic(ctx, seq, "run_1/sensors/imu", "tp_A", "parquet")
	require.NoError(t, err)
	gps, err := c.CreateTopic(ctx, seq, "run_1/sensors/gps", "tp_B", "parquet")
	require.NoError(t, err)
	again, err = c.CreateTopic(ctx, seq, "run_1/sensors/imu", "tp_A", "parquet")
	require.NoError(t, err)
	require.Equal(t, imu, again, "same topic again returns its id")

	_, err = c.CreateTopic(ctx, seq, "run_1/sensors/imu", "tp_OTHER", "parquet")
	require.ErrorIs(t, err, catalog.ErrAlreadyExists)
	_, err = c.CreateTopic(ctx, 999999, "run_9/x", "tp_C", "parquet")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = c.CreateTopic(ctx, seq, "", "tp_C", "parquet")
	require.ErrorIs(t, err, catalog.ErrInvalid)

	topic, err := c.Topic(ctx, imu)
	require.NoError(t, err)
	require.Equal(t, imu, topic.ID)
	require.Equal(t, seq, topic.SequenceID)
	require.Equal(t, "run_1/sensors/imu", topic.Locator)
	require.Equal(t, "tp_A", topic.DataPrefix)
	require.Equal(t, "parquet", topic.SerializationFormat)
	require.Nil(t, topic.FinalizedAt)
	require.Nil(t, topic.OptimizedAt)
	require.Nil(t, topic.MinTimestampNs)
	require.Zero(t, topic.ChunkSetVersion)
	require.False(t, topic.CreatedAt.IsZero())

	byLocator, err := c.TopicByLocator(ctx, "run_1/sensors/gps")
	require.NoError(t, err)
	require.Equal(t, gps, byLocator.ID)

	_, err = c.Topic(ctx, 999999)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.EqualError(t, err, "topic 999999: catalog: not found", "names the topic, says catalog once")
	_, err = c.TopicByLocator(ctx, "run_1/none")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.EqualError(t, err, `topic "run_1/none": catalog: not found`, "names the topic, says catalog once")

	topics, err := c.ListTopics(ctx)
	require.NoError(t, err)
	require.Len(t, topics, 2)
	require.Equal(t, []int64{imu, gps}, []int64{topics[0].ID, topics[1].ID})
}

func TestChunksAndFinalize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	seq, err := c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	topicID, err := c.CreateTopic(ctx, seq, "run_1/imu", "tp_A", "parquet")
	require.NoError(t, err)

	// Appended in ingestion order; read back in catalog order.
	second := catalog.Chunk{
		TopicID: topicID, Ordinal: 1, ObjectKey: "tp_A/data/00001.parquet",
		SizeBytes: 123, RowCount: 4, ArrowSizeBytes: 456, TimestampNullCount: 4, // all null
		ColumnStats: map[string]catalog.ColumnStats{
			"timestamp_ns": {NullCount: 4},
			"big":          {Min: int64(math.MinInt64), Max: int64(math.MaxInt64)},
			"ratio":        {Min: -1.5, Max: 2.25},
			"nan":          {Min: math.NaN(), Max: math.Inf(1)}, // not storable: unknown
			"nul":          {Min: "a\x00b", Max: "z"},           // JSONB refuses \u0000: unknown
			"label":        {Min: `it's "quoted" %`, Max: "ünïcødé"},
		},
	}
	first := catalog.Chunk{
		TopicID: topicID, Ordinal: 0, ObjectKey: "tp_A/data/00000.parquet",
		SizeBytes: 10, RowCount: 2, ArrowSizeBytes: 20,
		MinTimestampNs: ptr(int64(-5)), MaxTimestampNs: ptr(int64(1_700_000_000_000_000_000)),
	}
	id0, err := c.AddChunk(ctx, first)
	require.NoError(t, err)
	id1, err := c.AddChunk(ctx, second)
	require.NoError(t, err)

	_, err = c.AddChunk(ctx, first)
	require.ErrorIs(t, err, catalog.ErrAlreadyExists, "ordinal taken")
	_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, Ordinal: 0, ObjectKey: "tp_A/data/x.parquet"})
	require.ErrorIs(t, err, catalog.ErrAlreadyExists, "ingestion order is append-only: an ordinal before the last chunk's is refused")
	_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: 999999, ObjectKey: "x"})
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, Ordinal: 5, ObjectKey: "x", SizeBytes: -1})
	require.ErrorIs(t, err, catalog.ErrInvalid)
	_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, Ordinal: -1, ObjectKey: "x"})
	require.ErrorIs(t, err, catalog.ErrInvalid)

	topic, err := c.Topic(ctx, topicID)
	require.NoError(t, err)
	require.Equal(t, int64(0), topic.ChunkSetVersion, "appends do not touch the topic row (they never wait for a commit)")

	chunks, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	first.ID, second.ID = id0, id1
	second.ColumnStats["nan"] = catalog.ColumnStats{}
	second.ColumnStats["nul"] = catalog.ColumnStats{Max: "z"}
	require.Equal(t, []catalog.Chunk{first, second}, chunks)

	require.NoError(t, c.FinalizeTopic(ctx, topicID))
	topic, err = c.Topic(ctx, topicID)
	require.NoError(t, err)
	require.NotNil(t, topic.FinalizedAt)
	require.Equal(t, ptr(int64(-5)), topic.MinTimestampNs)
	require.Equal(t, ptr(int64(1_700_000_000_000_000_000)), topic.MaxTimestampNs)

	_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, Ordinal: 2, ObjectKey: "tp_A/data/00002.parquet"})
	require.ErrorIs(t, err, catalog.ErrTopicFinalized)
	require.ErrorIs(t, c.FinalizeTopic(ctx, 999999), catalog.ErrNotFound)

	// A topic without timestamps finalizes with NULL bounds.
	empty, err := c.CreateTopic(ctx, seq, "run_1/empty", "tp_E", "parquet")
	require.NoError(t, err)
	require.NoError(t, c.FinalizeTopic(ctx, empty))
	topic, err = c.Topic(ctx, empty)
	require.NoError(t, err)
	require.NotNil(t, topic.FinalizedAt)
	require.Nil(t, topic.MinTimestampNs)
	require.Nil(t, topic.MaxTimestampNs)
}
