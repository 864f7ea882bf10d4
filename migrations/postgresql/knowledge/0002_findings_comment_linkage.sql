-- PostgreSQL form of migrations/knowledge/0002_findings_comment_linkage.py (same id; see the telemetry 0002
-- note: a PostgreSQL database is always created by these migrations, so plain ADD COLUMNs are enough).
ALTER TABLE findings ADD COLUMN comment_id BIGINT;
ALTER TABLE findings ADD COLUMN comment_surface TEXT COLLATE "C";
ALTER TABLE findings ADD COLUMN review_output_key TEXT COLLATE "C";
