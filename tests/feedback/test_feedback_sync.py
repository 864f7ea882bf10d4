"""Feedback sync (behaviour R1 step 55, checklist R4.5 FS-01…FS-04) and what the port adds: withdrawn
or changed reactions leave the store, and a finding's learned memory carries ``thumbs_up`` /
``thumbs_down`` rows while its thumbs stand.

Real components throughout: the router and job lanes with the built-in handlers, the fake GitHub over
HTTP (reactions are listed from it), a SQLite knowledge store and a LanceDB memory store with the
bag-of-words embedder.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kodiai.feedback.reactions import is_human_thumb, parse_timestamp
from kodiai.feedback.sync import FEEDBACK_SYNC_EVENT_KEYS
from kodiai.github.models import Reaction
from kodiai.server.handlers import BUILTIN, register_builtin_handlers
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingRecord, ReviewRecord
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter
from support.review_harness import (
    INSTALLATION,
    OWNER,
    REPO,
    SLUG,
    BagOfWordsEmbedder,
    ReviewHarness,
    inline,
)

FULL = f"{OWNER}/{REPO}"
REACTIONS_PATH = rf"/repos/{OWNER}/{REPO}/pulls/comments/\d+/reactions"
WRITERS = ("alice", "bob", "carol")


class CountingEmbedder(BagOfWordsEmbedder):
    """The test embedder, counting what it is asked to embed (a row must never be embedded twice)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def generate(self, text: str, input_type: str) -> np.ndarray | None:
        self.texts.append(text)
        return super().generate(text, input_type)


class FirstWriteFails(KnowledgeStore):
    """A knowledge store whose first reaction write fails (the injected dependency, not the handler)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reaction_writes = 0

    def record_feedback_reactions(self, reactions: Sequence[FeedbackReactionRecord | Any]) -> int:
        self.reaction_writes += 1
        if self.reaction_writes == 1:
            raise RuntimeError("database is locked")
        return super().record_feedback_reactions(reactions)


@pytest.fixture
def make(tmp_path: Path, harness: ReviewHarness) -> Iterator[Any]:
    """Builds the test's harness in ``tmp_path / "sync"`` with every built-in handler, on the conftest's
    fake GitHub (which the ``harness`` fixture has just reset). The reactors of these tests are the
    team (write permission): whose reactions count is tested in ``test_memory_trust_feedback``."""
    built: list[ReviewHarness] = []
    for login in WRITERS:
        harness.state.set_permission(OWNER, REPO, login, "write")

    def build(**kwargs: Any) -> ReviewHarness:
        assert not built, "one harness per test"
        built.append(
            ReviewHarness(tmp_path / "sync", harness.fake, harness.state, handlers=BUILTIN, **kwargs)
        )
        return built[0]

    yield build
    for h in built:
        h.close()


# ---------------------------------------------------------------------- helpers
def seed(
    h: ReviewHarness, titles: Sequence[str], *, fillers: int = 0, on_github: bool = True
) -> list[dict[str, Any]]:
    """A review of PR #101 whose findings were posted as review comments (one per title).

    ``fillers`` findings without a comment go first, so the posted ones get known finding ids.
    Returns ``{finding_id, comment_id, title}`` per posted finding.
    """
    assert h.knowledge is not None
    review_id = h.knowledge.record_review(ReviewRecord(repo=FULL, pr_number=101, head_sha="abc"))
    findings = [
        FindingRecord(
            review_id=review_id,
            file_path="src/a.ts",
            severity="minor",
            category="style",
            confidence=50,
            title=f"f{i}",
        )
        for i in range(fillers)
    ]
    posted = []
    for n, title in enumerate(titles):
        comment_id = (
            h.state.add_review_comment(OWNER, REPO, 101, f"**{title}**", path="src/index.ts", line=n + 1)[
                "id"
            ]
            if on_github
            else 900_000 + n
        )
        findings.append(
            FindingRecord(
                review_id=review_id,
                file_path="src/index.ts",
                start_line=n + 1,
                severity="major",
                category="correctness",
                confidence=80,
                title=title,
                comment_id=comment_id,
                comment_surface="pull_request_review_comment",
                review_output_key="key-1",
            )
        )
        posted.append({"comment_id": comment_id, "title": title})
    h.knowledge.record_findings(findings)
    ids = dict(h.rows("knowledge.db", "SELECT comment_id, id FROM findings WHERE comment_id IS NOT NULL"))
    return [{**p, "finding_id": ids[p["comment_id"]]} for p in posted]


def pr_comment(*, on_pr: bool = True, number: int = 101, author: str = "alice") -> dict[str, Any]:
    """An ``issue_comment.created`` payload (a plain conversation comment, no mention)."""
    issue: dict[str, Any] = {"number": number, "title": "Thing", "body": "", "user": {"login": "alice"}}
    if on_pr:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{number}"}
    return {
        "action": "created",
        "issue": issue,
        "comment": {"id": 77, "body": "thanks", "user": {"login": author, "type": "User"}},
        "repository": {"id": 1, "name": REPO, "full_name": FULL, "owner": {"login": OWNER}},
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": "User"},
    }


async def sync(h: ReviewHarness, **kwargs: Any) -> None:
    """One delivery that triggers a feedback sync (and nothing else) and settles when it has."""
    outcome = await h.deliver_event("issue_comment", pr_comment(**kwargs))
    assert outcome.failed == 0, outcome


def stored(h: ReviewHarness) -> list[tuple[Any, ...]]:
    return h.rows(
        "knowledge.db",
        "SELECT reaction_content, reactor_login, finding_id, comment_id, reaction_id FROM feedback_reactions "
        "ORDER BY id",
    )


def thumbs_rows(h: ReviewHarness) -> list[tuple[int | None, str]]:
    assert h.memory_store is not None
    return sorted(
        (r.finding_id, r.outcome)
        for r in h.memory_store.list_records(FULL)
        if r.outcome in ("thumbs_up", "thumbs_down")
    )


def tally(h: ReviewHarness, comment_id: int) -> tuple[int, int]:
    assert h.knowledge is not None
    found = h.knowledge.feedback_tallies([(FULL, comment_id)]).get((FULL, comment_id))
    return (found.thumbs_up, found.thumbs_down) if found else (0, 0)


def summary(h: ReviewHarness) -> dict[str, Any]:
    lines = h.logged("Feedback sync completed")
    assert lines, [e["event"] for e in h.logs]
    return lines[-1]


# ---------------------------------------------------------------------- checklist R4.5
async def test_fs_01_records_only_human_thumbs(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"], fillers=6)
    assert finding["finding_id"] == 7
    cid = finding["comment_id"]
    h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="alice")
    h.state.add_comment_reaction(OWNER, REPO, cid, "-1", login="bob")
    h.state.add_comment_reaction(OWNER, REPO, cid, "heart", login="carol")
    h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="kodiai[bot]", user_type="Bot")

    await sync(h)

    assert [(c, login, fid) for c, login, fid, _cid, _rid in stored(h)] == [
        ("+1", "alice", 7),
        ("-1", "bob", 7),
    ]
    [call] = h.calls("GET", REACTIONS_PATH)
    assert call.path == f"/repos/{OWNER}/{REPO}/pulls/comments/{cid}/reactions"
    assert "per_page=100" in call.query
    row = h.rows(
        "knowledge.db",
        "SELECT repo, comment_surface, severity, category, file_path, title, reacted_at IS NOT NULL "
        "FROM feedback_reactions ORDER BY id LIMIT 1",
    )
    assert row == [
        (FULL, "pull_request_review_comment", "major", "correctness", "src/index.ts", "Unchecked null", 1)
    ]


@pytest.mark.parametrize(
    ("reaction", "kept"),
    [
        ({"content": "+1", "user": {"login": "alice", "type": "User"}}, True),
        ({"content": "-1", "user": {"login": "alice", "type": "User"}}, True),
        ({"content": "heart", "user": {"login": "alice", "type": "User"}}, False),
        ({"content": "+1", "user": {"login": "dependabot[bot]", "type": "BOT"}}, False),
        ({"content": "+1", "user": {"login": " KoDiAi[BoT] ", "type": "User"}}, False),
        ({"content": "+1", "user": {"login": "  ", "type": "User"}}, False),
        ({"content": "+1", "user": None}, False),
    ],
)
def test_fs_01_human_thumb_filter(reaction: dict[str, Any], kept: bool) -> None:
    assert is_human_thumb(Reaction.model_validate(reaction), SLUG) is kept


async def test_fs_02_two_syncs_persist_one_row(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Leaky handle"])
    reaction = h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")

    await sync(h)
    await sync(h)

    assert [r[4] for r in stored(h)] == [reaction["id"]]
    assert len(h.calls("GET", REACTIONS_PATH)) == 2
    assert summary(h)["added"] == 0 and summary(h)["keptReactions"] == 1


async def test_fs_03_fetch_and_store_errors_only_warn(make: Any, tmp_path: Path) -> None:
    (tmp_path / "sync").mkdir()
    h = make(knowledge=FirstWriteFails(tmp_path / "sync" / "knowledge.db"))
    broken, ok = seed(h, ["Gone comment", "Real comment"])
    h.fake.fail(404, method="GET", path=rf"/pulls/comments/{broken['comment_id']}/reactions$")
    h.state.add_comment_reaction(OWNER, REPO, ok["comment_id"], "-1", login="bob")

    outcome = await h.deliver_event("issue_comment", pr_comment())

    assert outcome.failed == 0 and outcome.succeeded == 1, outcome
    fetch = h.logged("Feedback sync reaction fetch failed for review comment; continuing")
    persist = h.logged("Feedback sync reaction persistence failed; continuing")
    assert [e["commentId"] for e in fetch] == [broken["comment_id"]]
    assert [e["commentId"] for e in persist] == [ok["comment_id"]]
    assert {e["log_level"] for e in fetch + persist} == {"warning"}
    assert stored(h) == []
    await sync(h)  # the next sync writes what the failed one could not
    assert [r[0] for r in stored(h)] == ["-1"]


async def test_fs_04_issue_comment_on_plain_issue_does_nothing(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")

    outcome = await h.deliver_event("issue_comment", pr_comment(on_pr=False))

    assert outcome.status == "dispatched" and outcome.succeeded == 1
    assert h.calls("GET", REACTIONS_PATH) == []
    assert stored(h) == []
    assert not [e for e in h.logged("Enqueuing job") if e.get("jobType") == "feedback-sync"]


# ---------------------------------------------------------------------- events and gates
@pytest.mark.parametrize(
    ("event_name", "payload_keys"),
    [
        ("pull_request_review_comment", {"pull_request": {"number": 101}, "comment": {"id": 5, "body": "x"}}),
        ("pull_request_review", {"pull_request": {"number": 101}, "review": {"id": 6, "body": None}}),
    ],
)
async def test_pr_review_events_sync(make: Any, event_name: str, payload_keys: dict[str, Any]) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")
    payload = {
        **pr_comment(),
        **payload_keys,
        "action": "created" if "comment" in payload_keys else "submitted",
    }
    payload.pop("issue")

    await h.deliver_event(event_name, payload)

    assert [r[0] for r in stored(h)] == ["+1"]
    [queued] = [e for e in h.logged("Enqueuing job") if e.get("jobType") == "feedback-sync"]
    assert queued["prNumber"] == 101 and queued["eventName"] == event_name


async def test_no_knowledge_store_means_no_sync(make: Any) -> None:
    h = make(knowledge=False)
    h.state.add_review_comment(OWNER, REPO, 101, "**x**")

    outcome = await h.deliver_event("issue_comment", pr_comment())

    assert outcome.succeeded == 1 and outcome.failed == 0
    assert h.calls("GET", REACTIONS_PATH) == []
    assert not h.logged("Enqueuing job")


async def test_missing_repository_owner_is_not_synced(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")
    payload = pr_comment()
    payload["repository"] = {"id": 1, "name": REPO, "full_name": FULL}

    await h.deliver_event("issue_comment", payload)

    assert h.calls("GET", REACTIONS_PATH) == [] and stored(h) == []


async def test_only_the_last_30_days_are_synced(make: Any) -> None:
    h = make()
    old, recent = seed(h, ["Old finding", "Recent finding"])
    for finding in (old, recent):
        h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")
    conn = sqlite3.connect(h.tmp / "knowledge.db")
    with conn:
        conn.execute(
            "UPDATE findings SET created_at = datetime('now', '-31 days') WHERE comment_id = ?",
            (old["comment_id"],),
        )
        conn.execute(
            "UPDATE findings SET created_at = datetime('now', '-29 days') WHERE comment_id = ?",
            (recent["comment_id"],),
        )
    conn.close()

    await sync(h)

    assert [c.path for c in h.calls("GET", REACTIONS_PATH)] == [
        f"/repos/{OWNER}/{REPO}/pulls/comments/{recent['comment_id']}/reactions"
    ]
    assert [r[3] for r in stored(h)] == [recent["comment_id"]]


def test_candidate_timestamps() -> None:
    assert parse_timestamp("2026-01-02 03:04:05") is not None
    assert parse_timestamp("2026-01-02 03:04:05").utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert parse_timestamp("2026-01-02T03:04:05Z") is not None
    assert parse_timestamp("yesterday") is None


# ---------------------------------------------------------------------- beyond the original
async def test_withdrawn_reaction_leaves_tally_and_memory(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    cid = finding["comment_id"]
    h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="alice")
    down = h.state.add_comment_reaction(OWNER, REPO, cid, "-1", login="bob")

    await sync(h)
    assert tally(h, cid) == (1, 1)
    assert thumbs_rows(h) == [(cid, "thumbs_down"), (cid, "thumbs_up")]

    h.state.remove_reaction(down["id"])
    await sync(h)

    assert tally(h, cid) == (1, 0)
    assert [r[1] for r in stored(h)] == ["alice"]
    assert thumbs_rows(h) == [(cid, "thumbs_up")]
    line = summary(h)
    assert (line["withdrawn"], line["memoryRetired"], line["memoryWritten"]) == (1, 1, 0)


async def test_a_full_page_of_reactions_withdraws_nothing(make: Any) -> None:
    """Only one page (100) is read: when it is full, a stored reaction missing from it may be on page 2."""
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    cid = finding["comment_id"]
    up = h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="alice")
    await sync(h)
    h.state.remove_reaction(up["id"])
    for n in range(100):
        h.state.add_comment_reaction(OWNER, REPO, cid, "heart", login=f"fan{n}")

    await sync(h)

    assert [r[1] for r in stored(h)] == ["alice"]
    assert summary(h)["withdrawn"] == 0


async def test_thumbs_changed_from_down_to_up(make: Any) -> None:
    h = make()
    [finding] = seed(h, ["Unchecked null"])
    cid = finding["comment_id"]
    down = h.state.add_comment_reaction(OWNER, REPO, cid, "-1", login="bob")
    await sync(h)
    assert thumbs_rows(h) == [(cid, "thumbs_down")]

    h.state.remove_reaction(down["id"])
    h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="bob")
    await sync(h)

    assert tally(h, cid) == (1, 0)
    assert [(r[0], r[1]) for r in stored(h)] == [("+1", "bob")]
    assert thumbs_rows(h) == [(cid, "thumbs_up")]


async def test_outcome_row_written_once_and_embedded_once(make: Any) -> None:
    embedder = CountingEmbedder()
    h = make(embedder=embedder)
    [finding] = seed(h, ["Unchecked null"])
    cid = finding["comment_id"]
    h.state.add_comment_reaction(OWNER, REPO, cid, "+1", login="alice")

    await sync(h)
    await sync(h)

    assert thumbs_rows(h) == [(cid, "thumbs_up")]
    assert embedder.texts == ["[major] [correctness]\nUnchecked null\nFile: src/index.ts"]
    assert h.memory_store is not None
    [row] = [r for r in h.memory_store.list_records(FULL) if r.outcome == "thumbs_up"]
    assert (row.owner, row.source_repo, row.finding_text, row.severity, row.category, row.file_path) == (
        OWNER,
        FULL,
        "Unchecked null",
        "major",
        "correctness",
        "src/index.ts",
    )
    assert (row.embedding_model, row.embedding_dim, row.stale) == ("test-bow", 64, False)
    assert row.review_id == h.rows("knowledge.db", "SELECT id FROM reviews")[0][0]


async def test_retired_finding_gets_no_memory_row(make: Any) -> None:
    h = make()
    forgotten, kept = seed(h, ["Forgotten finding", "Kept finding"])
    assert h.knowledge is not None
    h.knowledge.record_memory_governance(
        {"repo": FULL, "action": "forget", "actor": "maintainer", "finding_id": forgotten["comment_id"]}
    )
    for finding in (forgotten, kept):
        h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "-1", login="bob")

    await sync(h)

    assert thumbs_rows(h) == [(kept["comment_id"], "thumbs_down")]
    assert len(stored(h)) == 2  # the reactions themselves are still feedback


async def test_without_learned_memory_reactions_are_still_recorded(make: Any) -> None:
    h = make(memory=False)
    [finding] = seed(h, ["Unchecked null"])
    h.state.add_comment_reaction(OWNER, REPO, finding["comment_id"], "+1", login="alice")

    await sync(h)

    assert [r[0] for r in stored(h)] == ["+1"]
    assert summary(h)["memoryWritten"] == 0
    assert not h.logged("learned-memory update failed")


async def test_review_then_thumbs_up_reaches_the_learned_memory(make: Any) -> None:
    """End to end: the review posts a finding, a human 👍 it, the next PR event syncs it into memory."""
    h = make()
    pull = h.open_pr()
    h.script(inline("src/index.ts", 1, "[MAJOR] Unchecked constant change\n\nThis breaks callers."))
    outcome = await h.deliver(pull)
    assert (outcome.matched, outcome.succeeded) == (2, 2)
    [comment] = h.review_comments()
    assert summary(h)["candidates"] == 1  # the sync ran after the review on the same lane

    h.state.add_comment_reaction(OWNER, REPO, comment["id"], "+1", login="alice")
    await sync(h)

    assert h.memory_store is not None
    outcomes = sorted(r.outcome for r in h.memory_store.list_records(FULL) if r.finding_id == comment["id"])
    assert outcomes == ["accepted", "thumbs_up"]


def test_both_handlers_registered_by_default(harness: ReviewHarness) -> None:
    router = EventRouter(BotFilter(SLUG, []))
    register_builtin_handlers(router, harness.deps)
    keys = router.keys()
    for key in FEEDBACK_SYNC_EVENT_KEYS:
        assert keys[key][-1] == "feedback-sync"
    for key in ("pull_request.opened", "pull_request.ready_for_review", "pull_request.review_requested"):
        assert keys[key] == ["review", "feedback-sync"]
    assert keys["pull_request.closed"] == ["memory-trust", "dep-bump-merge-history"]
    assert "pull_request.synchronize" in keys and "feedback-sync" not in keys["pull_request.synchronize"]


def test_dispatch_order_is_review_mention_feedback_sync(harness: ReviewHarness, tmp_path: Path) -> None:
    """The original's order: an ``@kodiai`` comment is answered before the same event's feedback sync."""
    from kodiai.mention.state import MentionState

    state = MentionState.open(tmp_path / "jobs.db")
    try:
        router = EventRouter(BotFilter(SLUG, []))
        register_builtin_handlers(router, harness.deps, state)
        keys = router.keys()
        assert keys["issue_comment.created"] == ["mention", "feedback-sync"]
        assert keys["pull_request_review_comment.created"] == ["mention", "feedback-sync"]
        assert keys["pull_request.opened"] == ["review", "feedback-sync"]
    finally:
        state.close()
