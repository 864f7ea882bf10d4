"""How the GitHub tool servers (``github_comment``, ``reviewCommentThread``, ``github_ci``) are put
together, so that each server module holds only its tools' logic.

A tool is a name, a description, an argument model and an ``(env, args)`` handler bound to one run's
:class:`ToolEnv`; any failure goes back to the model as ``Error: <message>`` (:func:`guarded`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server, tool
from claude_agent_sdk.types import McpSdkServerConfig
from pydantic import BaseModel, ConfigDict

from kodiai.execution.tools.common import SERVER_VERSION, ToolEnv, ToolResult, guarded, input_schema
from kodiai.github.models import PullRequest, parse_object
from kodiai.github.rest import RestApi

Handler = Callable[[ToolEnv, dict[str, Any]], Awaitable[ToolResult]]


class ToolArgs(BaseModel):
    """A tool's arguments: strict (the model's ``"7"`` is not an issue number), and the camelCase
    aliases the model sees are accepted beside the field names."""

    model_config = ConfigDict(populate_by_name=True, strict=True)


def bound_tool(
    env: ToolEnv, name: str, description: str, args: type[BaseModel], handler: Handler
) -> SdkMcpTool[Any]:
    """The tool ``name`` calling ``handler(env, args)``, its failures turned into error results."""
    return tool(name, description, input_schema(args))(guarded(lambda call: handler(env, call)))


def tool_server(name: str, tools: list[SdkMcpTool[Any]]) -> McpSdkServerConfig:
    """The in-process MCP server ``name`` (also the tool-id prefix ``mcp__<name>__``)."""
    return create_sdk_mcp_server(name=name, version=SERVER_VERSION, tools=tools)


async def pull_head_sha(rest: RestApi, pr: int) -> str:
    """The head commit of pull request ``pr``, read now (a push since the event moved it)."""
    head = parse_object(PullRequest, await rest.get(f"/pulls/{pr}")).head_sha
    if head is None:
        raise ValueError(f"pull request #{pr} has no head commit")
    return head
