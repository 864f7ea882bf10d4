-- PostgreSQL form of migrations/telemetry/0121_dashboard_rollups.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Dashboard rollups (port addition, issue 28): per-day sums of the telemetry rows the dashboard's pages count,
-- written by the app itself (kodiai.storage.rollups), so a page reads a few small rows per day of its range
-- instead of every row. A rollup holds the rows of its source table up to the source's watermark
-- (telemetry_rollup_state); a page adds the rows past it (today's, and any written late) from the source.
--   dashboard_retrieval_daily  retrieval_quality per UTC day, repository and cut method ('unknown' for NULL):
--                              retrievals, sums of candidate_count and result_count, retrievals with no
--                              result, the confidence counts, and the sum and count of distance_threshold
--   dashboard_runs_daily       executions per UTC day, repository and conclusion: runs and the sum of cost_usd
--   telemetry_rollup_state     per source table, the highest id its rollup holds (watermark) and when it was
--                              last folded
CREATE TABLE IF NOT EXISTS dashboard_retrieval_daily (
  day TEXT COLLATE "C" NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  threshold_method TEXT COLLATE "C" NOT NULL,
  retrievals BIGINT NOT NULL DEFAULT 0,
  candidates BIGINT NOT NULL DEFAULT 0,
  kept BIGINT NOT NULL DEFAULT 0,
  empty_results BIGINT NOT NULL DEFAULT 0,
  confidence_high BIGINT NOT NULL DEFAULT 0,
  confidence_medium BIGINT NOT NULL DEFAULT 0,
  confidence_low BIGINT NOT NULL DEFAULT 0,
  threshold_sum DOUBLE PRECISION NOT NULL DEFAULT 0,
  thresholds BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, threshold_method)
);
CREATE TABLE IF NOT EXISTS dashboard_runs_daily (
  day TEXT COLLATE "C" NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  conclusion TEXT COLLATE "C" NOT NULL,
  runs BIGINT NOT NULL DEFAULT 0,
  cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, conclusion)
);
CREATE TABLE IF NOT EXISTS telemetry_rollup_state (
  source TEXT COLLATE "C" PRIMARY KEY,
  watermark BIGINT NOT NULL DEFAULT 0,
  folded_at TEXT COLLATE "C"
);
-- Packed per day and repository (kodiai.storage.rollups_packed): the runs' durations (64-bit integers) and
-- costs (64-bit floats), for the overview's percentiles, which no sum can give.
CREATE TABLE IF NOT EXISTS dashboard_run_values_daily (
  day TEXT COLLATE "C" NOT NULL,
  repo TEXT COLLATE "C" NOT NULL,
  durations BYTEA NOT NULL,
  costs BYTEA NOT NULL,
  PRIMARY KEY (day, repo)
);
