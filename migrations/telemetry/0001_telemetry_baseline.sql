-- Telemetry baseline: the original's tables and indexes as of its Phase 56 state.
-- IF NOT EXISTS everywhere, so a file created by the original (no yoyo bookkeeping) takes this
-- migration as a no-op and keeps every row.
CREATE TABLE IF NOT EXISTS executions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  delivery_id TEXT,
  repo TEXT NOT NULL,
  pr_number INTEGER,
  event_type TEXT NOT NULL,
  provider TEXT NOT NULL DEFAULT 'anthropic',
  model TEXT NOT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  conclusion TEXT NOT NULL,
  session_id TEXT,
  num_turns INTEGER,
  stop_reason TEXT
);

CREATE TABLE IF NOT EXISTS retrieval_quality (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  delivery_id TEXT,
  repo TEXT NOT NULL,
  pr_number INTEGER,
  event_type TEXT NOT NULL,
  top_k INTEGER,
  distance_threshold REAL,
  result_count INTEGER NOT NULL,
  avg_distance REAL,
  language_match_ratio REAL
);

CREATE INDEX IF NOT EXISTS idx_executions_created_at ON executions(created_at);
CREATE INDEX IF NOT EXISTS idx_executions_repo ON executions(repo);
CREATE UNIQUE INDEX IF NOT EXISTS idx_retrieval_quality_delivery
  ON retrieval_quality(delivery_id) WHERE delivery_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_retrieval_quality_repo_created ON retrieval_quality(repo, created_at);
