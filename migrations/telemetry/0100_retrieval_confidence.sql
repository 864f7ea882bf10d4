-- Retrieval confidence signals (additive; every column nullable, NULL when the signal is off).
--   candidate_count         size of the pool isolation returned, before any cut
--   ambiguity_cluster_size  candidates within the ambiguity ratio of the best one's similarity (whole pool)
--   confidence_high/medium/low  how many final results got each confidence label
ALTER TABLE retrieval_quality ADD COLUMN candidate_count INTEGER;
ALTER TABLE retrieval_quality ADD COLUMN ambiguity_cluster_size INTEGER;
ALTER TABLE retrieval_quality ADD COLUMN confidence_high INTEGER;
ALTER TABLE retrieval_quality ADD COLUMN confidence_medium INTEGER;
ALTER TABLE retrieval_quality ADD COLUMN confidence_low INTEGER;
