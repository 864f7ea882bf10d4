-- memory_governance, continued (port addition, issue 28): forget/restore carried out by whichever process
-- has the learned memory open.
--   applied_at   when the memory store last reflected the row (forget: the finding's rows removed; a restored
--                forget: the finding's memory written again). NULL: recorded where the store is not open (a
--                `web` replica's dashboard); the workers' periodic maintenance applies it.
--   restored_at  when a forget was undone from the dashboard (the finding may be learned from again), and
--   restored_by  who undid it
ALTER TABLE memory_governance ADD COLUMN applied_at TEXT;
ALTER TABLE memory_governance ADD COLUMN restored_at TEXT;
ALTER TABLE memory_governance ADD COLUMN restored_by TEXT;
CREATE INDEX IF NOT EXISTS idx_memory_governance_pending ON memory_governance(applied_at, action);
