package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/storeopt/storeopt/policy"
)

// querier is what a pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// topicColumns are the topics columns in the field order of Topic.
const topicColumns = "t.id, t.sequence_id, t.locator, t.data_prefix, t.serialization_format, t.created_at, " +
	"t.finalized_at, t.optimized_at, t.min_timestamp_ns, t.max_timestamp_ns, t.chunk_set_version"

// CreateSequence records the sequence with this locator and returns its id. It is idempotent:
// if the locator exists its id is returned. Errors: ErrInvalid for an empty or non-UTF-8 locator.
func (c *Catalog) CreateSequence(ctx context.Context, locator string) (int64, error) {
	if err := checkNonEmptyText("sequence locator", locator); err != nil {
		return 0, err
	}
	var id int64
	// The no-op update makes RETURNING yield the existing row on conflict.
	err := c.Pool.QueryRow(ctx, `
		INSERT INTO sequences (locator) VALUES ($1)
		ON CONFLICT (locator) DO UPDATE SET locator = EXCLUDED.locator
		RETURNING id`, locator).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("catalog: create sequence %q: %w", locator, err)
	}
	return id, nil
}

// CreateTopic records a topic of the sequence and returns its id. dataPrefix is the topic's
// prefix in the store ("tp_<ULID>"), serializationFormat e.g. "parquet". Calling it again with
// the same arguments returns the existing id. Errors: ErrNotFound if the sequence does not exist,
// ErrAlreadyExists if the locator belongs to a topic with other attributes, ErrInvalid for empty
// or non-UTF-8 strings.
func (c *Catalog) CreateTopic(ctx context.Context, sequenceID int64, locator, dataPrefix, serializationFormat string) (int64, error) {
	for _, f := range []struct{ name, value string }{
		{"topic locator", locator}, {"data prefix", dataPrefix}, {"serialization format", serializationFormat},
	} {
		if err := checkNonEmptyText(f.name, f.value); err != nil {
			return 0, err
		}
	}
	var id int64
	err := c.Pool.QueryRow(ctx, `
		INSERT INTO topics (sequence_id, locator, data_prefix, serialization_format)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (locator) DO NOTHING
		RETURNING id`, sequenceID, locator, dataPrefix, serializationFormat).Scan(&id)
	switch {
	case err == nil:
		return id, nil
	case pgErrorCode(err) == sqlstateForeignKeyViolation:
		return 0, fmt.Errorf("catalog: create topic %q: sequence %d: %w", locator, sequenceID, ErrNotFound)
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("catalog: create topic %q: %w", locator, err)
	}
	existing, err := c.TopicByLocator(ctx, locator)
	if err != nil {
		return 0, fmt.Errorf("catalog: create topic %q: %w", locator, err)
	}
	if existing.SequenceID != sequenceID || existing.DataPrefix != dataPrefix || existing.SerializationFormat != serializationFormat {
		return 0, fmt.Errorf("catalog: create topic %q: exists as topic %d (sequence %d, prefix %q, format %q): %w",
			locator, existing.ID, existing.SequenceID, existing.DataPrefix, existing.SerializationFormat, ErrAlreadyExists)
	}
	return existing.ID, nil
}

// AddChunk appends one L0 chunk to a topic still being ingested (ch.TopicID, ch.Ordinal and the
// other fields; ch.ID and ch.Level are ignored) and returns the chunk's id. ch.Ordinal is the
// chunk's place in ingestion order: it must come after every L0 chunk of the topic (ingesters
// number their chunks 0, 1, 2…; compactions never renumber L0 ordinals), and object keys must
// never be reused.
//
// Appending never waits for a compaction of the topic: it takes only a key-share lock on the
// topic row, which a commit's lock (FOR NO KEY UPDATE) does not conflict with, and it does not
// change the topic row. Errors: ErrNotFound if the topic does not exist, ErrTopicFinalized if it is
// finalized, ErrAlreadyExists if the ordinal is taken or not after the last L0 chunk, ErrInvalid
// for bad fields.
func (c *Catalog) AddChunk(ctx context.Context, ch Chunk) (int64, error) {
	what := fmt.Sprintf("topic %d: chunk %d (%q)", ch.TopicID, ch.Ordinal, ch.ObjectKey)
	ch.Level = policy.L0
	args, err := chunkArgs(what, ch)
	if err != nil {
		return 0, err
	}
	var id int64
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		var finalized bool
		var last *int
		err := tx.QueryRow(ctx, `SELECT finalized_at IS NOT NULL,
				(SELECT max(ordinal) FROM chunks WHERE topic_id = t.id AND level = 0)
			FROM topics t WHERE t.id = $1 FOR KEY SHARE`, ch.TopicID).Scan(&finalized, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("catalog: add %s: topic: %w", what, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("catalog: add %s: %w", what, err)
		}
		if finalized {
			return fmt.Errorf("catalog: add %s: %w", what, ErrTopicFinalized)
		}
		if last != nil && ch.Ordinal <= *last {
			return fmt.Errorf("catalog: add %s: ordinal taken or not after the last chunk's (%d): %w", what, *last, ErrAlreadyExists)
		}
		err = tx.QueryRow(ctx, `INSERT INTO chunks (`+chunkFields+`) VALUES (`+chunkFieldParams+`) RETURNING id`,
			args...).Scan(&id)
		if pgErrorCode(err) == sqlstateUniqueViolation {
			return fmt.Errorf("catalog: add %s: ordinal taken: %w", what, ErrAlreadyExists)
		}
		if err != nil {
			return fmt.Errorf("catalog: add %s: %w", what, err)
		}
		// What ingestion wrote, ever: the denominator of write amplification (DebtTotals).
		if _, err := tx.Exec(ctx, `INSERT INTO topic_ingest_totals (topic_id, chunks, bytes) VALUES ($1, 1, $2)
			ON CONFLICT (topic_id) DO UPDATE SET chunks = topic_ingest_totals.chunks + 1,
				bytes = topic_ingest_totals.bytes + EXCLUDED.bytes`, ch.TopicID, ch.SizeBytes); err != nil {
			return fmt.Errorf("catalog: add %s: ingest totals: %w", what, err)
		}
		return nil
	})
	return id, err
}

// FinalizeTopic marks the topic's ingestion complete (finalized_at = now) and sets its
// min/max timestamp_ns from its chunks (NULL when no chunk has a timestamp). Finalizing again
// keeps the first finalized_at. Errors: ErrNotFound if the topic does not exist.
func (c *Catalog) FinalizeTopic(ctx context.Context, topicID int64) error {
	// The explicit FOR UPDATE lock conflicts with AddChunk's key-share lock, so no chunk is
	// appended after (or while) the topic is finalized.
	tag, err := c.Pool.Exec(ctx, `
		WITH locked AS (SELECT id FROM topics WHERE id = $1 FOR UPDATE)
		UPDATE topics t SET
			finalized_at = COALESCE(t.finalized_at, now()),
			min_timestamp_ns = b.min_ts,
			max_timestamp_ns = b.max_ts
		FROM (SELECT min(min_timestamp_ns) AS min_ts, max(max_timestamp_ns) AS max_ts
		      FROM chunks WHERE topic_id = $1) b
		WHERE t.id = (SELECT id FROM locked)`, topicID)
	if err != nil {
		return fmt.Errorf("catalog: finalize topic %d: %w", topicID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("catalog: finalize topic %d: %w", topicID, ErrNotFound)
	}
	return nil
}

// Topic returns the topic with this id. Errors: ErrNotFound.
func (c *Catalog) Topic(ctx context.Context, topicID int64) (Topic, error) {
	return c.oneTopic(ctx, fmt.Sprintf("topic %d", topicID), `SELECT `+topicColumns+` FROM topics t WHERE t.id = $1`, topicID)
}

// TopicByLocator returns the topic with this locator. Errors: ErrNotFound (also for a locator
// that is not valid UTF-8, which no topic can have).
func (c *Catalog) TopicByLocator(ctx context.Context, locator string) (Topic, error) {
	what := fmt.Sprintf("topic %q", locator)
	if err := checkText("topic locator", locator); err != nil {
		return Topic{}, fmt.Errorf("%s: %w", what, ErrNotFound) // ErrNotFound says "catalog: "
	}
	return c.oneTopic(ctx, what, `SELECT `+topicColumns+` FROM topics t WHERE t.locator = $1`, locator)
}

func (c *Catalog) oneTopic(ctx context.Context, what, query string, arg any) (Topic, error) {
	rows, _ := c.Pool.Query(ctx, query, arg)
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Topic])
	if errors.Is(err, pgx.ErrNoRows) {
		return Topic{}, fmt.Errorf("%s: %w", what, ErrNotFound) // ErrNotFound says "catalog: "
	}
	if err != nil {
		return Topic{}, fmt.Errorf("catalog: %s: %w", what, err)
	}
	return t, nil
}

// ListTopics returns every topic, ordered by id.
func (c *Catalog) ListTopics(ctx context.Context) ([]Topic, error) {
	rows, _ := c.Pool.Query(ctx, `SELECT `+topicColumns+` FROM topics t ORDER BY t.id`)
	topics, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Topic])
	if err != nil {
		return nil, fmt.Errorf("catalog: list topics: %w", err)
	}
	return topics, nil
}

// Chunks returns the chunks of a topic in catalog order: L1 in run order, then L0 in ingestion
// order (empty for an unknown topic).
func (c *Catalog) Chunks(ctx context.Context, topicID int64) ([]Chunk, error) {
	return chunksOf(ctx, c.Pool, topicID)
}

func chunksOf(ctx context.Context, q querier, topicID int64) ([]Chunk, error) {
	rows, _ := q.Query(ctx, `SELECT id, `+chunkFields+` FROM chunks WHERE topic_id = $1 ORDER BY level DESC, ordinal`, topicID)
	chunks, err := pgx.CollectRows(rows, scanChunk)
	if err != nil {
		return nil, fmt.Errorf("catalog: chunks of topic %d: %w", topicID, err)
	}
	return chunks, nil
}

// ColumnStats returns the column statistics of the given chunks of a topic, by chunk ID (a chunk
// that is not the topic's, or no longer exists, is absent; one without statistics maps to nil).
func (c *Catalog) ColumnStats(ctx context.Context, topicID int64, chunkIDs []int64) (map[int64]map[string]ColumnStats, error) {
	rows, _ := c.Pool.Query(ctx, `SELECT id, column_stats FROM chunks WHERE topic_id = $1 AND id = ANY($2)`, topicID, chunkIDs)
	out := map[int64]map[string]ColumnStats{}
	var id int64
	var raw []byte
	_, err := pgx.ForEachRow(rows, []any{&id, &raw}, func() error {
		st, err := decodeColumnStats(raw)
		out[id] = st
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: column stats of %d chunks of topic %d: %w", len(chunkIDs), topicID, err)
	}
	return out, nil
}

// TopicPrefixes returns the data prefixes the topic's chunks may live under: its data prefix and
// the fresh prefix of every committed optimization of the topic, without duplicates. Keys of the
// topic's chunks outside these prefixes are refused by the optimizer.
func (c *Catalog) TopicPrefixes(ctx context.Context, topicID int64) ([]string, error) {
	rows, _ := c.Pool.Query(ctx, `
		SELECT data_prefix FROM topics WHERE id = $1
		UNION SELECT new_prefix FROM optimizations WHERE topic_id = $1`, topicID)
	prefixes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("catalog: data prefixes of topic %d: %w", topicID, err)
	}
	return prefixes, nil
}
