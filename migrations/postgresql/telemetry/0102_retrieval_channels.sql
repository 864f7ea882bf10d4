-- PostgreSQL form of migrations/telemetry/0102_retrieval_channels.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- The channels that fed a retrieval's pool (port addition; NULL on rows written before it):
--   channels  'vector', or 'vector+lexical' when the lexical channel (BM25 over finding text and file
--             path) ran and answered; how many candidates it alone found is in the "Retrieval completed" log
ALTER TABLE retrieval_quality ADD COLUMN channels TEXT COLLATE "C";
