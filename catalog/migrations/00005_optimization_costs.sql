-- storeopt catalog, version 5: what each committed optimization cost, so that a dry run can
-- estimate the seconds of the next ones from the worker's measured throughput (package estimate).
-- Never edit this file; add a new version instead.
--
-- * input_bytes, input_arrow_bytes, output_bytes, rows: object bytes and Arrow (uncompressed)
--   bytes of the input chunks the optimization replaced, object bytes of its outputs, rows.
-- * seconds: from the lease to the commit (database clock), retries and waits included.
-- Optimizations committed before this version have NULLs.

-- +goose Up
ALTER TABLE optimizations ADD COLUMN input_bytes BIGINT CHECK (input_bytes >= 0);
ALTER TABLE optimizations ADD COLUMN input_arrow_bytes BIGINT CHECK (input_arrow_bytes >= 0);
ALTER TABLE optimizations ADD COLUMN output_bytes BIGINT CHECK (output_bytes >= 0);
ALTER TABLE optimizations ADD COLUMN rows BIGINT CHECK (rows >= 0);
ALTER TABLE optimizations ADD COLUMN seconds DOUBLE PRECISION CHECK (seconds >= 0);
-- the estimates read the latest optimizations of one policy
CREATE INDEX optimizations_policy_committed_idx ON optimizations (policy, committed_at DESC);

-- +goose Down
DROP INDEX optimizations_policy_committed_idx;
ALTER TABLE optimizations DROP COLUMN seconds;
ALTER TABLE optimizations DROP COLUMN rows;
ALTER TABLE optimizations DROP COLUMN output_bytes;
ALTER TABLE optimizations DROP COLUMN input_arrow_bytes;
ALTER TABLE optimizations DROP COLUMN input_bytes;
