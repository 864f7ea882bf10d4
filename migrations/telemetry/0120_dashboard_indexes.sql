-- The dashboard's range queries over every repository (the operator's view), each answered from one
-- index range without reading the table: retrievals and model runs by time, with the columns summed.
CREATE INDEX IF NOT EXISTS idx_retrieval_quality_created ON retrieval_quality(
  created_at, repo, threshold_method, result_count, candidate_count, confidence_high, confidence_medium,
  confidence_low, distance_threshold
);
CREATE INDEX IF NOT EXISTS idx_executions_dashboard ON executions(created_at, repo, duration_ms, cost_usd, conclusion);
