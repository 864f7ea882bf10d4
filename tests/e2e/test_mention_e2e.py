"""A mention through a running ``kodiai serve`` (registered by default): a question on a PR is answered on
the PR by the real Claude Code CLI (the model faked at the Messages API), and the bot's own comments are
never answered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from stack import INSTALLATION, OWNER, REPO
from test_review_e2e import COMMENT, Stack, make_stack

from support.fake_anthropic import Text, ToolUse
from support.gitrepo import git

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with make_stack(tmp_path_factory.mktemp("mention")) as built:
        yield built


def comment_payload(
    number: int, body: str, *, author: str = "alice", author_type: str = "User"
) -> dict[str, Any]:
    base_repo = {"name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER}}
    return {
        "action": "created",
        "issue": {
            "number": number,
            "title": "Add a div helper",
            "user": {"login": author, "type": "User"},
            "pull_request": {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{number}"},
        },
        "comment": {
            "id": 7000 + number,
            "body": body,
            "user": {"login": author, "type": author_type},
            "created_at": "2026-11-23T12:00:00Z",
        },
        "repository": {**base_repo, "id": 7, "private": False, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": author_type},
    }


def open_pr(stack: Stack, number: int) -> None:
    """A PR as GitHub exposes it to a clone of the base repository: ``refs/pull/<n>/head``."""
    git("checkout", "-q", "main", cwd=stack.repo.work)
    head = stack.repo.add_pull_head(number, {"src/app.py": "def div(a, b):\n    return a / b\n"})
    stack.state.add_pull(OWNER, REPO, number, head_sha=head, head_ref=f"m-{number}", base_sha=stack.base_sha)


def test_a_question_on_a_pr_is_answered_on_the_pr(stack: Stack) -> None:
    open_pr(stack, 20)
    stack.plan.turns[-1] = [
        ToolUse(COMMENT, {"issueNumber": 20, "body": "The check guards against b == 0."}),
        Text("Answered."),
    ]
    response = stack.server.deliver(
        comment_payload(20, "@kodiai why is this check needed?"), event="issue_comment"
    )
    assert response.status_code == 200
    stack.server.wait_for_log("Job execution completed", jobType="mention")
    answers = [c["body"] for c in stack.comments(20) if "guards against b == 0" in c["body"]]
    assert len(answers) == 1
    (request, *_) = stack.model.main_requests[-2:]
    assert "why is this check needed?" in request.user_text
    assert stack.rows(
        "telemetry.db", "SELECT event_type, conclusion FROM executions WHERE pr_number = 20"
    ) == [("issue_comment.created", "success")]


def test_the_bots_own_comment_is_not_answered(stack: Stack) -> None:
    before = len(stack.model.main_requests)
    payload = comment_payload(20, "@kodiai ping", author="kodiai[bot]", author_type="Bot")
    assert stack.server.deliver(payload, event="issue_comment").status_code == 200
    stack.server.wait_for_log("Event filtered before dispatch", sender="kodiai[bot]")
    assert len(stack.model.main_requests) == before
