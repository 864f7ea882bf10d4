-- One table for dedup and the job journal, keyed by an append-only sequence (supersedes 0001's three tables;
-- kodiai.jobs.journal moves any rows left in them across when it opens the database).
-- 0001 kept the dedup row, the journal row and the payload in three tables keyed by the (random) delivery id:
-- eight B-tree inserts per delivery, most on random pages. Here a delivery is one row appended at the end
-- of the table plus one entry in the delivery-id index (dedup), and its payload one row appended to a table
-- keyed by the same sequence and deleted when the job finishes (measured with benchmarks/webhook.py).

CREATE TABLE IF NOT EXISTS delivery_journal (
  seq INTEGER PRIMARY KEY,
  delivery_id TEXT NOT NULL UNIQUE,
  event_name TEXT NOT NULL,
  action TEXT,
  installation_id INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'pending',   -- ignored (no work: dedup only) | pending | done | failed | abandoned
  attempts INTEGER NOT NULL DEFAULT 0,
  handlers_done TEXT NOT NULL DEFAULT '[]', -- JSON list of handler names that finished
  received_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  error TEXT
);
CREATE INDEX IF NOT EXISTS idx_delivery_journal_received_at ON delivery_journal (received_at);
CREATE INDEX IF NOT EXISTS idx_delivery_journal_pending ON delivery_journal (status) WHERE status = 'pending';

-- The body of each pending delivery exactly as received (zstd-compressed; TEXT for rows moved from 0001).
CREATE TABLE IF NOT EXISTS delivery_payloads (
  seq INTEGER PRIMARY KEY,
  payload BLOB NOT NULL
);
