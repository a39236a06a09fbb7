-- storeopt catalog, version 6: compaction debt, measured by the catalog itself, and the signal an
-- ingestion service polls to slow down before reads suffer (docs/operations.md#compaction-debt).
-- Never edit this file; add a new version instead.
--
-- * chunks.ingested_at: when the chunk row was added (an ingested chunk: when ingestion recorded
--   it; a compaction output: its commit). Rows that existed before this version get the time of
--   the migration.
-- * topic_ingest_totals: chunks and object bytes ingestion appended to each topic, ever (the
--   denominator of write amplification). A row of its own per topic, so that an append still
--   never touches the topic row (docs/levels.md#live-topics). Topics that existed before this
--   version start from the bytes of their current chunks.
-- * compaction_debt_settings: one row: the write signal's thresholds (set by the worker at start)
--   and the L0 chunk count of the latest run's trigger (set by EnqueueTopics).
-- * topic_compaction_debt: per topic, its L0 chunks and bytes, its uncompacted L0 chunks (as
--   ingestion wrote them, not yet joined by any compaction) and when the oldest was ingested, and
--   the write signal's state for it.
-- * storeopt_write_signal(locator): the one row of topic_compaction_debt an ingestion service
--   polls before it writes to a topic: state 'ok', 'delay' (wait delay_ms before the next chunk)
--   or 'stop' (write nothing until the state changes).
-- * optimization_queue.debt_l0_chunks: the topic's L0 chunks when a run queued it; a run under
--   auto lists its queue by it, most first, so that a backlog shrinks from its worst end.

-- +goose Up
ALTER TABLE chunks ADD COLUMN ingested_at TIMESTAMPTZ NOT NULL DEFAULT now();

CREATE TABLE topic_ingest_totals (
    topic_id BIGINT PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
    chunks   BIGINT NOT NULL DEFAULT 0 CHECK (chunks >= 0),
    bytes    BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0)
);
INSERT INTO topic_ingest_totals (topic_id, chunks, bytes)
SELECT topic_id, count(*), sum(size_bytes) FROM chunks GROUP BY topic_id;

ALTER TABLE optimization_queue ADD COLUMN debt_l0_chunks INTEGER NOT NULL DEFAULT 0;

CREATE TABLE compaction_debt_settings (
    singleton          BOOLEAN     PRIMARY KEY DEFAULT true CHECK (singleton),
    delay_l0_chunks    INTEGER     NOT NULL CHECK (delay_l0_chunks >= 1),
    stop_l0_chunks     INTEGER     NOT NULL,
    max_delay_ms       INTEGER     NOT NULL CHECK (max_delay_ms >= 0),
    trigger_min_chunks INTEGER     NOT NULL CHECK (trigger_min_chunks >= 1),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (stop_l0_chunks > delay_l0_chunks)
);
INSERT INTO compaction_debt_settings (delay_l0_chunks, stop_l0_chunks, max_delay_ms, trigger_min_chunks)
VALUES (64, 256, 1000, 2);

CREATE VIEW topic_compaction_debt AS
SELECT t.id AS topic_id, t.locator, t.finalized_at IS NOT NULL AS finalized,
       d.l0_chunks, d.l0_bytes, d.uncompacted_chunks, d.oldest_uncompacted_at,
       CASE WHEN d.l0_chunks >= s.stop_l0_chunks THEN 'stop'
            WHEN d.l0_chunks >= s.delay_l0_chunks THEN 'delay'
            ELSE 'ok' END AS write_state,
       -- ClickHouse's parts_to_delay_insert: the delay grows linearly from the delay threshold
       -- to the stop threshold, where it is max_delay_ms.
       CASE WHEN d.l0_chunks >= s.stop_l0_chunks THEN s.max_delay_ms
            WHEN d.l0_chunks >= s.delay_l0_chunks THEN
                (s.max_delay_ms::bigint * (d.l0_chunks - s.delay_l0_chunks + 1)
                 / (s.stop_l0_chunks - s.delay_l0_chunks + 1))::int
            ELSE 0 END AS delay_ms
FROM topics t
CROSS JOIN compaction_debt_settings s
CROSS JOIN LATERAL (
    SELECT count(*)::int AS l0_chunks, coalesce(sum(c.size_bytes), 0)::bigint AS l0_bytes,
           count(*) FILTER (WHERE coalesce(c.blocks -> 0 ->> 'source', '') = '')::int AS uncompacted_chunks,
           min(c.ingested_at) FILTER (WHERE coalesce(c.blocks -> 0 ->> 'source', '') = '') AS oldest_uncompacted_at
    FROM chunks c WHERE c.topic_id = t.id AND c.level = 0) d;

-- +goose StatementBegin
CREATE FUNCTION storeopt_write_signal(topic_locator TEXT)
RETURNS TABLE (topic_id BIGINT, l0_chunks INTEGER, write_state TEXT, delay_ms INTEGER)
LANGUAGE sql STABLE AS $$
    SELECT d.topic_id, d.l0_chunks, d.write_state, d.delay_ms
    FROM topic_compaction_debt d WHERE d.locator = topic_locator
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION storeopt_write_signal(TEXT);
DROP VIEW topic_compaction_debt;
DROP TABLE compaction_debt_settings;
ALTER TABLE optimization_queue DROP COLUMN debt_l0_chunks;
DROP TABLE topic_ingest_totals;
ALTER TABLE chunks DROP COLUMN ingested_at;
