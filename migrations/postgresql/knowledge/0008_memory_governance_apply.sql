-- PostgreSQL form of migrations/knowledge/0008_memory_governance_apply.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- memory_governance, continued (port addition, issue 28): forget/restore carried out by whichever process
-- has the learned memory open (see the SQLite form for the columns).
ALTER TABLE memory_governance ADD COLUMN applied_at TEXT COLLATE "C";
ALTER TABLE memory_governance ADD COLUMN restored_at TEXT COLLATE "C";
ALTER TABLE memory_governance ADD COLUMN restored_by TEXT COLLATE "C";
CREATE INDEX IF NOT EXISTS idx_memory_governance_pending ON memory_governance(applied_at, action);
