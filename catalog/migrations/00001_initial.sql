-- storeopt catalog, version 1: sequences, topics, chunks, the optimization queue with its leases,
-- plans, staged output chunks and the record of committed optimizations.
-- Later versions add tables in new files (quarantine, cleanup marks); never edit this one.

-- +goose Up
CREATE TABLE sequences (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    locator    TEXT        NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE topics (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sequence_id          BIGINT      NOT NULL REFERENCES sequences (id),
    locator              TEXT        NOT NULL UNIQUE,
    data_prefix          TEXT        NOT NULL,
    serialization_format TEXT        NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    finalized_at         TIMESTAMPTZ,
    optimized_at         TIMESTAMPTZ,
    min_timestamp_ns     BIGINT,
    max_timestamp_ns     BIGINT,
    chunk_set_version    BIGINT      NOT NULL DEFAULT 0
);
CREATE INDEX topics_sequence_id_idx ON topics (sequence_id);
-- EnqueueUnoptimized scans for finalized, never optimized topics.
CREATE INDEX topics_unoptimized_idx ON topics (id)
    WHERE finalized_at IS NOT NULL AND optimized_at IS NULL;

CREATE TABLE chunks (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic_id             BIGINT  NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    ordinal              INTEGER NOT NULL CHECK (ordinal >= 0),
    object_key           TEXT    NOT NULL,
    size_bytes           BIGINT  NOT NULL CHECK (size_bytes >= 0),
    row_count            BIGINT  NOT NULL CHECK (row_count >= 0),
    arrow_size_bytes     BIGINT  NOT NULL CHECK (arrow_size_bytes >= 0),
    min_timestamp_ns     BIGINT,
    max_timestamp_ns     BIGINT,
    timestamp_null_count BIGINT  NOT NULL DEFAULT 0 CHECK (timestamp_null_count >= 0),
    column_stats         JSONB   NOT NULL DEFAULT '{}',
    -- also the index for "chunks of a topic in ordinal order"
    CONSTRAINT chunks_topic_ordinal_key UNIQUE (topic_id, ordinal)
);
-- cleanup asks whether anything still references an object
CREATE INDEX chunks_object_key_idx ON chunks (object_key);

-- One row per topic waiting for (or under) optimization. lease_owner is the workflow ID of the
-- optimization holding it, fencing_token its run ID; both NULL while merely queued.
CREATE TABLE optimization_queue (
    topic_id      BIGINT PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
    enqueued_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    lease_owner   TEXT,
    fencing_token TEXT,
    fresh_prefix  TEXT,
    leased_at     TIMESTAMPTZ,
    CONSTRAINT optimization_queue_lease_complete CHECK (
        (fencing_token IS NULL) = (lease_owner IS NULL)
        AND (fencing_token IS NULL) = (fresh_prefix IS NULL)
        AND (fencing_token IS NULL) = (leased_at IS NULL))
);

-- The plan of one run. body is the caller's serialized plan, stored byte for byte.
CREATE TABLE plans (
    topic_id          BIGINT      NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    fencing_token     TEXT        NOT NULL,
    fresh_prefix      TEXT        NOT NULL,
    chunk_set_version BIGINT      NOT NULL,
    input_chunk_ids   BIGINT[]    NOT NULL,
    body              BYTEA       NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, fencing_token)
);

-- Output chunks written by a run, waiting for its commit. They belong to the run's plan.
CREATE TABLE staged_chunks (
    topic_id             BIGINT  NOT NULL,
    fencing_token        TEXT    NOT NULL,
    ordinal              INTEGER NOT NULL CHECK (ordinal >= 0),
    object_key           TEXT    NOT NULL,
    size_bytes           BIGINT  NOT NULL CHECK (size_bytes >= 0),
    row_count            BIGINT  NOT NULL CHECK (row_count >= 0),
    arrow_size_bytes     BIGINT  NOT NULL CHECK (arrow_size_bytes >= 0),
    min_timestamp_ns     BIGINT,
    max_timestamp_ns     BIGINT,
    timestamp_null_count BIGINT  NOT NULL DEFAULT 0 CHECK (timestamp_null_count >= 0),
    column_stats         JSONB   NOT NULL DEFAULT '{}',
    digest               BYTEA   NOT NULL,
    PRIMARY KEY (topic_id, fencing_token, ordinal),
    FOREIGN KEY (topic_id, fencing_token) REFERENCES plans (topic_id, fencing_token) ON DELETE CASCADE
);

-- One row per committed optimization; (topic_id, fencing_token) makes Commit idempotent.
CREATE TABLE optimizations (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic_id      BIGINT      NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    fencing_token TEXT        NOT NULL,
    lease_owner   TEXT        NOT NULL,
    old_prefix    TEXT        NOT NULL,
    new_prefix    TEXT        NOT NULL,
    input_chunks  INTEGER     NOT NULL,
    output_chunks INTEGER     NOT NULL,
    committed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT optimizations_topic_token_key UNIQUE (topic_id, fencing_token)
);
CREATE INDEX optimizations_old_prefix_idx ON optimizations (old_prefix);

-- +goose Down
DROP TABLE optimizations;
DROP TABLE staged_chunks;
DROP TABLE plans;
DROP TABLE optimization_queue;
DROP TABLE chunks;
DROP TABLE topics;
DROP TABLE sequences;
