-- Knowledge baseline: the original's eight tables, unique keys, foreign keys and indexes.
-- IF NOT EXISTS everywhere, so a file created by the original (no yoyo bookkeeping) takes this
-- migration as a no-op and keeps every row. The findings comment-linkage columns come in 0002.
CREATE TABLE IF NOT EXISTS reviews (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  repo TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  head_sha TEXT,
  delivery_id TEXT,
  files_analyzed INTEGER NOT NULL DEFAULT 0,
  lines_changed INTEGER NOT NULL DEFAULT 0,
  findings_critical INTEGER NOT NULL DEFAULT 0,
  findings_major INTEGER NOT NULL DEFAULT 0,
  findings_medium INTEGER NOT NULL DEFAULT 0,
  findings_minor INTEGER NOT NULL DEFAULT 0,
  findings_total INTEGER NOT NULL DEFAULT 0,
  suppressions_applied INTEGER NOT NULL DEFAULT 0,
  config_snapshot TEXT,
  duration_ms INTEGER,
  model TEXT,
  conclusion TEXT NOT NULL DEFAULT 'unknown'
);
CREATE INDEX IF NOT EXISTS idx_reviews_repo ON reviews(repo);
CREATE INDEX IF NOT EXISTS idx_reviews_repo_created ON reviews(repo, created_at);
CREATE INDEX IF NOT EXISTS idx_reviews_pr ON reviews(repo, pr_number);

CREATE TABLE IF NOT EXISTS findings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  review_id INTEGER NOT NULL REFERENCES reviews(id),
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_path TEXT NOT NULL,
  start_line INTEGER,
  end_line INTEGER,
  severity TEXT NOT NULL,
  category TEXT NOT NULL,
  confidence INTEGER NOT NULL,
  title TEXT NOT NULL,
  suppressed INTEGER NOT NULL DEFAULT 0,
  suppression_pattern TEXT
);
CREATE INDEX IF NOT EXISTS idx_findings_review ON findings(review_id);
CREATE INDEX IF NOT EXISTS idx_findings_severity ON findings(severity);
-- Named for repo+file by the original, but on file_path only: kept as is for operators' queries.
CREATE INDEX IF NOT EXISTS idx_findings_repo_file ON findings(file_path);

CREATE TABLE IF NOT EXISTS suppression_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  review_id INTEGER NOT NULL REFERENCES reviews(id),
  pattern TEXT NOT NULL,
  matched_count INTEGER NOT NULL DEFAULT 0,
  finding_ids TEXT
);
CREATE INDEX IF NOT EXISTS idx_suppression_log_review ON suppression_log(review_id);

CREATE TABLE IF NOT EXISTS global_patterns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  severity TEXT NOT NULL,
  category TEXT NOT NULL,
  confidence_band TEXT NOT NULL,
  pattern_fingerprint TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  UNIQUE(severity, category, confidence_band, pattern_fingerprint)
);
CREATE INDEX IF NOT EXISTS idx_global_patterns_lookup ON global_patterns(severity, category, confidence_band);

CREATE TABLE IF NOT EXISTS feedback_reactions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  repo TEXT NOT NULL,
  review_id INTEGER NOT NULL REFERENCES reviews(id),
  finding_id INTEGER NOT NULL REFERENCES findings(id),
  comment_id INTEGER NOT NULL,
  comment_surface TEXT NOT NULL,
  reaction_id INTEGER NOT NULL,
  reaction_content TEXT NOT NULL,
  reactor_login TEXT NOT NULL,
  reacted_at TEXT,
  severity TEXT NOT NULL,
  category TEXT NOT NULL,
  file_path TEXT NOT NULL,
  title TEXT NOT NULL,
  UNIQUE(repo, comment_id, reaction_id)
);
CREATE INDEX IF NOT EXISTS idx_feedback_reactions_repo_created ON feedback_reactions(repo, created_at);
CREATE INDEX IF NOT EXISTS idx_feedback_reactions_finding ON feedback_reactions(finding_id);
CREATE INDEX IF NOT EXISTS idx_feedback_reactions_repo_title ON feedback_reactions(repo, title);

CREATE TABLE IF NOT EXISTS run_state (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_key TEXT NOT NULL UNIQUE,
  repo TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  base_sha TEXT NOT NULL,
  head_sha TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  action TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  completed_at TEXT,
  superseded_by TEXT
);
CREATE INDEX IF NOT EXISTS idx_run_state_repo_pr ON run_state(repo, pr_number);
CREATE INDEX IF NOT EXISTS idx_run_state_status ON run_state(status);

CREATE TABLE IF NOT EXISTS author_cache (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  repo TEXT NOT NULL,
  author_login TEXT NOT NULL,
  tier TEXT NOT NULL,
  author_association TEXT NOT NULL,
  pr_count INTEGER,
  cached_at TEXT NOT NULL DEFAULT (datetime('now')),
  UNIQUE(repo, author_login)
);
CREATE INDEX IF NOT EXISTS idx_author_cache_lookup ON author_cache(repo, author_login);

CREATE TABLE IF NOT EXISTS dep_bump_merge_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  repo TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  merged_at TEXT,
  delivery_id TEXT,
  source TEXT,
  signals_json TEXT,
  package_name TEXT,
  old_version TEXT,
  new_version TEXT,
  semver_bump_type TEXT,
  merge_confidence_level TEXT,
  merge_confidence_rationale_json TEXT,
  advisory_status TEXT,
  advisory_max_severity TEXT,
  is_security_bump INTEGER,
  UNIQUE(repo, pr_number)
);
CREATE INDEX IF NOT EXISTS idx_dep_bump_merge_repo_created ON dep_bump_merge_history(repo, created_at);
CREATE INDEX IF NOT EXISTS idx_dep_bump_merge_repo_pkg ON dep_bump_merge_history(repo, package_name);
