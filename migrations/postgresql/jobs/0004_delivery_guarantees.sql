-- PostgreSQL form of migrations/jobs/0004_delivery_guarantees.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Delivery guarantees (issue 15): body-digest dedup, the dead-letter state, and the journal's identity.

-- sha256 of the body as received (hex). A second delivery with the same body inside the dedup window is a
-- replay of a captured signed body under a new delivery id: acknowledged as a duplicate, never run again.
ALTER TABLE delivery_journal ADD COLUMN body_sha256 TEXT COLLATE "C";
CREATE INDEX IF NOT EXISTS idx_delivery_journal_body_sha256 ON delivery_journal (body_sha256)
  WHERE body_sha256 IS NOT NULL;

-- Statuses from here on: ignored | pending (accepted, no job started in this attempt) | running (a job of
-- the delivery started; attempts counts these starts) | requeued (`kodiai jobs retry`: waiting for a server
-- to pick it up) | done | failed (a handler raised) | dead (the process stopped under it `attempts` times;
-- kept with its body and last error until retried) | abandoned (written by earlier versions only).
CREATE INDEX IF NOT EXISTS idx_delivery_journal_open ON delivery_journal (status)
  WHERE status IN ('pending', 'running', 'requeued', 'dead');

-- One row: which journal this file is. A copy kept beside the file (`<jobs db>.instance`) lets a restart tell
-- a missing or replaced journal (pending jobs and the delivery-id history gone) from the one it last used.
CREATE TABLE IF NOT EXISTS journal_meta (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  instance_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  probed_at TEXT COLLATE "C"
);
