-- The dashboard's range queries over every repository (the operator's view): retrievals by time.
CREATE INDEX IF NOT EXISTS idx_retrieval_quality_created ON retrieval_quality(created_at);
