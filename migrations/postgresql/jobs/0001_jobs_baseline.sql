-- PostgreSQL form of migrations/jobs/0001_jobs_baseline.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Webhook delivery dedup and the durable job journal (port addition; the original kept both in memory).

-- Every accepted delivery id, remembered for at least 24 h so redeliveries and restarts never re-run it.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  delivery_id TEXT COLLATE "C" PRIMARY KEY,
  event_name TEXT COLLATE "C" NOT NULL,
  received_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_webhook_deliveries_received_at ON webhook_deliveries (received_at);

-- One row per accepted delivery that has handlers to run. Written in the same transaction as the
-- dedup row, before the 200 is sent; marked done when its dispatch settles. Rows still 'pending' at
-- start-up are replayed (handlers already finished are skipped) once. The payload lives in its own
-- table so that status updates rewrite a small row, not a 25 MiB one.
CREATE TABLE IF NOT EXISTS job_journal (
  delivery_id TEXT COLLATE "C" PRIMARY KEY,
  event_name TEXT COLLATE "C" NOT NULL,
  action TEXT COLLATE "C",
  installation_id BIGINT NOT NULL DEFAULT 0,
  status TEXT COLLATE "C" NOT NULL DEFAULT 'pending',   -- pending | done | failed | abandoned
  attempts BIGINT NOT NULL DEFAULT 0,
  handlers_done TEXT COLLATE "C" NOT NULL DEFAULT '[]', -- JSON list of handler names that finished
  received_at TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C",
  finished_at TEXT COLLATE "C",
  error TEXT COLLATE "C"
);
CREATE INDEX IF NOT EXISTS idx_job_journal_status ON job_journal (status);

-- The exact JSON body of each journaled delivery (as received), for replay.
CREATE TABLE IF NOT EXISTS job_payloads (
  delivery_id TEXT COLLATE "C" PRIMARY KEY,
  payload TEXT COLLATE "C" NOT NULL
);
