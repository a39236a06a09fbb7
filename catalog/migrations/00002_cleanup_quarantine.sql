-- storeopt catalog, version 2: marks of the cleanup routine and the failure record that puts
-- topics which keep failing in quarantine. Never edit this file; add a new version instead.

-- +goose Up

-- One row per top-level prefix of the store that nothing in the catalog references. marked_at is
-- the database clock when cleanup first saw it unreferenced; it is deleted once
-- now() - marked_at >= the retention duration and still nothing references it.
CREATE TABLE cleanup_marks (
    prefix    TEXT        PRIMARY KEY,
    marked_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Cleanup asks, for every listed prefix, whether a topic, a lease or a plan references it.
CREATE INDEX topics_data_prefix_idx ON topics (data_prefix);
CREATE INDEX optimization_queue_fresh_prefix_idx ON optimization_queue (fresh_prefix);
CREATE INDEX plans_fresh_prefix_idx ON plans (fresh_prefix);

-- The current streak of failures of one topic: consecutive failed optimizations with the same
-- error type and signature (message with tp_<ULID> prefixes replaced by tp_*). quarantined_at
-- is set once the streak reaches the quarantine threshold; EnqueueUnoptimized skips the topic
-- from then on. A committed optimization deletes the row (trigger below); so does an operator
-- clearing the quarantine.
CREATE TABLE topic_failures (
    topic_id           BIGINT      PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
    error_type         TEXT        NOT NULL,
    signature          TEXT        NOT NULL,
    message            TEXT        NOT NULL,
    failures           INTEGER     NOT NULL CHECK (failures > 0),
    -- run ID of the last failure counted: a retried Release does not count twice
    last_fencing_token TEXT        NOT NULL,
    first_failed_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_failed_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    quarantined_at     TIMESTAMPTZ
);
CREATE INDEX topic_failures_quarantined_idx ON topic_failures (topic_id) WHERE quarantined_at IS NOT NULL;

-- Success resets: the commit that records an optimization ends the topic's failure streak (and
-- its quarantine) in the same transaction.
-- +goose StatementBegin
CREATE FUNCTION storeopt_reset_topic_failures() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM topic_failures WHERE topic_id = NEW.topic_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER optimizations_reset_topic_failures AFTER INSERT ON optimizations
    FOR EACH ROW EXECUTE FUNCTION storeopt_reset_topic_failures();

-- +goose Down
DROP TRIGGER optimizations_reset_topic_failures ON optimizations;
DROP FUNCTION storeopt_reset_topic_failures();
DROP TABLE topic_failures;
DROP INDEX plans_fresh_prefix_idx;
DROP INDEX optimization_queue_fresh_prefix_idx;
DROP INDEX topics_data_prefix_idx;
DROP TABLE cleanup_marks;
