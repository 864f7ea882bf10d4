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
  day TEXT NOT NULL,
  repo TEXT NOT NULL,
  threshold_method TEXT NOT NULL,
  retrievals INTEGER NOT NULL DEFAULT 0,
  candidates INTEGER NOT NULL DEFAULT 0,
  kept INTEGER NOT NULL DEFAULT 0,
  empty_results INTEGER NOT NULL DEFAULT 0,
  confidence_high INTEGER NOT NULL DEFAULT 0,
  confidence_medium INTEGER NOT NULL DEFAULT 0,
  confidence_low INTEGER NOT NULL DEFAULT 0,
  threshold_sum REAL NOT NULL DEFAULT 0,
  thresholds INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, threshold_method)
);
CREATE TABLE IF NOT EXISTS dashboard_runs_daily (
  day TEXT NOT NULL,
  repo TEXT NOT NULL,
  conclusion TEXT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (day, repo, conclusion)
);
CREATE TABLE IF NOT EXISTS telemetry_rollup_state (
  source TEXT PRIMARY KEY,
  watermark INTEGER NOT NULL DEFAULT 0,
  folded_at TEXT
);
-- Packed per day and repository (kodiai.storage.rollups_packed): the runs' durations (64-bit integers) and
-- costs (64-bit floats), for the overview's percentiles, which no sum can give.
CREATE TABLE IF NOT EXISTS dashboard_run_values_daily (
  day TEXT NOT NULL,
  repo TEXT NOT NULL,
  durations BLOB NOT NULL,
  costs BLOB NOT NULL,
  PRIMARY KEY (day, repo)
);
