"""The learning loop through a running ``kodiai serve`` (issue 14): a review posts a finding; a human 👎 on
it is synced on the next PR event; the next PR retrieves the finding and its prompt says the team rejected
it; ``@kodiai forget`` from a user without write access is refused and changes nothing; from a maintainer
it retires the memory, and the PR after that no longer retrieves it.

Real process, real LanceDB and SQLite files, the real Claude Code CLI against the fake Messages API, the
fake GitHub over HTTP (reactions, collaborator permissions) with git over smart HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from stack import INSTALLATION, OWNER, REPO
from test_review_e2e import Stack, finding_turns, make_stack

from kodiai.learning.memory_store import open_memory_store
from support.gitrepo import git

pytestmark = pytest.mark.slow

TITLE = "Division by zero when b is 0"
DIV = "def div(a, b):\n    return a / b\n"
BASE = "def add(a, b):\n    return a + b\n\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with make_stack(tmp_path_factory.mktemp("loop")) as built:
        yield built


def memories(stack: Stack) -> list[tuple[int | None, str]]:
    store = open_memory_store(str(stack.tmp / "memory.lance"), 384, table_name="learning_memories_d384")
    return [(r.finding_id, r.outcome) for r in store.list_records("acme/widgets")]


def review(stack: Stack, number: int, files: dict[str, str], title: str) -> dict[str, Any]:
    payload = stack.open_pr(number, files, title)
    assert stack.server.deliver(payload).status_code == 200
    stack.finished(number)
    return payload


def thread_reply(stack: Stack, pr: dict[str, Any], root: int, body: str, author: str) -> int:
    """A human's reply in the finding's review thread, delivered as GitHub would."""
    comment = stack.state.add_review_comment(
        OWNER, REPO, 1, body, path="src/app.py", line=2, in_reply_to_id=root
    )
    payload = {
        "action": "created",
        "pull_request": pr["pull_request"],
        "comment": {
            "id": comment["id"],
            "body": body,
            "user": {"login": author, "type": "User"},
            "created_at": "2026-11-23T12:00:00Z",
            "path": "src/app.py",
            "line": 2,
            "diff_hunk": "@@ -1,2 +1,5 @@\n+def div(a, b):\n+    return a / b",
            "in_reply_to_id": root,
        },
        "repository": pr["repository"],
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": "User"},
    }
    assert stack.server.deliver(payload, event="pull_request_review_comment").status_code == 200
    return int(comment["id"])


def mention_jobs_done(stack: Stack, count: int) -> None:
    """Wait until ``count`` mention jobs finished (their replies posted)."""
    stack.server.wait_for_log("Job execution completed", jobType="mention", count=count)


def replies_to(stack: Stack, comment_id: int) -> list[str]:
    return [
        c["body"] for c in stack.inline(1) if c.get("in_reply_to_id") and c["body"] and c["id"] > comment_id
    ]


def test_a_thumbs_down_changes_what_the_next_pr_is_told_and_forget_retires_it(stack: Stack) -> None:
    # 1. A review posts a finding; its memory is learned.
    stack.plan.turns[1] = finding_turns("src/app.py", 2, TITLE)
    pr1 = review(stack, 1, {"src/app.py": BASE + DIV}, "Add a div helper")
    (finding,) = stack.inline(1)
    root = int(finding["id"])
    assert memories(stack) == [(root, "accepted")]
    git("push", "-q", "origin", "pr-1:refs/pull/1/head", cwd=stack.repo.work)  # GitHub's PR ref

    # 2. A teammate's 👎 (and the bot's own 👍, which must not count); the next PR event syncs it.
    stack.state.set_permission(OWNER, REPO, "bob", "write")
    stack.state.add_comment_reaction(OWNER, REPO, root, "-1", login="bob")
    stack.state.add_comment_reaction(OWNER, REPO, root, "+1", login="kodiai[bot]", user_type="Bot")
    review(stack, 2, {"docs/notes.md": "Notes.\n"}, "Add notes")
    stack.server.wait_for_log("Job execution completed", jobType="feedback-sync", prNumber=2)
    assert stack.rows(
        "knowledge.db", "SELECT comment_id, reaction_content, reactor_login FROM feedback_reactions"
    ) == [(root, "-1", "bob")]
    assert sorted(memories(stack)) == [(root, "accepted"), (root, "thumbs_down")]

    # 3. The next PR retrieves the finding, and its prompt says the team rejected it.
    review(
        stack,
        3,
        {"src/app.py": BASE + "def ratio(a, b):\n    return a / b\n"},
        "Add a ratio helper dividing a by b",
    )
    (prompt, *_) = stack.plan.prompts[3]
    assert "## Similar Prior Findings (Learning Context)" in prompt
    precedent, rejected = prompt.split("### Rejected by the team")
    assert TITLE not in precedent
    assert TITLE in rejected and "team feedback: rejected" in rejected
    assert stack.rows(
        "telemetry.db",
        "SELECT feedback_negative, feedback_rejected FROM retrieval_quality WHERE pr_number = 3",
    ) == [(1, 1)]

    # 4. `@kodiai forget` from someone without write access: refused politely, nothing changes.
    stack.state.set_permission(OWNER, REPO, "randall", "read")
    asked = thread_reply(stack, pr1, root, "@kodiai forget", "randall")
    stack.server.wait_for_log("Memory governance command", result="refused")
    mention_jobs_done(stack, 1)  # the decision is logged before its reply is posted
    assert any(r.startswith("Sorry @randall") for r in replies_to(stack, asked))
    assert sorted(memories(stack)) == [(root, "accepted"), (root, "thumbs_down")]
    assert stack.rows("knowledge.db", "SELECT COUNT(*) FROM memory_governance") == [(0,)]

    # 5. From a maintainer: retired, acknowledged in the thread, recorded with who and when.
    stack.state.set_permission(OWNER, REPO, "maya", "maintain")
    asked = thread_reply(stack, pr1, root, "@kodiai forget", "maya")
    stack.server.wait_for_log("Memory governance command", result="forgotten")
    mention_jobs_done(stack, 2)
    assert any(r.startswith("Forgotten.") for r in replies_to(stack, asked))
    assert memories(stack) == []
    ((action, actor, finding_id, removed, when),) = stack.rows(
        "knowledge.db", "SELECT action, actor, finding_id, removed, created_at FROM memory_governance"
    )
    assert (action, actor, finding_id, removed) == ("forget", "maya", root, 2) and when

    # 6. The PR after that no longer retrieves it (and the 👎 still on GitHub does not bring it back).
    review(
        stack,
        4,
        {"src/app.py": BASE + "def quot(a, b):\n    return a / b\n"},
        "Add a quotient helper dividing a by b",
    )
    stack.server.wait_for_log("Job execution completed", jobType="feedback-sync", prNumber=4)
    (prompt, *_) = stack.plan.prompts[4]
    assert TITLE not in prompt
    assert memories(stack) == []
