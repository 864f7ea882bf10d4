"""Run a ``mcp__git__<tool> <json args>`` call, as the review prompt names it, through the real git MCP
server on a workspace (the model has no shell: what the prompt names must work through these tools)."""

from __future__ import annotations

import json
from pathlib import Path

from mcp import Client

from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv, build_mcp_servers


async def run_git_tool_call(workspace: Path, call: str) -> tuple[bool, str]:
    """``(is_error, text)`` of ``call`` (``mcp__git__diff {"revisions": [...]}``) on ``workspace``."""
    name, arguments = call.split(" ", 1)
    env = ToolEnv(
        owner="local",
        repo="repo",
        client_factory=None,
        pacer=WritePacer(PacingPolicy(min_write_interval=0.0)),
        publish=PublishFlag(),
        workspace_dir=workspace,
    )
    async with Client(build_mcp_servers(env)["git"]["instance"]) as client:
        result = await client.call_tool(name.removeprefix("mcp__git__"), json.loads(arguments))
    return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)
