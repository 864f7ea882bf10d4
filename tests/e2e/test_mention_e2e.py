"""A mention through a running ``kodiai serve`` (registered by default): a question on a PR is answered on
the PR by the real Claude Code CLI (the model faked at the Messages API), and the bot's own comments are
never answered."""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from stack import INSTALLATION, OWNER, REPO
from test_review_e2e import COMMENT, Stack, make_stack

from kodiai.config.loader import FAIL_CLOSED_LOG_MESSAGE
from support.fake_anthropic import MainRequest, Text, ToolUse
from support.gitrepo import git

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One server for the module (its restarts included); learned memory off: no mention here retrieves or
    learns, and the memory store and the local model cost each start seconds of CPU."""
    with make_stack(tmp_path_factory.mktemp("mention"), EMBEDDING_PROVIDER="none") as built:
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


WORKDIR_RE = re.compile(r"Primary working directory: (/[^\s\"\\]+)")


def workdir(request: MainRequest) -> str:
    """The session's cwd as the CLI tells the model (the clone the handler made)."""
    match = WORKDIR_RE.search(json.dumps(request.body))
    assert match, "the CLI names its working directory"
    return match.group(1)


def write_file(name: str, content: str) -> Any:
    return lambda request: ToolUse("Write", {"file_path": f"{workdir(request)}/{name}", "content": content})


WRITE_CONFIG = "write:\n  enabled: true\n"


def same_repo_pr(stack: Stack, number: int) -> str:
    """A same-repository PR by ``alice``, who has write access (so her head ``.kodiai.yml`` governs and
    she may use write mode): branch ``m-<n>`` and GitHub's ``refs/pull/<n>/head`` on the same commit."""
    branch = f"m-{number}"
    git("checkout", "-q", "main", cwd=stack.repo.work)
    head = stack.repo.commit({".kodiai.yml": WRITE_CONFIG, "src/app.py": "x = 1\n"}, "pr", branch=branch)
    git("push", "-q", "origin", f"{branch}:refs/pull/{number}/head", cwd=stack.repo.work)
    stack.state.set_permission(OWNER, REPO, "alice", "write")
    stack.state.add_pull(
        OWNER, REPO, number, head_sha=head, head_ref=branch, base_sha=stack.base_sha, author="alice"
    )
    return branch


def test_an_allow_list_the_config_cannot_read_lets_nobody_in(stack: Stack) -> None:
    """Fail closed through ``kodiai serve``: ``mention.allowedUsers: alice`` (a string, not a list) in the
    governing ``.kodiai.yml`` keeps the safe value, nobody, where a section reset would let everyone in."""
    branch, number = "m-34", 34
    git("checkout", "-q", "main", cwd=stack.repo.work)
    config = "mention:\n  allowedUsers: alice\n"
    head = stack.repo.commit({".kodiai.yml": config, "src/app.py": "y = 2\n"}, "pr", branch=branch)
    git("push", "-q", "origin", f"{branch}:refs/pull/{number}/head", cwd=stack.repo.work)
    stack.state.add_pull(
        OWNER, REPO, number, head_sha=head, head_ref=branch, base_sha=stack.base_sha, author="alice"
    )
    before = len(stack.model.main_requests)
    payload = comment_payload(number, "@kodiai what does this change?", author="mallory")
    assert stack.server.deliver(payload, event="issue_comment").status_code == 200
    stack.server.wait_for_log(
        "Mention author not in allowedUsers; skipping", skipReason="user-not-allowlisted"
    )
    warned = [
        line
        for line in stack.server.log_lines()
        if line.get("msg") == FAIL_CLOSED_LOG_MESSAGE and line.get("section") == "mention"
    ]
    assert warned and warned[0]["failedClosed"] == ["mention.allowedUsers: nobody may mention the bot"]
    assert len(stack.model.main_requests) == before and stack.comments(number) == []


def branch_log(stack: Stack, branch: str) -> list[str]:
    out = git("--git-dir", str(stack.repo.path), "log", "--format=%B%x00", branch, cwd=stack.tmp)
    return [m.strip() for m in out.split("\x00") if m.strip()]


def test_apply_on_a_same_repo_pr_pushes_one_commit_to_its_branch(stack: Stack) -> None:
    branch = same_repo_pr(stack, 21)
    stack.plan.turns[-1] = [write_file("src/added.py", "y = 2\n"), Text("Added the file.")]
    before = len(branch_log(stack, branch))
    payload = comment_payload(21, "@kodiai apply: add src/added.py with y = 2")
    stack.server.deliver(payload, event="issue_comment")
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=21)
    log = branch_log(stack, branch)
    assert len(log) == before + 1
    assert (
        "kodiai-write-output-key: kodiai-write-output:v1:inst-42:acme/widgets:pr-21:comment-7021:keyword-apply"
        in log[0]
    )
    shown = git("--git-dir", str(stack.repo.path), "show", f"{branch}:src/added.py", cwd=stack.tmp)
    assert shown == "y = 2"
    assert [
        c for c in stack.comments(21) if "Updated PR: https://github.com/acme/widgets/pull/21" in c["body"]
    ]

    # the same signed body again under a new delivery id: skipped at intake as a replay
    stack.server.deliver(payload, event="issue_comment")
    stack.server.wait_for_log("Replayed webhook body skipped: same body as an earlier delivery")
    # the same comment in a body that differs (so it passes intake): the write key and the marker on the
    # branch still keep it from being pushed twice
    again = {**payload, "comment": {**payload["comment"], "updated_at": "2026-11-23T12:00:01Z"}}
    stack.server.deliver(again, event="issue_comment")
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=21, count=2)
    assert len(branch_log(stack, branch)) == before + 1


def test_a_staged_token_is_refused_and_nothing_is_pushed(stack: Stack) -> None:
    branch = same_repo_pr(stack, 22)
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    stack.plan.turns[-1] = [write_file("src/config.py", f'TOKEN = "{token}"\n'), Text("Done.")]
    before = len(branch_log(stack, branch))
    stack.server.deliver(comment_payload(22, "@kodiai apply: add the token"), event="issue_comment")
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=22)
    assert len(branch_log(stack, branch)) == before
    (refusal,) = [c["body"] for c in stack.comments(22) if "Write request refused." in c["body"]]
    assert "Reason: write-policy-secret-detected" in refusal and token not in refusal
    assert token not in stack.server.log_text()


REPLY = "mcp__reviewCommentThread__reply_to_pr_review_comment"


def review_comment_payload(
    number: int, comment_id: int, parent_id: int, body: str, head: str, branch: str
) -> dict[str, Any]:
    base_repo = {"name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER}}
    return {
        "action": "created",
        "comment": {
            "id": comment_id,
            "body": body,
            "user": {"login": "alice", "type": "User"},
            "created_at": "2026-11-23T12:00:00Z",
            "path": "src/app.py",
            "line": 1,
            "diff_hunk": "@@ -1 +1 @@\n-x = 0\n+x = 1",
            "in_reply_to_id": parent_id,
        },
        "pull_request": {
            "number": number,
            "title": "Thread",
            "user": {"login": "alice", "type": "User"},
            "head": {"ref": branch, "sha": head, "repo": base_repo},
            "base": {"ref": "main", "sha": "0" * 40, "repo": base_repo},
        },
        "repository": {**base_repo, "id": 7, "private": False, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": {"login": "alice", "type": "User"},
    }


def test_thread_replies_and_the_turn_limit_survive_a_restart(stack: Stack) -> None:
    """A question in a review thread is answered in that thread; with ``maxTurnsPerPr: 1`` the next one
    gets the limit reply, also after the server restarted (the count lives in the jobs database). The
    second trigger comment is unknown to the fake GitHub, so its thread reply fails and the limit reply
    falls back to a top-level comment, as R-post does."""
    branch = f"m-{23}"
    git("checkout", "-q", "main", cwd=stack.repo.work)
    config = "mention:\n  conversation:\n    maxTurnsPerPr: 1\n"
    head = stack.repo.commit({".kodiai.yml": config, "src/app.py": "x = 1\n"}, "pr", branch=branch)
    git("push", "-q", "origin", f"{branch}:refs/pull/23/head", cwd=stack.repo.work)
    # a writer's same-repo PR: its head .kodiai.yml (maxTurnsPerPr: 1) governs
    stack.state.set_permission(OWNER, REPO, "alice", "write")
    stack.state.add_pull(
        OWNER, REPO, 23, head_sha=head, head_ref=branch, base_sha=stack.base_sha, author="alice"
    )
    parent = stack.state.add_review_comment(OWNER, REPO, 23, "[MINOR] x changed", path="src/app.py", line=1)

    def answer(request: MainRequest) -> Any:
        return ToolUse(REPLY, {"pullRequestNumber": 23, "commentId": parent["id"], "body": "Because of y."})

    stack.plan.turns[-1] = [answer, Text("Replied.")]
    # the first trigger exists on GitHub: the reply tool checks the parent shares its thread (pinned target)
    trigger = stack.state.add_review_comment(
        OWNER, REPO, 23, "@kodiai why x?", path="src/app.py", line=1, in_reply_to_id=parent["id"]
    )
    first = review_comment_payload(23, trigger["id"], parent["id"], "@kodiai why x?", head, branch)
    stack.server.deliver(first, event="pull_request_review_comment")
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=23)
    replies = [
        c for c in stack.inline(23) if c.get("in_reply_to_id") == parent["id"] and c["id"] != trigger["id"]
    ]
    assert len(replies) == 1 and "Because of y." in replies[0]["body"]

    stack.server.stop()
    stack.server.start()
    second = review_comment_payload(23, 9102, parent["id"], "@kodiai and z?", head, branch)
    requests_before = len(stack.model.main_requests)
    stack.server.deliver(second, event="pull_request_review_comment")
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=23, count=2)
    limits = [
        c
        for c in stack.inline(23) + stack.comments(23)
        if "Conversation limit reached (1 turns per PR)." in c["body"]
    ]
    assert len(limits) == 1
    assert len(stack.model.main_requests) == requests_before  # the model was not asked


def test_apply_replayed_after_kill_9_pushes_one_commit(stack: Stack) -> None:
    """The server dies while the model is working on an ``apply:``; the restarted server replays the
    delivery from the job journal, takes its own write key back (no "already in progress" for 30 minutes)
    and pushes exactly one commit. (Last in the module: it kills the module's server, then restarts it.)"""
    branch = same_repo_pr(stack, 24)
    before = len(branch_log(stack, branch))
    working = threading.Event()
    release = threading.Event()

    def slow_second_turn(_request: MainRequest) -> Any:
        working.set()
        release.wait(60)
        return Text("Added.")

    stack.plan.turns[-1] = [write_file("src/replayed.py", "z = 3\n"), slow_second_turn]
    payload = comment_payload(24, "@kodiai apply: add src/replayed.py")
    assert stack.server.deliver(payload, event="issue_comment", delivery="apply-24").status_code == 200
    assert working.wait(120)
    stack.server.stop(signal.SIGKILL)
    stack.plan.turns[-1] = [write_file("src/replayed.py", "z = 3\n"), Text("Added.")]
    release.set()

    earlier = len(stack.server.log_lines())  # the lines of the earlier starts
    stack.server.start()
    stack.server.wait_for_log("Replaying unfinished delivery from job journal")
    replayed = [
        e
        for e in stack.server.log_lines()[earlier:]
        if e.get("msg") == "Replaying unfinished delivery from job journal"
    ]
    assert [e["deliveryId"] for e in replayed] == ["apply-24"]
    stack.server.wait_for_log("Job execution completed", jobType="mention", prNumber=24)
    log = branch_log(stack, branch)
    assert len(log) == before + 1 and "kodiai-write-output-key:" in log[0]
    assert not [c for c in stack.comments(24) if "already in progress" in c["body"]]
    assert [c for c in stack.comments(24) if "Updated PR:" in c["body"]]
