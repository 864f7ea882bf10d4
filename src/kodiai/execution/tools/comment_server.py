"""``github_comment``: ``create_comment`` and ``update_comment`` (behaviour E2.1).

Pipeline for both: decision validator → review-summary validator/stripper → re-review validator →
review marker (when a key is configured) → outgoing-mention sanitiser → GitHub. ``create_comment`` on a
PR whose final body is a decision-format APPROVE with ``Issues: none`` submits a real approval review.

Pinned target (a port deviation): the model may only write to the issue or PR of the triggering event
(``ToolEnv.target_number``); ``update_comment`` only edits the bot's own comments there. A run without a
target writes nothing. The body's secrets are redacted on the way out by :class:`GitHubRest`.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import SdkMcpTool
from claude_agent_sdk.types import McpSdkServerConfig
from pydantic import Field

from kodiai.execution.review_output import stamp_review_marker
from kodiai.execution.tools.common import ToolEnv, ToolResult, ok, parse_args
from kodiai.execution.tools.server_kit import ToolArgs, bound_tool, tool_server
from kodiai.execution.tools.validators import DECISION_SUMMARY, validate_comment_body
from kodiai.github.rest import RestApi
from kodiai.text.sanitizer import sanitize_outgoing_mentions

SERVER_NAME = "github_comment"


class CreateCommentArgs(ToolArgs):
    issue_number: int = Field(alias="issueNumber", description="Issue or pull request number")
    body: str = Field(description="Comment body (markdown)")


class UpdateCommentArgs(ToolArgs):
    comment_id: int = Field(alias="commentId", description="Comment ID to update")
    body: str = Field(description="New comment body (markdown)")


def prepare_body(env: ToolEnv, body: str) -> str:
    """Validate, stamp the review marker and sanitise mentions; raise on an invalid body."""
    validated = validate_comment_body(body)
    log = env.logger(SERVER_NAME)
    for warning in validated.warnings:
        log.warning("Review summary warning", detail=warning)
    stamped = stamp_review_marker(validated.body, env.review_output_key)
    return sanitize_outgoing_mentions(stamped, env.bot_handles)


def pinned_target(env: ToolEnv) -> int:
    """The run's one issue/PR number; raise when the run has none (then nothing may be written)."""
    target = env.target_number
    if target is None:
        raise ValueError("this run has no issue or pull request to write to")
    return target


def refuse_other_target(target: int) -> ValueError:
    return ValueError(f"this run may only comment on #{target}")


def bot_login(env: ToolEnv) -> str | None:
    """The app's bot account (``<slug>[bot]``; the slug is the first bot handle), or None if unknown."""
    return f"{env.bot_handles[0]}[bot]" if env.bot_handles else None


async def check_updatable(env: ToolEnv, rest: RestApi, comment_id: int, target: int) -> None:
    """Refuse a comment that is not on the run's issue/PR or not written by the bot (looked up)."""
    comment = await rest.get(f"/issues/comments/{comment_id}")
    issue_url = str(comment.get("issue_url") or "") if isinstance(comment, dict) else ""
    if not issue_url.endswith(f"/issues/{target}"):
        raise refuse_other_target(target)
    login = ((comment.get("user") or {}).get("login") or "").lower()
    expected = bot_login(env)
    if expected is None or login != expected.lower():
        raise ValueError("this run may only update its own comments")


def is_approval(body: str) -> bool:
    return DECISION_SUMMARY in body and "Decision: APPROVE" in body and "Issues: none" in body


async def create_comment(env: ToolEnv, args: dict[str, Any]) -> ToolResult:
    params = parse_args(CreateCommentArgs, args)
    target = pinned_target(env)
    if params.issue_number != target:
        raise refuse_other_target(target)
    body = prepare_body(env, params.body)
    rest = env.rest()
    if env.pr_number is not None and env.pr_number == target and is_approval(body):
        pr = env.pr_number

        # an untrusted author's PR gets the verdict as a COMMENT review: never an approval that counts
        event, state = ("APPROVE", "APPROVED") if env.may_approve else ("COMMENT", "COMMENTED")

        async def find_review() -> dict[str, Any] | None:
            reviews = await rest.paginate(f"/pulls/{pr}/reviews")
            return next((r for r in reviews if r.get("body") == body and r.get("state") == state), None)

        await env.pacer.write(
            lambda: rest.post(f"/pulls/{pr}/reviews", {"event": event, "body": body}, env.publish.mark),
            find_review,
        )
        env.publish.mark()
        return ok({"success": True, "approved": env.may_approve, "pull_number": pr})

    number = params.issue_number

    async def find_comment() -> dict[str, Any] | None:
        comments = await rest.paginate(f"/issues/{number}/comments")
        return next((c for c in reversed(comments) if c.get("body") == body), None)

    created = await env.pacer.write(
        lambda: rest.post(f"/issues/{number}/comments", {"body": body}, env.publish.mark), find_comment
    )
    env.publish.mark()
    return ok({"success": True, "comment_id": created["id"]})


async def update_comment(env: ToolEnv, args: dict[str, Any]) -> ToolResult:
    params = parse_args(UpdateCommentArgs, args)
    target = pinned_target(env)
    body = prepare_body(env, params.body)
    rest = env.rest()
    await check_updatable(env, rest, params.comment_id, target)
    await env.pacer.write(
        lambda: rest.patch(f"/issues/comments/{params.comment_id}", {"body": body}, env.publish.mark)
    )
    env.publish.mark()
    return ok({"success": True, "comment_id": params.comment_id})


def comment_tools(env: ToolEnv) -> list[SdkMcpTool[Any]]:
    """The two tools, bound to ``env``."""
    return [
        bound_tool(
            env,
            "update_comment",
            "Update a GitHub issue or PR comment with new content",
            UpdateCommentArgs,
            update_comment,
        ),
        bound_tool(
            env,
            "create_comment",
            "Create a new comment on a GitHub issue or pull request",
            CreateCommentArgs,
            create_comment,
        ),
    ]


def create_comment_server(env: ToolEnv) -> McpSdkServerConfig:
    return tool_server(SERVER_NAME, comment_tools(env))
