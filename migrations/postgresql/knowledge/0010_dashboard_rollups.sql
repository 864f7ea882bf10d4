-- PostgreSQL form of migrations/knowledge/0010_dashboard_rollups.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Dashboard rollups (port addition, issue 28): the knowledge rows the dashboard's pages count, summed by the
-- app itself (kodiai.storage.rollups), so a page reads a few small rows instead of every row of its range. A
-- rollup holds the rows of its source table up to the source's watermark (knowledge_rollup_state); a page adds
-- the rows past it (today's, a reaction synced late, an import) from the source.
--   dashboard_reviews_daily    reviews per UTC day of created_at and repository: reviews, the sum of
--                              findings_total, and clean reviews (succeeded with no finding)
--   dashboard_findings_daily   findings per UTC day and repository of their review, and severity
--   dashboard_review_outcomes  per review (and the reactions' repository): 👍, 👎 kept by feedback sync and the
--                              review's findings a later push fixed, with the review's created_at and delivery
--                              (the memory page joins them to the retrievals of that delivery)
--   knowledge_rollup_state     per source table, the highest id its rollup holds (watermark) and when it was
--                              last folded
CREATE TABLE IF NOT EXISTS dashboard_reviews_daily (
  day TEXT COLLATE "C" NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  reviews BIGINT NOT NULL DEFAULT 0,
  findings BIGINT NOT NULL DEFAULT 0,
  clean BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo)
);
CREATE TABLE IF NOT EXISTS dashboard_findings_daily (
  day TEXT COLLATE "C" NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  severity TEXT COLLATE "C" NOT NULL,
  findings BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, severity)
);
CREATE TABLE IF NOT EXISTS dashboard_review_outcomes (
  review_id BIGINT NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  review_created_at TEXT COLLATE "C" NOT NULL,
  delivery_id TEXT COLLATE "C",
  up BIGINT NOT NULL DEFAULT 0,
  down BIGINT NOT NULL DEFAULT 0,
  fixed BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (review_id, repo)
);
CREATE INDEX IF NOT EXISTS idx_dashboard_review_outcomes_created ON dashboard_review_outcomes(
  review_created_at, repo, delivery_id, up, down, fixed
);
CREATE TABLE IF NOT EXISTS knowledge_rollup_state (
  source TEXT COLLATE "C" PRIMARY KEY,
  watermark BIGINT NOT NULL DEFAULT 0,
  folded_at TEXT COLLATE "C"
);
-- A review's reactions, when its outcomes are summed again (a reaction withdrawn on GitHub).
CREATE INDEX IF NOT EXISTS idx_feedback_reactions_review ON feedback_reactions(review_id);
-- The memory page's join from a review's outcomes to the memories its retrieval kept, read from the index alone.
CREATE INDEX IF NOT EXISTS idx_retrieval_hits_delivery_kept ON retrieval_hits(delivery_id, kept, repo, source_repo, finding_id)
  WHERE kept = 1;
-- Packed per day (kodiai.storage.rollups_packed), for the memory page's counts per memory, as 64-bit integers
-- whose repository columns index the JSON list in names: the memories kept that day ([reviewing repo, source
-- repo, finding id, count]), and the outcomes of the reviews created that day beside each memory their retrieval
-- kept ([reviewing repo, outcome repo, source repo, finding id, up, down, fixed]).
CREATE TABLE IF NOT EXISTS dashboard_memory_daily (
  day TEXT COLLATE "C" PRIMARY KEY,
  names TEXT COLLATE "C" NOT NULL,
  kept BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS dashboard_memory_outcomes_daily (
  day TEXT COLLATE "C" PRIMARY KEY,
  names TEXT COLLATE "C" NOT NULL,
  pairs BYTEA NOT NULL
);
-- A new retrieval's review outcomes, found by its delivery.
CREATE INDEX IF NOT EXISTS idx_dashboard_review_outcomes_delivery ON dashboard_review_outcomes(delivery_id);
