-- retrieval_hits (port addition, issue 28): which learned memories one review's retrieval looked at, so the
-- dashboard can tell, per memory, how often it was shown to the model and what the team said about the
-- findings it was shown beside. One row per memory in the pool after rerank (the candidates the cut saw).
--   delivery_id       the review's delivery (reviews.delivery_id: its findings and their reactions)
--   memory_id         the memory store's row id; finding_id: the memory's finding (its review-comment id)
--   source_repo       the repository the memory came from (a shared pool may lend another repo's memory)
--   outcome           the memory's outcome (accepted, suppressed, thumbs_up, thumbs_down)
--   distance          the vector distance; adjusted_distance after language rerank and recency
--   kept              1 when the memory reached the prompt, 0 when the cut (or a later stage) dropped it
--   kept_rank         its place among the kept results (1 = first), NULL when dropped
CREATE TABLE IF NOT EXISTS retrieval_hits (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  delivery_id TEXT NOT NULL,
  repo TEXT NOT NULL,
  pr_number INTEGER,
  memory_id INTEGER NOT NULL,
  finding_id INTEGER,
  source_repo TEXT NOT NULL,
  outcome TEXT NOT NULL,
  distance REAL NOT NULL,
  adjusted_distance REAL,
  kept INTEGER NOT NULL DEFAULT 0,
  kept_rank INTEGER,
  UNIQUE(delivery_id, memory_id)
);
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_repo_created ON retrieval_hits(repo, created_at);
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_finding ON retrieval_hits(source_repo, finding_id);
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_pr ON retrieval_hits(repo, pr_number);
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_kept ON retrieval_hits(created_at, source_repo, finding_id, kept)
  WHERE kept = 1;
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_repo_kept ON retrieval_hits(repo, created_at, source_repo, finding_id, kept)
  WHERE kept = 1;
-- The dashboard's joins: a memory's finding by its comment id, a retrieval's review by its delivery, the range.
CREATE INDEX IF NOT EXISTS idx_findings_comment ON findings(comment_id);
CREATE INDEX IF NOT EXISTS idx_reviews_delivery ON reviews(delivery_id);
CREATE INDEX IF NOT EXISTS idx_reviews_created ON reviews(created_at, repo, findings_total, conclusion);
CREATE INDEX IF NOT EXISTS idx_findings_created ON findings(created_at, severity);
