"""Error-comment delivery (behaviour E4 postOrUpdateErrorComment) against the fake GitHub server."""

from __future__ import annotations

import structlog
from execution_helpers import OWNER, PR, REPO, make_client

from kodiai.execution.error_comments import mention_error_body, post_or_update_error_comment
from kodiai.execution.errors import classify_error, format_error_comment
from kodiai.github.rest import GitHubRest
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState


async def test_creates_comment_without_tracking_id(fake_gh: FakeGitHub, pr_state: PrState) -> None:
    """E4: no tracking id → a new issue comment with the formatted error, mentions sanitised."""
    body = format_error_comment(
        classify_error("Job timed out after 600 seconds.", True, False), "@kodiai timed out"
    )
    comment_id = await post_or_update_error_comment(
        GitHubRest(make_client(fake_gh), OWNER, REPO), issue_number=PR, body=body, bot_handles=["kodiai"]
    )
    [comment] = pr_state.issue_comments(OWNER, REPO, PR)
    assert comment["id"] == comment_id
    assert comment["body"].startswith("> **Kodiai timed out**\n\n_kodiai timed out_")


async def test_updates_tracking_comment(fake_gh: FakeGitHub, pr_state: PrState) -> None:
    """E4: a tracking id → that comment is edited, nothing created."""
    tracking = pr_state.add_issue_comment(OWNER, REPO, PR, "Working on it...")
    rest = GitHubRest(make_client(fake_gh), OWNER, REPO)
    result = await post_or_update_error_comment(
        rest, issue_number=PR, body="failed", tracking_comment_id=tracking["id"]
    )
    assert result == tracking["id"]
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["failed"]


async def test_never_raises_and_logs(fake_gh: FakeGitHub, pr_state: PrState) -> None:
    """E4: a failing post is logged ("Failed to post/update error comment") and swallowed."""
    fake_gh.fail(500, method="POST", path=r".*/comments", times=1)
    with structlog.testing.capture_logs() as logs:
        result = await post_or_update_error_comment(
            GitHubRest(make_client(fake_gh), OWNER, REPO), issue_number=PR, body="x"
        )
    assert result is None and pr_state.issue_comments(OWNER, REPO, PR) == []
    assert any(e["event"] == "Failed to post/update error comment" for e in logs)


def test_mention_error_body_wrapped() -> None:
    """E4: mention error replies are wrapped in details with summary "Kodiai encountered an error"."""
    body = mention_error_body("> **Kodiai encountered an error**\n\n_@kodiai boom_", ["kodiai"])
    assert body.startswith("<details>\n<summary>Kodiai encountered an error</summary>\n\n")
    assert "@kodiai" not in body
