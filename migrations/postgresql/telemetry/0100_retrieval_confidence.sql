-- PostgreSQL form of migrations/telemetry/0100_retrieval_confidence.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Retrieval confidence signals (additive; every column nullable, NULL when the signal is off).
--   candidate_count         size of the pool isolation returned, before any cut
--   ambiguity_cluster_size  candidates within the ambiguity ratio of the best one's similarity (whole pool)
--   confidence_high/medium/low  how many final results got each confidence label
ALTER TABLE retrieval_quality ADD COLUMN candidate_count BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN ambiguity_cluster_size BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN confidence_high BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN confidence_medium BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN confidence_low BIGINT;
