-- storeopt catalog, version 7: what a window read needs to go from a time range to the byte
-- ranges of pages (docs/levels.md#blocks-and-window-reads). Never edit this file; add a new
-- version instead.
--
-- * chunks.footer_bytes, staged_chunks.footer_bytes: the length of the chunk's footer (the
--   serialized file metadata and its 8-byte trailer, the last footer_bytes bytes of the object),
--   so that a window read fetches the footer in one request of its size, at the same time as the
--   page indexes of the chunk's blocks; NULL when unknown (ingested chunks, chunks written before
--   this version): the reader then fetches the object's last 16 KiB and more if the footer is
--   longer.
-- * The entries of chunks.blocks and staged_chunks.blocks (JSON, version 4) written from this
--   version on also carry "ts_index" and "offset_index", each {"offset", "length"}: where the
--   block's page index lies (the column index of timestamp_ns, the offset indexes of all its
--   columns). Entries without them are blocks without a page index (or recorded before).

-- +goose Up
ALTER TABLE chunks ADD COLUMN footer_bytes BIGINT CHECK (footer_bytes > 0);
ALTER TABLE staged_chunks ADD COLUMN footer_bytes BIGINT CHECK (footer_bytes > 0);

-- +goose Down
ALTER TABLE staged_chunks DROP COLUMN footer_bytes;
ALTER TABLE chunks DROP COLUMN footer_bytes;
