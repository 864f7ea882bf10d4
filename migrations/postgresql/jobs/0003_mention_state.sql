-- PostgreSQL form of migrations/jobs/0003_mention_state.sql (same id, same tables and columns; see migrations/postgresql/README.md).
-- Mention write-mode state shared by every process on this jobs database (port addition; the original kept
-- these in in-process maps, lost on restart and invisible to a second replica). Times are Unix epoch microseconds.

-- In-flight write requests: one row per write-output key while a process publishes it. A row whose
-- expires_at has passed (its process crashed) may be taken over.
CREATE TABLE IF NOT EXISTS mention_write_locks (
  write_key TEXT COLLATE "C" PRIMARY KEY,
  owner_token TEXT COLLATE "C" NOT NULL,
  acquired_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);

-- Last bot-PR creation per `<installationId>:<owner>/<repo>` (write.minIntervalSeconds); rows older than
-- 24 h are pruned and at most 10 000 are kept.
CREATE TABLE IF NOT EXISTS mention_write_rate (
  scope_key TEXT COLLATE "C" PRIMARY KEY,
  last_write_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_mention_write_rate_last_write_at ON mention_write_rate (last_write_at);

-- Successful inline-thread reply turns per `<owner>/<repo>#<n>` (mention.conversation.maxTurnsPerPr); a row
-- untouched for 24 h counts as gone; at most 10 000 are kept.
CREATE TABLE IF NOT EXISTS mention_conversation_turns (
  pr_key TEXT COLLATE "C" PRIMARY KEY,
  turns BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_mention_conversation_turns_updated_at ON mention_conversation_turns (updated_at);
