"""``github_inline_comment`` → ``create_inline_comment`` (behaviour E2.3, behaviour R3.1).

Before the first inline post of a run the review-output marker is looked for on the PR; when it is
already there every call of this server instance is skipped (``already-published``), so a redelivered
webhook never posts a second set of inline comments.

The tool takes no PR number: it writes only on the run's PR (``ToolEnv.pr_number``, which must be the
run's target), and its body's secrets are redacted on the way out by :class:`GitHubRest`.
"""

from __future__ import annotations

from typing import Any, Literal

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server, tool
from claude_agent_sdk.types import McpSdkServerConfig
from pydantic import BaseModel, ConfigDict, Field

from kodiai.execution.review_output import (
    MARKER_PREFIX,
    build_review_output_marker,
    review_output_published,
)
from kodiai.execution.tools.common import (
    SERVER_VERSION,
    ToolEnv,
    ToolResult,
    error,
    input_schema,
    ok,
    parse_args,
)
from kodiai.execution.tools.server_kit import pull_head_sha
from kodiai.text.sanitizer import sanitize_outgoing_mentions

SERVER_NAME = "github_inline_comment"

DESCRIPTION = (
    "Create an inline review comment on a specific line or line range of a file in the pull request diff. "
    "To propose a concrete change, include a GitHub suggestion block (```suggestion ... ```); a suggestion "
    "replaces the whole commented line range (startLine..line), so include every line of the range."
)


class InlineCommentArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True, strict=True)
    path: str = Field(description="File path relative to the repository root")
    body: str = Field(description="Comment body (markdown, may contain ```suggestion blocks)")
    line: int | None = Field(default=None, ge=0, description="Line number (last line of a range)")
    start_line: int | None = Field(default=None, ge=0, alias="startLine", description="First line of a range")
    side: Literal["LEFT", "RIGHT"] = Field(default="RIGHT", description="Diff side (default RIGHT)")


def error_hint(message: str) -> str:
    """The hint appended to an inline-comment error (depends on GitHub's message text)."""
    if "Validation Failed" in message:
        return (
            " Hint: the line is probably not part of the PR diff, or the path is wrong. Only lines shown in the"
            " diff can receive inline comments."
        )
    if "Not Found" in message:
        return " Hint: check that the pull request number, the repository and the file path are correct."
    return ""


class InlineCommentServer:
    """One instance per execution: it caches the publication gate for the whole run."""

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self._gate: Literal["allowed", "already-published"] | None = None

    async def _gate_state(self) -> str:
        key = self.env.review_output_key
        if not key or self.env.pr_number is None:
            return "allowed"
        if self._gate is None:
            published = await review_output_published(self.env.rest(), self.env.pr_number, key)
            self._gate = "already-published" if published else "allowed"
        return self._gate

    async def create_inline_comment(self, args: dict[str, Any]) -> ToolResult:
        try:
            return await self._create(args)
        except Exception as exc:
            message = str(exc)
            return error(f"Error creating inline comment: {message}{error_hint(message)}")

    async def _create(self, args: dict[str, Any]) -> ToolResult:
        params = parse_args(InlineCommentArgs, args)
        env = self.env
        if env.pr_number is None:
            raise ValueError("No pull request number is available for inline comments")
        if env.target_number != env.pr_number:  # pinned: only the run's own PR (the tool takes no number)
            raise ValueError(f"this run may only comment on #{env.target_number}")
        if not params.line and not params.start_line:
            raise ValueError("Either line or startLine must be provided")
        key = env.review_output_key
        if await self._gate_state() == "already-published":
            return ok(
                {
                    "success": True,
                    "skipped": True,
                    "reason": "already-published",
                    "review_output_key": key,
                    "marker_prefix": MARKER_PREFIX,
                }
            )
        pr = env.pr_number
        rest = env.rest()
        head_sha = await pull_head_sha(rest, pr)
        body = sanitize_outgoing_mentions(params.body, env.bot_handles)
        if key:
            body = f"{body}\n\n{build_review_output_marker(key)}"
        payload: dict[str, Any] = {
            "body": body,
            "path": params.path,
            "side": params.side,
            "commit_id": head_sha,
        }
        if params.start_line:
            payload["start_line"] = params.start_line
            payload["start_side"] = params.side
            if params.line is not None:
                payload["line"] = params.line
        else:
            payload["line"] = params.line

        async def find_comment() -> dict[str, Any] | None:
            comments = await rest.paginate(f"/pulls/{pr}/comments")
            return next(
                (c for c in reversed(comments) if c.get("body") == body and c.get("path") == params.path),
                None,
            )

        created = await env.pacer.write(
            lambda: rest.post(f"/pulls/{pr}/comments", payload, env.publish.mark), find_comment
        )
        env.publish.mark()
        if key:
            env.logger(SERVER_NAME).info(
                "Published inline review output with idempotency marker", review_output_key=key, pr_number=pr
            )
        line = created.get("line")
        return ok(
            {
                "success": True,
                "comment_id": created["id"],
                "html_url": created.get("html_url"),
                "path": created.get("path"),
                "line": line if line is not None else created.get("original_line"),
            }
        )

    def tools(self) -> list[SdkMcpTool[Any]]:
        return [
            tool("create_inline_comment", DESCRIPTION, input_schema(InlineCommentArgs))(
                self.create_inline_comment
            )
        ]


def create_inline_server(env: ToolEnv) -> McpSdkServerConfig:
    return create_sdk_mcp_server(
        name=SERVER_NAME, version=SERVER_VERSION, tools=InlineCommentServer(env).tools()
    )
