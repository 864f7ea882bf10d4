"""Paced, retried GitHub writes without duplicates, against the fake GitHub server's injected faults."""

from __future__ import annotations

from typing import Any

import pytest
from exec_tool_calls import call, payload, text
from execution_helpers import KEY, OWNER, PR, REPO, make_client

from kodiai.execution.pacing import PacingPolicy, WritePacer, advised_wait
from kodiai.execution.review_output import build_review_output_marker
from kodiai.execution.tools import PublishFlag, ToolEnv
from kodiai.execution.tools.comment_server import comment_tools
from kodiai.execution.tools.inline_server import InlineCommentServer
from kodiai.execution.tools.thread_server import thread_tools
from kodiai.github.rest import GitHubApiError
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState

COMMENTS = rf"/repos/{OWNER}/{REPO}/issues/{PR}/comments"
REVIEW_COMMENTS = rf"/repos/{OWNER}/{REPO}/pulls/{PR}/comments"


class FakeClock:
    """Monotonic time that only moves when the pacer sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def clocked_env(fake_gh: FakeGitHub, clock: FakeClock, policy: PacingPolicy, **kwargs: Any) -> ToolEnv:
    return ToolEnv(
        owner=OWNER,
        repo=REPO,
        client_factory=lambda: make_client(fake_gh),
        pacer=WritePacer(policy, sleep=clock.sleep, monotonic=clock.monotonic),
        publish=PublishFlag(),
        bot_handles=["kodiai"],
        pr_number=PR,
        **kwargs,
    )


async def test_secondary_rate_limit_waits_retry_after_and_posts_once(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """403 + Retry-After on a comment POST: wait the advised seconds, re-check, post exactly once."""
    fake_gh.fail_secondary_rate_limit(retry_after=7, path=COMMENTS)
    fake_gh.calls_to("POST", COMMENTS)
    result = await call(comment_tools(make_env()), "create_comment", {"issueNumber": PR, "body": "hello"})
    assert payload(result)["success"] is True
    assert sleeps.waits == [7.0]
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["hello"]
    posts = fake_gh.calls_to("POST", COMMENTS)
    assert [p.faulted for p in posts] == [True, False]


async def test_429_primary_limit_waits_until_reset(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """429 with X-RateLimit-Remaining: 0 waits until X-RateLimit-Reset, then posts once."""
    fake_gh.fail_primary_rate_limit(reset_in=30, status=429, path=COMMENTS)
    payload(await call(comment_tools(make_env()), "create_comment", {"issueNumber": PR, "body": "hi"}))
    assert len(sleeps.waits) == 1 and 25 <= sleeps.waits[0] <= 31
    assert len(pr_state.issue_comments(OWNER, REPO, PR)) == 1


async def test_lost_response_on_inline_comment_is_not_reposted(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """A 502 after the comment was actually created: the probe finds it (marker body) and no duplicate
    is posted; the tool reports the existing comment."""
    pr_state.lose_next_response("POST", REVIEW_COMMENTS)
    env = make_env(review_output_key=KEY)
    result = payload(
        await call(
            InlineCommentServer(env).tools(),
            "create_inline_comment",
            {"path": "src/app.py", "body": "x", "line": 2},
        )
    )
    [comment] = pr_state.review_comments(OWNER, REPO, PR)
    assert comment["body"] == f"x\n\n{build_review_output_marker(KEY)}"
    assert result["comment_id"] == comment["id"]
    assert len(fake_gh.calls_to("POST", REVIEW_COMMENTS)) == 1
    assert sleeps.waits == [2.0]
    assert env.publish.published is True


async def test_lost_response_on_issue_comment_and_reply_not_duplicated(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """Same for create_comment and thread replies: one write lands, no second POST."""
    pr_state.lose_next_response("POST", COMMENTS, status=500)
    payload(await call(comment_tools(make_env()), "create_comment", {"issueNumber": PR, "body": "summary"}))
    assert len(pr_state.issue_comments(OWNER, REPO, PR)) == 1
    parent = pr_state.add_review_comment(OWNER, REPO, PR, "original", path="src/app.py", line=1)
    replies = rf"{REVIEW_COMMENTS}/{parent['id']}/replies"
    pr_state.lose_next_response("POST", replies, status=503)
    args = {"pullRequestNumber": PR, "commentId": parent["id"], "body": "ack"}
    payload(await call(thread_tools(make_env()), "reply_to_pr_review_comment", args))
    assert len([c for c in pr_state.review_comments(OWNER, REPO, PR) if c.get("in_reply_to_id")]) == 1
    assert len(fake_gh.calls_to("POST", replies)) == 1


async def test_lost_response_on_approval_not_duplicated(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """An approval review whose response was lost is found by the probe, not submitted twice."""
    reviews = rf"/repos/{OWNER}/{REPO}/pulls/{PR}/reviews"
    pr_state.lose_next_response("POST", reviews)
    body = "<details>\n<summary>kodiai response</summary>\n\nDecision: APPROVE\nIssues: none\n\n</details>"
    result = payload(
        await call(comment_tools(make_env()), "create_comment", {"issueNumber": PR, "body": body})
    )
    assert result["approved"] is True
    assert len(pr_state.reviews(OWNER, REPO, PR)) == 1
    assert len(fake_gh.calls_to("POST", reviews)) == 1


async def test_many_inline_comments_are_spaced(fake_gh: FakeGitHub, pr_state: PrState) -> None:
    """A large review's inline comments are spaced min_write_interval apart (secondary-limit pacing)."""
    clock = FakeClock()
    env = clocked_env(fake_gh, clock, PacingPolicy(min_write_interval=1.0), review_output_key=KEY)
    server = InlineCommentServer(env)
    for line in range(1, 6):
        payload(
            await call(
                server.tools(),
                "create_inline_comment",
                {"path": "src/app.py", "body": f"c{line}", "line": line},
            )
        )
    assert clock.sleeps == [1.0, 1.0, 1.0, 1.0]
    assert len(pr_state.review_comments(OWNER, REPO, PR)) == 5


async def test_non_retryable_error_is_not_retried(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """A 403 without rate-limit signals (a permission problem) fails at once; nothing is posted."""
    fake_gh.fail(
        403, path=COMMENTS, method="POST", body={"message": "Resource not accessible by integration"}
    )
    env = make_env()
    result = await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "x"})
    assert result["is_error"] is True and "Resource not accessible by integration" in text(result)
    assert sleeps.waits == [] and pr_state.issue_comments(OWNER, REPO, PR) == []
    assert env.publish.published is False


async def test_retries_exhausted_reports_error(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """Four rate-limited attempts in a row: the tool returns the error, publish stays false."""
    fake_gh.fail_secondary_rate_limit(times=4, retry_after=1, path=COMMENTS)
    env = make_env()
    result = await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "x"})
    assert result["is_error"] is True and "secondary rate limit" in text(result)
    assert sleeps.waits == [1.0, 1.0, 1.0]
    assert env.publish.published is False


async def test_wait_beyond_limit_is_not_attempted(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub, sleeps: Any
) -> None:
    """An advised wait longer than max_wait fails fast instead of stalling the run."""
    fake_gh.fail_secondary_rate_limit(retry_after=3600, path=COMMENTS)
    result = await call(comment_tools(make_env()), "create_comment", {"issueNumber": PR, "body": "x"})
    assert result["is_error"] is True and sleeps.waits == []


@pytest.mark.parametrize(
    ("status", "headers", "message", "expected"),
    [
        (403, {"Retry-After": "12"}, "x", 12.0),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1060"}, "x", 60.0),
        (403, {}, "You have exceeded a secondary rate limit", 60.0),
        (429, {}, "x", 60.0),
        (403, {}, "Resource not accessible by integration", None),
        (422, {}, "Validation Failed", None),
        (404, {}, "Not Found", None),
        (502, {}, "Bad Gateway", 2.0),
    ],
)
def test_advised_wait(status: int, headers: dict[str, str], message: str, expected: float | None) -> None:
    """Retry-After wins, then the primary reset, then GitHub's one-minute advice; others not retried."""
    error = GitHubApiError(message, status, headers)
    assert advised_wait(error, PacingPolicy(), now_epoch=1000.0, attempt=1) == expected


async def test_platform_client_with_transport_retry_never_duplicates(
    fake_gh: FakeGitHub, pr_state: PrState, sleeps: Any
) -> None:
    """With the production client (``GitHubApp.installation_client``, whose urllib3 retry re-sends a POST
    after a 5xx), a lost response still yields exactly one comment: writes bypass the transport retry and
    the pacer probes before re-posting; a secondary limit is waited out by the pacer."""
    from kodiai.github.app_auth import GitHubApp
    from kodiai.github.retry import GitHubRetry

    app = GitHubApp(
        fake_gh.app_id, fake_gh.private_key_pem, base_url=fake_gh.url, retry=GitHubRetry(backoff_factor=0.0)
    )
    env = ToolEnv(
        owner=OWNER,
        repo=REPO,
        client_factory=lambda: app.installation_client(42),
        pacer=WritePacer(PacingPolicy(min_write_interval=0.0, server_error_backoff=0.0), sleep=sleeps),
        publish=PublishFlag(),
        pr_number=PR,
    )
    pr_state.lose_next_response("POST", COMMENTS, status=502)
    payload(await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "once"}))
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["once"]
    assert len(fake_gh.calls_to("POST", COMMENTS)) == 1

    fake_gh.fail_secondary_rate_limit(retry_after=3, path=COMMENTS)
    payload(await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "twice"}))
    assert sleeps.waits[-1] == 3.0
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["once", "twice"]
