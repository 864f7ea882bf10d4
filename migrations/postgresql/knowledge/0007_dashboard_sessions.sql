-- PostgreSQL form of migrations/knowledge/0007_dashboard_sessions.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- dashboard_sessions (port addition, issue 28): the dashboard's signed-in sessions, shared by every web
-- replica and kept across restarts (see the SQLite form for the columns).
CREATE TABLE IF NOT EXISTS dashboard_sessions (
  sid_hash TEXT COLLATE "C" PRIMARY KEY,
  created_at TEXT COLLATE "C" NOT NULL DEFAULT (datetime('now')),
  login TEXT COLLATE "C" NOT NULL,
  operator BIGINT NOT NULL DEFAULT 0,
  user_token TEXT COLLATE "C",
  access TEXT COLLATE "C",
  access_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_dashboard_sessions_expires ON dashboard_sessions(expires_at);
