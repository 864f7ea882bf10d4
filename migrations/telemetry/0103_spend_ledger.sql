-- The spend ledger (port addition): one row per Claude run started by a webhook (outcome 'run', with the
-- run's cost) and per run refused by the daily spend cap (outcome 'refused', cost 0). The cap sums today's
-- (UTC) rows of one installation; it is written whatever the repository's telemetry.enabled says, since a
-- repository must not be able to hide its spend from the operator's cap.
--   created_at       UTC, 'YYYY-MM-DD HH:MM:SS' (the same text form as executions.created_at)
--   installation_id  the GitHub App installation the run belongs to
--   repo             owner/name; number: the pull request or issue
--   kind             review | mention | write (a mention in write mode)
--   outcome          run | refused; reason: why it was refused (installation-cap, repo-cap, unreadable)
CREATE TABLE IF NOT EXISTS spend_ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  installation_id INTEGER NOT NULL,
  repo TEXT NOT NULL,
  number INTEGER,
  delivery_id TEXT,
  kind TEXT NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT,
  cost_usd REAL NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS idx_spend_ledger_installation_created
  ON spend_ledger(installation_id, created_at);
