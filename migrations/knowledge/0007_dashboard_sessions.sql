-- dashboard_sessions (port addition, issue 28): the dashboard's signed-in sessions, shared by every web
-- replica and kept across restarts. The browser's cookie is signed (DASHBOARD_SESSION_SECRET) and holds only
-- the session id, login and operator flag; what must stay on the server lives here.
--   sid_hash     SHA-256 of the session id (a reader of this table cannot present a session: the cookie
--                must also be signed with the key)
--   user_token   the GitHub user token, encrypted with a key derived from DASHBOARD_SESSION_SECRET
--                (NULL for an operator session)
--   access       the repositories/installations GitHub said the user may push to (JSON), and access_at
--                when that was looked up (Unix seconds); expires_at: the session's end (Unix seconds)
CREATE TABLE IF NOT EXISTS dashboard_sessions (
  sid_hash TEXT PRIMARY KEY,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  login TEXT NOT NULL,
  operator INTEGER NOT NULL DEFAULT 0,
  user_token TEXT,
  access TEXT,
  access_at REAL NOT NULL DEFAULT 0,
  expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_dashboard_sessions_expires ON dashboard_sessions(expires_at);
