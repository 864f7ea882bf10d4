-- learning_memories: the original's learned-memory metadata table (it lived in the knowledge file
-- next to the sqlite-vec tables). The port keeps vectors in LanceDB; the table is created so the
-- schema stays a superset of the original's and operators' queries against it still run.
CREATE TABLE IF NOT EXISTS learning_memories (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  repo TEXT NOT NULL,
  owner TEXT NOT NULL,
  finding_id INTEGER,
  review_id INTEGER,
  source_repo TEXT NOT NULL,
  finding_text TEXT NOT NULL,
  severity TEXT NOT NULL,
  category TEXT NOT NULL,
  file_path TEXT NOT NULL,
  outcome TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  embedding_dim INTEGER NOT NULL,
  stale INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  UNIQUE(repo, finding_id, outcome)
);
CREATE INDEX IF NOT EXISTS idx_memories_repo ON learning_memories(repo);
CREATE INDEX IF NOT EXISTS idx_memories_owner ON learning_memories(owner);
CREATE INDEX IF NOT EXISTS idx_memories_stale ON learning_memories(stale);
