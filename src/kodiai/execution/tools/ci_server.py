"""``github_ci``: ``get_ci_status`` and ``get_workflow_run_details`` (behaviour E2.4), read-only."""

from __future__ import annotations

from typing import Any, Literal

from claude_agent_sdk import SdkMcpTool
from claude_agent_sdk.types import McpSdkServerConfig
from pydantic import Field

from kodiai.execution.tools.common import ToolEnv, ToolResult, ok, parse_args
from kodiai.execution.tools.server_kit import ToolArgs, bound_tool, pull_head_sha, tool_server

SERVER_NAME = "github_ci"

RunStatus = Literal[
    "completed",
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "skipped",
    "stale",
    "success",
    "timed_out",
    "in_progress",
    "queued",
    "requested",
    "waiting",
    "pending",
]


class CiStatusArgs(ToolArgs):
    status: RunStatus | None = Field(default=None, description="Only runs with this status")


class RunDetailsArgs(ToolArgs):
    run_id: int = Field(description="Workflow run ID")


def summarize_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts: completed+success → passed, completed+failure → failed, not completed → pending."""
    passed = sum(1 for r in runs if r.get("status") == "completed" and r.get("conclusion") == "success")
    failed = sum(1 for r in runs if r.get("status") == "completed" and r.get("conclusion") == "failure")
    pending = sum(1 for r in runs if r.get("status") != "completed")
    return {"total_runs": len(runs), "failed": failed, "passed": passed, "pending": pending}


async def get_ci_status(env: ToolEnv, args: dict[str, Any]) -> ToolResult:
    params = parse_args(CiStatusArgs, args)
    if env.pr_number is None:
        raise ValueError("No pull request number is available")
    rest = env.rest()
    query: dict[str, Any] = {"head_sha": await pull_head_sha(rest, env.pr_number)}
    if params.status:
        query["status"] = params.status
    data = await rest.get("/actions/runs", **query)
    runs = list(data.get("workflow_runs") or [])
    return ok(
        {
            "summary": summarize_runs(runs),
            "runs": [
                {
                    "id": r.get("id"),
                    "name": r.get("name"),
                    "status": r.get("status"),
                    "conclusion": r.get("conclusion"),
                    "html_url": r.get("html_url"),
                    "created_at": r.get("created_at"),
                }
                for r in runs
            ],
        }
    )


async def get_workflow_run_details(env: ToolEnv, args: dict[str, Any]) -> ToolResult:
    params = parse_args(RunDetailsArgs, args)
    data = await env.rest().get(f"/actions/runs/{params.run_id}/jobs")
    jobs = list(data.get("jobs") or [])
    return ok(
        {
            "jobs": [
                {
                    "id": j.get("id"),
                    "name": j.get("name"),
                    "conclusion": j.get("conclusion"),
                    "html_url": j.get("html_url"),
                    "failed_steps": [
                        {"name": s.get("name"), "number": s.get("number")}
                        for s in (j.get("steps") or [])
                        if s.get("conclusion") == "failure"
                    ],
                }
                for j in jobs
            ]
        }
    )


def ci_tools(env: ToolEnv) -> list[SdkMcpTool[Any]]:
    return [
        bound_tool(env, "get_ci_status", "Get CI status summary for this PR", CiStatusArgs, get_ci_status),
        bound_tool(
            env,
            "get_workflow_run_details",
            "Get the jobs of a workflow run and their failed steps",
            RunDetailsArgs,
            get_workflow_run_details,
        ),
    ]


def create_ci_server(env: ToolEnv) -> McpSdkServerConfig:
    return tool_server(SERVER_NAME, ci_tools(env))
