-- PostgreSQL form of migrations/jobs/0005_journal_probe.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- The write probe's payload (issue 15): while journal writes fail, /readiness comes back only once a write of
-- this size (64 KiB, rewritten in place) lands, not when one page happens to fit in WAL space already there.
ALTER TABLE journal_meta ADD COLUMN probe BYTEA;
