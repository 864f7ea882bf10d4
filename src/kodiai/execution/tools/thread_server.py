"""``reviewCommentThread`` → ``reply_to_pr_review_comment`` (behaviour E2.2).

The reply is wrapped in ``<details>`` (summary ``kodiai response``), checked lightly (an APPROVE needs
``Issues: none`` before the closing tag), mention-sanitised and posted as an in-thread reply. It never
becomes an approval review.

Pinned target (a port deviation): the reply must be on the run's PR (``ToolEnv.target_number``) and,
when the run was triggered by a review comment (``ToolEnv.thread_comment_id``), in that comment's thread
(the parent is the trigger itself or shares its thread root, looked up). A run without a target writes
nothing.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import SdkMcpTool
from claude_agent_sdk.types import McpSdkServerConfig
from pydantic import Field

from kodiai.execution.tools.common import ToolEnv, ToolResult, ok, parse_args
from kodiai.execution.tools.server_kit import ToolArgs, bound_tool, tool_server
from kodiai.execution.tools.validators import validate_thread_decision
from kodiai.github.models import ReviewComment, parse_object
from kodiai.github.rest import RestApi
from kodiai.text.formatting import wrap_in_details
from kodiai.text.sanitizer import sanitize_outgoing_mentions

SERVER_NAME = "reviewCommentThread"


class ReplyArgs(ToolArgs):
    pull_request_number: int = Field(alias="pullRequestNumber", description="Pull request number")
    comment_id: int = Field(alias="commentId", description="ID of the review comment to reply to")
    body: str = Field(description="Reply body (markdown). Will be wrapped in <details> tags")


async def thread_root(rest: RestApi, comment_id: int) -> int:
    """The top-level comment of a review comment's thread (GitHub points every reply at it)."""
    root = parse_object(ReviewComment, await rest.get(f"/pulls/comments/{comment_id}")).in_reply_to_id
    return root if root is not None else comment_id


async def check_thread(env: ToolEnv, rest: RestApi, pr: int, parent: int) -> None:
    """Refuse a reply outside the run's PR or outside the triggering comment's thread."""
    target = env.target_number
    if target is None:
        raise ValueError("this run has no pull request to reply on")
    if pr != target:
        raise ValueError(f"this run may only reply on #{target}")
    anchor = env.thread_comment_id
    if anchor is None or parent == anchor:
        return
    if await thread_root(rest, parent) != await thread_root(rest, anchor):
        raise ValueError(f"this run may only reply in the thread of review comment {anchor}")


async def reply_to_pr_review_comment(env: ToolEnv, args: dict[str, Any]) -> ToolResult:
    params = parse_args(ReplyArgs, args)
    wrapped = wrap_in_details(params.body, "kodiai response")
    validate_thread_decision(wrapped)
    body = sanitize_outgoing_mentions(wrapped, env.bot_handles)
    rest = env.rest()
    pr, parent = params.pull_request_number, params.comment_id
    await check_thread(env, rest, pr, parent)

    async def find_reply() -> dict[str, Any] | None:
        comments = await rest.paginate(f"/pulls/{pr}/comments")
        return next(
            (c for c in reversed(comments) if c.get("in_reply_to_id") == parent and c.get("body") == body),
            None,
        )

    created = await env.pacer.write(
        lambda: rest.post(f"/pulls/{pr}/comments/{parent}/replies", {"body": body}, env.publish.mark),
        find_reply,
    )
    env.publish.mark()
    return ok({"success": True, "comment_id": created["id"], "html_url": created.get("html_url")})


def thread_tools(env: ToolEnv) -> list[SdkMcpTool[Any]]:
    return [
        bound_tool(
            env,
            "reply_to_pr_review_comment",
            "Reply in-thread to an existing PR review comment (inline diff comment)",
            ReplyArgs,
            reply_to_pr_review_comment,
        ),
    ]


def create_thread_server(env: ToolEnv) -> McpSdkServerConfig:
    return tool_server(SERVER_NAME, thread_tools(env))
