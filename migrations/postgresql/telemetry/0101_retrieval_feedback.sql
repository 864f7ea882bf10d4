-- PostgreSQL form of migrations/telemetry/0101_retrieval_feedback.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Feedback carried by a retrieval's final results (port addition; NULL on rows written before it).
--   feedback_positive  results whose finding has at least one human 👍 kept by feedback sync
--   feedback_negative  results whose finding has at least one human 👎
--   feedback_rejected  results whose net feedback is negative (shown to the model as "do not repeat")
ALTER TABLE retrieval_quality ADD COLUMN feedback_positive BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN feedback_negative BIGINT;
ALTER TABLE retrieval_quality ADD COLUMN feedback_rejected BIGINT;
