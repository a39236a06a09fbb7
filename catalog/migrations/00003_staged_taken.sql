-- storeopt catalog, version 3: what every staged output chunk took from each input chunk (per
-- input chunk ID: rows and an order-independent digest of their stored row positions, encoded by
-- package verify), so that Commit checks that each planned input chunk's rows 0..n-1 went to
-- exactly one output. Never edit this file; add a new version instead.

-- +goose Up
-- Chunks staged before this version (by an older worker) have none: Commit refuses them.
ALTER TABLE staged_chunks ADD COLUMN taken BYTEA NOT NULL DEFAULT ''::bytea;

-- +goose Down
ALTER TABLE staged_chunks DROP COLUMN taken;
