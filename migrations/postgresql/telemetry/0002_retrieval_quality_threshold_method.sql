-- PostgreSQL form of migrations/telemetry/0002_retrieval_quality_threshold_method.py (same id). The SQLite
-- form adds the column only when missing, because the original may have added it to its own file; a
-- PostgreSQL database is always created by these migrations, so a plain ADD COLUMN is enough.
ALTER TABLE retrieval_quality ADD COLUMN threshold_method TEXT COLLATE "C";
