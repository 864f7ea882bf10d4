-- resolved_findings (port addition, issue 28): which findings of an earlier review of a PR a later review of
-- the same PR (a re-review after a push) found resolved: no finding of the new review has the same file and
-- title fingerprint. One row per (finding, resolving review); the dashboard counts, per memory, the findings
-- fixed in a later push among those it was shown beside.
--   finding_id    the earlier finding (findings.id)
--   review_id     the review that found it resolved (reviews.id)
--   repo, pr_number  the pull request both reviews belong to
CREATE TABLE IF NOT EXISTS resolved_findings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  finding_id INTEGER NOT NULL,
  review_id INTEGER NOT NULL,
  repo TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  UNIQUE(finding_id, review_id)
);
CREATE INDEX IF NOT EXISTS idx_resolved_findings_review ON resolved_findings(review_id);
