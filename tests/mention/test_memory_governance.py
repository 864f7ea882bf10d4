"""``@kodiai forget`` and ``@kodiai remember:`` (issue 14): a maintainer governs learned memory from GitHub.

Real router and lanes, clones of a bare repo, the fake GitHub over HTTP through PyGithub (permission from
``GET …/collaborators/{user}/permission``), a real SQLite knowledge store and a real LanceDB memory store.
The model is never asked: these commands are answered by the handler itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kodiai.learning.setup import finding_memory_text
from kodiai.learning.types import LearningMemoryRecord
from kodiai.mention.memory_commands import parse_memory_command
from kodiai.storage.knowledge_models import FindingRecord, ReviewRecord
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.handler_fixtures import mention_harness
from support.mention_harness import MentionHarness
from support.review_harness import OWNER, REPO

FULL = f"{OWNER}/{REPO}"
TITLE = "Division by zero is not handled"


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    with mention_harness(tmp_path, fake_server, clear="all") as h:
        yield h


def finding_thread(mh: MentionHarness) -> tuple[dict[str, Any], int]:
    """PR #101 with a finding posted as a review comment, its knowledge row and its learned memories."""
    pull = mh.open_pr()
    parent = mh.state.add_review_comment(OWNER, REPO, 101, f"**{TITLE}**", path="src/app.ts", line=42)
    assert mh.knowledge is not None and mh.memory_store is not None
    review_id = mh.knowledge.record_review(ReviewRecord(repo=FULL, pr_number=101))
    mh.knowledge.record_findings(
        [
            FindingRecord(
                review_id=review_id,
                file_path="src/app.ts",
                severity="major",
                category="correctness",
                confidence=80,
                title=TITLE,
                comment_id=parent["id"],
                comment_surface="pull_request_review_comment",
                review_output_key="key",
            )
        ]
    )
    # A human 👎 on GitHub (feedback sync runs on every PR event and keeps the 👎 memory row in step).
    mh.state.add_comment_reaction(OWNER, REPO, parent["id"], "-1", login="bob")
    for outcome in ("accepted", "thumbs_down"):
        write_memory(mh, parent["id"], outcome)
    return pull, parent["id"]


def write_memory(mh: MentionHarness, finding_id: int, outcome: str) -> None:
    assert mh.memory_store is not None
    text = finding_memory_text("major", "correctness", TITLE, "src/app.ts")
    record = LearningMemoryRecord(
        repo=FULL,
        owner=OWNER,
        finding_id=finding_id,
        review_id=1,
        source_repo=FULL,
        finding_text=TITLE,
        severity="major",
        category="correctness",
        file_path="src/app.ts",
        outcome=outcome,
        embedding_model=mh.embedder.model,
        embedding_dim=mh.embedder.dimensions,
    )
    mh.memory_store.write_memory(record, mh.embedder.generate(text, "document"))


def memories_of(mh: MentionHarness, finding_id: int | None) -> list[LearningMemoryRecord]:
    assert mh.memory_store is not None
    return [r for r in mh.memory_store.list_records(FULL) if r.finding_id == finding_id]


def thread_replies(mh: MentionHarness) -> list[str]:
    return [str(c["body"]) for c in mh.review_comments() if c.get("in_reply_to_id")]


async def forget(
    mh: MentionHarness, pull: dict[str, Any], root: int, author: str, body: str = "@kodiai forget"
) -> None:
    trigger = mh.state.add_review_comment(
        OWNER, REPO, 101, body, path="src/app.ts", line=42, in_reply_to_id=root
    )
    await mh.inline_mention(
        pull, body, author=author, comment_id=trigger["id"], in_reply_to=root, path="src/app.ts", line=42
    )


@pytest.mark.parametrize(
    ("question", "action", "text"),
    [
        ("forget", "forget", ""),
        ("Forget this.", "forget", ""),
        ("  forget it!  ", "forget", ""),
        ("remember: we validate at the API edge", "remember", "we validate at the API edge"),
        ("Remember:   multi\nline  ", "remember", "multi\nline"),
        ("remember:", "remember", ""),
    ],
)
def test_commands_are_recognised(question: str, action: str, text: str) -> None:
    command = parse_memory_command(question)
    assert command is not None and (command.action, command.text) == (action, text)


@pytest.mark.parametrize(
    "question",
    ["forget about the cache, what does this do?", "please remember this", "why?", "remember that"],
)
def test_other_questions_are_not_commands(question: str) -> None:
    assert parse_memory_command(question) is None


async def test_maintainer_forget_retires_every_outcome_and_records_who(mh: MentionHarness) -> None:
    pull, root = finding_thread(mh)
    mh.state.set_permission(OWNER, REPO, "maya", "maintain")
    await forget(mh, pull, root, "maya")
    assert memories_of(mh, root) == []
    assert mh.knowledge is not None
    [entry] = mh.knowledge.list_memory_governance(FULL)
    assert (entry.action, entry.actor, entry.finding_id, entry.removed, entry.text) == (
        "forget",
        "maya",
        root,
        2,
        TITLE,
    )
    assert entry.comment_url is not None and entry.comment_url.startswith(
        f"https://github.com/{FULL}/pull/101#discussion_r"
    )
    assert entry.created_at
    assert mh.knowledge.retired_findings(FULL) == {root}
    assert mh.executor.contexts == []  # the model was never asked
    # Later syncs keep it retired: the 👎 is still on GitHub, but no memory row comes back.
    await mh.mention("@kodiai what changed?", author="maya")
    assert memories_of(mh, root) == []
    [reply] = thread_replies(mh)[-1:]
    assert reply.startswith("Forgotten.") and "@maya" in reply


async def test_forget_without_write_access_is_refused_and_changes_nothing(mh: MentionHarness) -> None:
    pull, root = finding_thread(mh)
    mh.state.set_permission(OWNER, REPO, "tom", "triage")
    await forget(mh, pull, root, "tom")
    assert [r.outcome for r in memories_of(mh, root)] == ["accepted", "thumbs_down"]
    assert mh.knowledge is not None and mh.knowledge.list_memory_governance() == []
    reply = thread_replies(mh)[-1]
    assert reply.startswith("Sorry @tom, only people with write access") and "Nothing was changed" in reply


async def test_permission_lookup_failure_fails_closed(mh: MentionHarness) -> None:
    pull, root = finding_thread(mh)
    mh.fake.fail(404, method="GET", path=r"/collaborators/.*/permission", times=5)
    await forget(mh, pull, root, "maya")
    assert len(memories_of(mh, root)) == 2
    assert "couldn't check your permission" in thread_replies(mh)[-1]


async def test_second_forget_says_already_forgotten(mh: MentionHarness) -> None:
    pull, root = finding_thread(mh)
    mh.state.set_permission(OWNER, REPO, "maya", "admin")
    await forget(mh, pull, root, "maya")
    await forget(mh, pull, root, "maya", body="@kodiai forget this")
    assert "already forgotten (by @maya" in thread_replies(mh)[-1]
    assert mh.knowledge is not None and len(mh.knowledge.list_memory_governance()) == 1


async def test_forget_outside_a_finding_thread(mh: MentionHarness) -> None:
    pull = mh.open_pr()
    mh.state.set_permission(OWNER, REPO, "maya", "write")
    await mh.mention("@kodiai forget", author="maya")
    [reply] = [str(c["body"]) for c in mh.issue_comments()]
    assert "works as a reply in the review thread" in reply
    # A thread that is not one of the bot's findings.
    root = mh.state.add_review_comment(OWNER, REPO, 101, "human note", path="src/app.ts", line=3)
    await forget(mh, pull, root["id"], "maya")
    assert "not one of my review findings" in thread_replies(mh)[-1]
    assert mh.knowledge is not None and mh.knowledge.list_memory_governance() == []


async def test_maintainer_remember_adds_a_repo_memory_with_provenance(mh: MentionHarness) -> None:
    mh.open_pr()
    mh.state.set_permission(OWNER, REPO, "maya", "write")
    await mh.mention("@kodiai remember: money is always integer cents, never floats", author="maya")
    [note] = memories_of(mh, None)
    assert note.finding_text == "money is always integer cents, never floats"
    assert (note.outcome, note.category, note.source_repo) == ("accepted", "team-note", FULL)
    assert mh.knowledge is not None
    [entry] = mh.knowledge.list_memory_governance(FULL)
    assert (entry.action, entry.actor, entry.memory_id, entry.pr_number) == ("remember", "maya", note.id, 101)
    assert entry.comment_url is not None and "#issuecomment-" in entry.comment_url
    [reply] = [str(c["body"]) for c in mh.issue_comments()]
    assert f"memory #{note.id}, added by @maya" in reply
    assert "> money is always integer cents, never floats" in reply


async def test_remember_refused_for_readers_and_empty_text_explained(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai remember: always use tabs", author="randall")  # unknown user: read
    await mh.mention("@kodiai remember:", author="randall")
    assert memories_of(mh, None) == []
    first, second = [str(c["body"]) for c in mh.issue_comments()]
    assert first.startswith("Sorry @randall")
    assert "Tell me what to remember after the colon" in second


async def test_remember_on_an_issue_is_refused(mh: MentionHarness) -> None:
    mh.open_pr()  # pushes the repository's main branch
    mh.state.set_permission(OWNER, REPO, "maya", "write")
    await mh.mention("@kodiai remember: x", author="maya", on_pr=False, number=7)
    assert memories_of(mh, None) == []
    assert any("works on a pull request" in str(c["body"]) for c in mh.issue_comments(7))
