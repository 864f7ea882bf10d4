-- pending_memories (port addition, issue 23): a finding on a pull request whose author lacks write
-- permission (or whose permission GitHub would not tell) waits here instead of becoming a learned memory.
-- It is never retrieved while it waits; someone with write permission confirms it (a 👍 on its comment, or
-- merging the PR) and it is written to the memory store as the review would have written it.
--   comment_id    the finding's review-comment id (= the memory's finding_id), NULL when it was not posted
--   outcome       the memory outcome it will get: 'accepted' or 'suppressed'
--   author        the PR author; author_access 'read' or 'unknown' (a lookup that failed)
--   status        'pending' (waiting), 'promoted' (now a memory), 'discarded' (a writer's 👎, or the PR
--                 was closed unmerged)
--   decided_by    who confirmed or discarded it (the writer who reacted, the user who merged)
--   decided_how   'thumbs_up', 'merged', 'thumbs_down' or 'closed'; decided_at when
CREATE TABLE IF NOT EXISTS pending_memories (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  repo TEXT NOT NULL,
  owner TEXT NOT NULL,
  pr_number INTEGER NOT NULL,
  review_id INTEGER,
  comment_id INTEGER,
  finding_text TEXT NOT NULL,
  severity TEXT NOT NULL,
  category TEXT NOT NULL,
  file_path TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('accepted', 'suppressed')),
  author TEXT NOT NULL,
  author_access TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'promoted', 'discarded')),
  decided_by TEXT,
  decided_how TEXT CHECK (decided_how IN ('thumbs_up', 'merged', 'thumbs_down', 'closed')),
  decided_at TEXT
);
CREATE INDEX IF NOT EXISTS idx_pending_memories_pr ON pending_memories(repo, pr_number);
CREATE INDEX IF NOT EXISTS idx_pending_memories_comment ON pending_memories(repo, comment_id);
