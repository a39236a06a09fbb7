package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
)

// Locators and keys are data, never SQL: they are stored and found back verbatim.
func TestHostileStringsAreData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	hostile := []string{
		`it's`,
		`"double" quotes`,
		`100%`,
		`_`,
		`%`,
		`'; DROP TABLE topics; --`,
		`x'); DELETE FROM chunks; --`,
		`back\slash\`,
		`$1 $2`,
		"tab\tnew\nline",
		"ünïcødé 😀",
	}
	for i, h := range hostile {
		seq, err := c.CreateSequence(ctx, h)
		require.NoError(t, err)
		topicID, err := c.CreateTopic(ctx, seq, h+"/"+h, fmt.Sprintf("tp_%d", i), h)
		require.NoError(t, err)
		_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, ObjectKey: h + "/data/00000.parquet",
			ColumnStats: map[string]catalog.ColumnStats{h: {Min: h, Max: h}}})
		require.NoError(t, err)
		require.NoError(t, c.FinalizeTopic(ctx, topicID))
		_, err = c.AcquireLease(ctx, topicID, h, h, h)
		require.NoError(t, err)
	}
	topics, err := c.ListTopics(ctx)
	require.NoError(t, err)
	require.Len(t, topics, len(hostile), "every table still there, nothing deleted")
	for i, h := range hostile {
		topic, err := c.TopicByLocator(ctx, h+"/"+h)
		require.NoError(t, err, "locator %q", h)
		require.Equal(t, topics[i], topic, "%q matches only itself (no LIKE, no injection)", h)
		require.Equal(t, h, topic.SerializationFormat)
		chunks, err := c.Chunks(ctx, topic.ID)
		require.NoError(t, err)
		require.Len(t, chunks, 1)
		require.Equal(t, h+"/data/00000.parquet", chunks[0].ObjectKey)
		require.Equal(t, map[string]catalog.ColumnStats{h: {Min: h, Max: h}}, chunks[0].ColumnStats)
		lease, err := c.LeaseOf(ctx, topic.ID)
		require.NoError(t, err)
		require.Equal(t, h, lease.FencingToken)
	}
	_, err = c.TopicByLocator(ctx, "it%") // LIKE would match "it's/it's"
	require.ErrorIs(t, err, catalog.ErrNotFound, "% is not a wildcard")
}

// PostgreSQL text refuses invalid UTF-8 and NUL bytes: such strings get a clear ErrInvalid (or
// ErrNotFound for look-ups), never a panic or a driver error.
func TestUnstorableStrings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCatalog(t)
	seq, err := c.CreateSequence(ctx, "run_1")
	require.NoError(t, err)
	topicID, err := c.CreateTopic(ctx, seq, "run_1/imu", "tp_A", "parquet")
	require.NoError(t, err)

	for _, bad := range []string{"run_\xff\xfe", "a\x00b", "\xc3("} {
		_, err := c.CreateSequence(ctx, bad)
		require.ErrorIs(t, err, catalog.ErrInvalid)
		require.ErrorContains(t, err, "sequence locator")
		require.ErrorContains(t, err, fmt.Sprintf("%q", bad), "the value is shown escaped")

		_, err = c.CreateTopic(ctx, seq, "run_1/"+bad, "tp_B", "parquet")
		require.ErrorIs(t, err, catalog.ErrInvalid)
		_, err = c.CreateTopic(ctx, seq, "run_1/ok", bad, "parquet")
		require.ErrorIs(t, err, catalog.ErrInvalid)
		_, err = c.TopicByLocator(ctx, bad)
		require.ErrorIs(t, err, catalog.ErrNotFound)
		_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, ObjectKey: bad})
		require.ErrorIs(t, err, catalog.ErrInvalid)
		require.ErrorContains(t, err, "object key")
		_, err = c.AddChunk(ctx, catalog.Chunk{TopicID: topicID, ObjectKey: "k",
			ColumnStats: map[string]catalog.ColumnStats{bad: {}}})
		require.ErrorIs(t, err, catalog.ErrInvalid)
		require.ErrorContains(t, err, "column name")
	}
	topics, err := c.ListTopics(ctx)
	require.NoError(t, err)
	require.Len(t, topics, 1)
	chunks, err := c.Chunks(ctx, topicID)
	require.NoError(t, err)
	require.Empty(t, chunks)
}
