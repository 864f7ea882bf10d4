"""Calling an MCP tool's handler the way the SDK's MCP server does, and reading its result."""

from __future__ import annotations

import json
from typing import Any

from claude_agent_sdk import SdkMcpTool


async def call(tools: list[SdkMcpTool[Any]], name: str, args: dict[str, Any]) -> dict[str, Any]:
    tool = next(t for t in tools if t.name == name)
    return await tool.handler(args)


def text(result: dict[str, Any]) -> str:
    return "".join(item["text"] for item in result["content"])


def payload(result: dict[str, Any]) -> Any:
    assert not result.get("is_error"), text(result)
    return json.loads(text(result))
