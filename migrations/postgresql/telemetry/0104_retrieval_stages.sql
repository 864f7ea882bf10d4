-- PostgreSQL form of migrations/telemetry/0104_retrieval_stages.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- The stages after the cut (port addition; NULL on rows written before it, and when a stage is off):
--   second_stage    the learned ranker over the pool: 'used', or 'skipped:<rule>' when a skip rule kept
--                   the cut's answer (rule: no-file-evidence)
--   abstain_reason  why a stage kept nothing ('p=0.12<0.70 weakest=file_evidence' from the abstain stage,
--                   'ranker: best p=0.03<0.08' from the ranker), or the abstain stage's 'p=0.91' when it
--                   ran and kept the cut's answer
-- threshold_method gains 'abstain', 'rank:kept' and 'rank:abstain'; its other values are unchanged.
ALTER TABLE retrieval_quality ADD COLUMN second_stage TEXT COLLATE "C";
ALTER TABLE retrieval_quality ADD COLUMN abstain_reason TEXT COLLATE "C";
