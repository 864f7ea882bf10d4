-- memory_governance (port addition): who retired or added a learned memory from GitHub, and when.
--   action      'forget'  (`@kodiai forget` in a finding's review thread: finding_id = the finding's comment id)
--               'remember' (`@kodiai remember: <text>` on a PR: memory_id = the memory it created)
--   finding_id  the memory's finding id (the finding's review-comment id), NULL for 'remember'
--   memory_id   the memory written by 'remember', NULL for 'forget'
--   removed     how many memory rows 'forget' removed (all outcomes of the finding)
--   text        the remembered text, or the forgotten finding's text
--   actor       the GitHub login that asked; comment_id/comment_url the command comment
CREATE TABLE IF NOT EXISTS memory_governance (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  repo TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('forget', 'remember')),
  finding_id INTEGER,
  memory_id INTEGER,
  removed INTEGER NOT NULL DEFAULT 0,
  pr_number INTEGER,
  comment_id INTEGER,
  comment_url TEXT,
  actor TEXT NOT NULL,
  text TEXT
);
CREATE INDEX IF NOT EXISTS idx_memory_governance_finding ON memory_governance(repo, finding_id);
CREATE INDEX IF NOT EXISTS idx_memory_governance_memory ON memory_governance(memory_id);
CREATE INDEX IF NOT EXISTS idx_feedback_reactions_comment ON feedback_reactions(repo, comment_id);
