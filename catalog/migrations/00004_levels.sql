-- storeopt catalog, version 4: levels, policies and block ranges (OceanBase minor compaction,
-- Qbeast rollup). Never edit this file; add a new version instead.
--
-- * chunks.level: 0 = L0 (as ingestion or a tiered compaction wrote it), 1 = L1 (the topic's
--   sorted run, written by a leveled or full compaction). Existing chunks of optimized topics
--   are L1, all others L0.
-- * chunks.ordinal is the chunk's place in catalog order, which is "L1 run first, in run order,
--   then L0 in ingestion order" (ORDER BY level DESC, ordinal). L0 ordinals are ingestion order
--   and are never renumbered (a tiered output takes its first input's ordinal); L1 ordinals are
--   the run's positions, renumbered by the commit that changes the run. The unique constraint is
--   deferrable so one statement can shift a part of the run.
-- * chunks.blocks: the block index, one entry per row group (min/max timestamp_ns, rows, byte
--   offset and length, source chunk of a rollup block); NULL when unknown (read the footer).
-- * chunks.key_prefix: the top-level prefix of object_key, so cleanup can ask whether any chunk
--   still lives under a prefix (a topic's chunks may now live under several prefixes).

-- +goose Up
ALTER TABLE chunks ADD COLUMN level SMALLINT NOT NULL DEFAULT 0 CHECK (level IN (0, 1));
UPDATE chunks c SET level = 1 FROM topics t WHERE t.id = c.topic_id AND t.optimized_at IS NOT NULL;
ALTER TABLE chunks DROP CONSTRAINT chunks_topic_ordinal_key;
ALTER TABLE chunks ADD CONSTRAINT chunks_topic_level_ordinal_key UNIQUE (topic_id, level, ordinal)
    DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE chunks ADD COLUMN blocks JSONB;
ALTER TABLE chunks ADD COLUMN key_prefix TEXT GENERATED ALWAYS AS (split_part(object_key, '/', 1)) STORED;
CREATE INDEX chunks_key_prefix_idx ON chunks (key_prefix);
-- the trigger predicates count a topic's L0 chunks
CREATE INDEX chunks_topic_l0_idx ON chunks (topic_id, ordinal) WHERE level = 0;

-- A staged output chunk carries the ordinal it takes in the topic (target_ordinal; NULL = its
-- output ordinal, as for full compactions) and its block index. Its level column is not used:
-- the commit inserts the outputs at the level of the plan's policy.
ALTER TABLE staged_chunks ADD COLUMN level SMALLINT NOT NULL DEFAULT 1 CHECK (level IN (0, 1));
ALTER TABLE staged_chunks ADD COLUMN target_ordinal INTEGER CHECK (target_ordinal >= 0);
ALTER TABLE staged_chunks ADD COLUMN blocks JSONB;

-- The policy a topic was queued with (a run lists only the topics queued with its policy), and
-- the policy each committed optimization applied.
ALTER TABLE optimization_queue ADD COLUMN policy TEXT NOT NULL DEFAULT 'full';
ALTER TABLE optimizations ADD COLUMN policy TEXT NOT NULL DEFAULT 'full';

-- Objects of chunks a commit replaced. Their prefix may still be referenced (a live topic's
-- ingestion prefix keeps receiving chunks), so cleanup deletes them one by one once they are
-- older than the retention period and no chunk row names them.
CREATE TABLE replaced_objects (
    object_key  TEXT        PRIMARY KEY,
    topic_id    BIGINT      NOT NULL,
    replaced_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX replaced_objects_replaced_at_idx ON replaced_objects (replaced_at);

-- +goose Down
DROP TABLE replaced_objects;
ALTER TABLE optimizations DROP COLUMN policy;
ALTER TABLE optimization_queue DROP COLUMN policy;
ALTER TABLE staged_chunks DROP COLUMN blocks;
ALTER TABLE staged_chunks DROP COLUMN target_ordinal;
ALTER TABLE staged_chunks DROP COLUMN level;
DROP INDEX chunks_topic_l0_idx;
DROP INDEX chunks_key_prefix_idx;
ALTER TABLE chunks DROP COLUMN key_prefix;
ALTER TABLE chunks DROP COLUMN blocks;
ALTER TABLE chunks DROP CONSTRAINT chunks_topic_level_ordinal_key;
ALTER TABLE chunks ADD CONSTRAINT chunks_topic_ordinal_key UNIQUE (topic_id, ordinal);
ALTER TABLE chunks DROP COLUMN level;
