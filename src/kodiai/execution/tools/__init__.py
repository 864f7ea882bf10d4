"""The in-process MCP servers the model publishes through (behaviour E2.0).

Server keys, also the tool-id prefixes the model sees (``mcp__<key>__<tool>``): ``github_comment``,
``reviewCommentThread``, ``github_inline_comment``, ``github_ci`` and ``git`` — five servers, ten tools in
all. ``git`` (``diff``, ``log``, ``show``, ``status``) is in every run that has a workspace: it replaces
the shell the model once had for read-only git.
"""

from __future__ import annotations

from collections.abc import Iterable

from claude_agent_sdk.types import McpSdkServerConfig

from kodiai.execution.tools.ci_server import create_ci_server
from kodiai.execution.tools.comment_server import create_comment_server
from kodiai.execution.tools.common import PublishFlag, ToolEnv
from kodiai.execution.tools.git_server import create_git_server
from kodiai.execution.tools.inline_server import create_inline_server
from kodiai.execution.tools.thread_server import create_thread_server

__all__ = ["PublishFlag", "ToolEnv", "allowed_tool_patterns", "build_mcp_servers"]


def build_mcp_servers(
    env: ToolEnv,
    *,
    comment_id: int | None = None,
    enable_comment_tools: bool = True,
    enable_inline_tools: bool = True,
) -> dict[str, McpSdkServerConfig]:
    """The server set of E2.0: which servers exist depends on the surface and on write mode; ``git``
    is in every run with a workspace."""
    servers: dict[str, McpSdkServerConfig] = {}
    if enable_comment_tools:
        servers["github_comment"] = create_comment_server(env)
    if env.pr_number is not None and comment_id is not None:
        servers["reviewCommentThread"] = create_thread_server(env)
    if enable_inline_tools and env.pr_number is not None:
        servers["github_inline_comment"] = create_inline_server(env)
        servers["github_ci"] = create_ci_server(env)
    if env.workspace_dir is not None:
        servers["git"] = create_git_server(env)
    return servers


def allowed_tool_patterns(servers: Iterable[str]) -> list[str]:
    """``mcp__<key>__*`` for every built server."""
    return [f"mcp__{name}__*" for name in servers]
