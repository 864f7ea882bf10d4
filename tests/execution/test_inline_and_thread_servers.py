"""behaviour E5.2, E5.3 and E5.12 (inline line validation, hints, thread APPROVE check) over HTTP."""

from __future__ import annotations

from typing import Any

from exec_tool_calls import call, payload, text
from execution_helpers import KEY, OWNER, PR, REPO

from kodiai.execution.review_output import build_review_output_marker
from kodiai.execution.tools.inline_server import InlineCommentServer
from kodiai.execution.tools.thread_server import thread_tools
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState

MARKER = build_review_output_marker(KEY)


async def inline(env: Any, args: dict[str, Any], server: InlineCommentServer | None = None) -> dict[str, Any]:
    return await call((server or InlineCommentServer(env)).tools(), "create_inline_comment", args)


async def test_5_2_63_marker_appended_then_second_instance_skips(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """E5.2 #63: the first inline comment carries the marker; a second server instance with the same key
    finds it and returns skipped/already-published without posting."""
    first_env = make_env(review_output_key=KEY)
    first = payload(await inline(first_env, {"path": "src/app.py", "body": "[MAJOR] Loop", "line": 12}))
    assert first["success"] is True and first["path"] == "src/app.py" and first["line"] == 12
    [comment] = pr_state.review_comments(OWNER, REPO, PR)
    assert comment["body"] == f"[MAJOR] Loop\n\n{MARKER}"
    assert comment["commit_id"] == "abc123def456" and comment["side"] == "RIGHT"
    assert first_env.publish.published is True

    second_env = make_env(review_output_key=KEY)
    fake_gh.reset_calls()
    second = payload(await inline(second_env, {"path": "src/app.py", "body": "[MAJOR] Again", "line": 13}))
    assert second == {
        "success": True,
        "skipped": True,
        "reason": "already-published",
        "review_output_key": KEY,
        "marker_prefix": "kodiai:review-output-key",
    }
    assert len(pr_state.review_comments(OWNER, REPO, PR)) == 1
    assert fake_gh.calls_to("POST", r".*/comments") == []
    assert second_env.publish.published is False


async def test_5_2_63b_gate_scanned_once_per_instance(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """E2.3 step 2: the publication scan runs on the first call only; later calls of the run post freely."""
    env = make_env(review_output_key=KEY)
    server = InlineCommentServer(env)
    payload(await inline(env, {"path": "src/app.py", "body": "one", "line": 1}, server))
    payload(await inline(env, {"path": "src/app.py", "body": "two", "line": 2}, server))
    assert len(pr_state.review_comments(OWNER, REPO, PR)) == 2
    assert len(fake_gh.calls_to("GET", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/reviews")) == 1


async def test_5_2_63c_marker_found_in_issue_comment_or_review(make_env: Any, pr_state: PrState) -> None:
    """E2.5: the scan also finds the marker in an issue comment (the summary) and skips."""
    pr_state.add_issue_comment(OWNER, REPO, PR, f"summary\n\n{MARKER}")
    result = payload(
        await inline(make_env(review_output_key=KEY), {"path": "src/app.py", "body": "x", "line": 3})
    )
    assert result["skipped"] is True
    assert pr_state.review_comments(OWNER, REPO, PR) == []


async def test_5_2_64_inline_sanitizes_mentions(make_env: Any, pr_state: PrState) -> None:
    """E5.2 #64: create_inline_comment turns @kodiai into kodiai and reports success:true."""
    result = payload(await inline(make_env(), {"path": "src/app.py", "body": "ask @kodiai", "line": 5}))
    assert result["success"] is True
    assert [c["body"] for c in pr_state.review_comments(OWNER, REPO, PR)] == ["ask kodiai"]


async def test_5_12_inline_requires_line_or_start_line(make_env: Any, pr_state: PrState) -> None:
    """E5.12 / E2.3 step 1: neither line nor startLine (0 counts as missing) → error, nothing posted."""
    env = make_env()
    for args in ({"path": "src/app.py", "body": "x"}, {"path": "src/app.py", "body": "x", "line": 0}):
        result = await inline(env, args)
        assert result["is_error"] is True
        assert text(result).startswith("Error creating inline comment: ")
    assert pr_state.review_comments(OWNER, REPO, PR) == []
    assert env.publish.published is False


async def test_5_12_inline_multiline_payload(make_env: Any, pr_state: PrState, fake_gh: FakeGitHub) -> None:
    """E2.3 step 5: startLine sends start_line + start_side (= side) + line."""
    payload(
        await inline(
            make_env(), {"path": "src/app.py", "body": "x", "startLine": 3, "line": 6, "side": "LEFT"}
        )
    )
    [record] = fake_gh.calls_to("POST", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/comments")
    assert record.json == {
        "body": "x",
        "path": "src/app.py",
        "side": "LEFT",
        "commit_id": "abc123def456",
        "start_line": 3,
        "start_side": "LEFT",
        "line": 6,
    }


async def test_5_12_inline_rejects_negative_and_bad_side(make_env: Any, pr_state: PrState) -> None:
    """E2.3 params: line ≥ 0 and side ∈ {LEFT, RIGHT} are validated before anything is posted."""
    env = make_env()
    for bad in ({"path": "a", "body": "x", "line": -1}, {"path": "a", "body": "x", "line": 1, "side": "UP"}):
        result = await inline(env, bad)
        assert result["is_error"] is True and "Invalid arguments" in text(result)
    assert pr_state.review_comments(OWNER, REPO, PR) == []


async def test_5_12_inline_validation_failed_hint(make_env: Any, pr_state: PrState) -> None:
    """E2.3 errors: a 422 "Validation Failed" (path not in the diff) returns the not-in-diff hint."""
    result = await inline(make_env(), {"path": "nope.py", "body": "x", "line": 1})
    assert result["is_error"] is True
    message = text(result)
    assert message.startswith("Error creating inline comment: Validation Failed")
    assert "not part of the PR diff" in message


async def test_5_12_inline_not_found_hint(make_env: Any, pr_state: PrState) -> None:
    """E2.3 errors: a 404 "Not Found" (unknown PR) returns the wrong PR/repo/path hint."""
    result = await inline(make_env(pr_number=999), {"path": "src/app.py", "body": "x", "line": 1})
    assert result["is_error"] is True
    assert "Not Found" in text(result) and "check that the pull request number" in text(result)


async def test_5_3_65_reply_wrapped_in_details(make_env: Any, pr_state: PrState, fake_gh: FakeGitHub) -> None:
    """E5.3 #65: the reply goes to the given PR/comment on owner/repo, wrapped in <details>; result has
    success, comment_id and html_url."""
    parent = pr_state.add_review_comment(OWNER, REPO, PR, "original", path="src/app.py", line=4)
    env = make_env()
    result = payload(
        await call(
            thread_tools(env),
            "reply_to_pr_review_comment",
            {"pullRequestNumber": PR, "commentId": parent["id"], "body": "Good point."},
        )
    )
    assert result["success"] is True and isinstance(result["comment_id"], int) and result["html_url"]
    [record] = fake_gh.calls_to("POST", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/comments/{parent['id']}/replies")
    assert record.json["body"] == "<details>\n<summary>kodiai response</summary>\n\nGood point.\n\n</details>"
    assert env.publish.published is True


async def test_5_3_66_reply_sanitizes_mentions(make_env: Any, pr_state: PrState) -> None:
    """E5.3 #66: the reply body has @kodiai turned into kodiai."""
    parent = pr_state.add_review_comment(OWNER, REPO, PR, "original", path="src/app.py", line=4)
    payload(
        await call(
            thread_tools(make_env()),
            "reply_to_pr_review_comment",
            {"pullRequestNumber": PR, "commentId": parent["id"], "body": "Thanks @kodiai"},
        )
    )
    reply = pr_state.review_comments(OWNER, REPO, PR)[-1]
    assert "@kodiai" not in reply["body"] and "Thanks kodiai" in reply["body"]


async def test_5_12_thread_approve_requires_issues_none(make_env: Any, pr_state: PrState) -> None:
    """E5.12 / E2.2: an APPROVE reply without "Issues: none" is rejected; with it, posted (never a review)."""
    parent = pr_state.add_review_comment(OWNER, REPO, PR, "original", path="src/app.py", line=4)
    tools = thread_tools(make_env())
    args = {"pullRequestNumber": PR, "commentId": parent["id"]}
    bad = await call(tools, "reply_to_pr_review_comment", {**args, "body": "Decision: APPROVE\nLooks right"})
    assert bad["is_error"] is True and "Issues: none" in text(bad)
    good = await call(
        tools, "reply_to_pr_review_comment", {**args, "body": "Decision: APPROVE\nIssues: none"}
    )
    assert payload(good)["success"] is True
    assert len(pr_state.review_comments(OWNER, REPO, PR)) == 2
    assert pr_state.reviews(OWNER, REPO, PR) == []


async def test_5_12_update_comment_never_approves(make_env: Any, pr_state: PrState) -> None:
    """E5.12: update_comment with an APPROVE decision body edits the comment; no approval review."""
    from exec_tool_calls import call as call_tool

    from kodiai.execution.tools.comment_server import comment_tools

    existing = pr_state.add_issue_comment(OWNER, REPO, PR, "placeholder")
    body = "<details>\n<summary>kodiai response</summary>\n\nDecision: APPROVE\nIssues: none\n\n</details>"
    result = await call_tool(
        comment_tools(make_env()), "update_comment", {"commentId": existing["id"], "body": body}
    )
    assert payload(result)["comment_id"] == existing["id"]
    assert pr_state.reviews(OWNER, REPO, PR) == []
    assert pr_state.issue_comments(OWNER, REPO, PR)[0]["body"] == body
