"""``github_ci`` (behaviour E2.4; untested in the original, E5.12) against the fake GitHub server."""

from __future__ import annotations

from typing import Any

from exec_tool_calls import call, payload, text
from execution_helpers import OWNER, REPO

from kodiai.execution.tools.ci_server import ci_tools
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState


def seed_runs(pr_state: PrState) -> list[dict[str, Any]]:
    return [
        pr_state.add_workflow_run(
            OWNER, REPO, name="tests", head_sha="abc123def456", status="completed", conclusion="success"
        ),
        pr_state.add_workflow_run(
            OWNER, REPO, name="lint", head_sha="abc123def456", status="completed", conclusion="failure"
        ),
        pr_state.add_workflow_run(
            OWNER, REPO, name="docs", head_sha="abc123def456", status="completed", conclusion="skipped"
        ),
        pr_state.add_workflow_run(
            OWNER, REPO, name="e2e", head_sha="abc123def456", status="in_progress", conclusion=None
        ),
        pr_state.add_workflow_run(
            OWNER, REPO, name="old", head_sha="0ld", status="completed", conclusion="failure"
        ),
    ]


async def test_5_12_get_ci_status_summary(make_env: Any, pr_state: PrState, fake_gh: FakeGitHub) -> None:
    """E2.4: runs for the PR head SHA; success → passed, failure → failed, other completed → nowhere,
    not completed → pending."""
    runs = seed_runs(pr_state)
    result = payload(await call(ci_tools(make_env()), "get_ci_status", {}))
    assert result["summary"] == {"total_runs": 4, "failed": 1, "passed": 1, "pending": 1}
    assert [r["name"] for r in result["runs"]] == ["tests", "lint", "docs", "e2e"]
    assert result["runs"][3] == {
        "id": runs[3]["id"],
        "name": "e2e",
        "status": "in_progress",
        "conclusion": None,
        "html_url": runs[3]["html_url"],
        "created_at": runs[3]["created_at"],
    }
    [record] = fake_gh.calls_to("GET", rf"/repos/{OWNER}/{REPO}/actions/runs")
    assert "head_sha=abc123def456" in record.query


async def test_5_12_get_ci_status_filter_and_bad_enum(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """E2.4: the optional status filter is passed through; a value outside the enum is a tool error."""
    seed_runs(pr_state)
    tools = ci_tools(make_env())
    result = payload(await call(tools, "get_ci_status", {"status": "in_progress"}))
    assert result["summary"]["total_runs"] == 1
    assert "status=in_progress" in fake_gh.calls_to("GET", rf"/repos/{OWNER}/{REPO}/actions/runs")[0].query
    bad = await call(tools, "get_ci_status", {"status": "exploded"})
    assert bad["is_error"] is True and text(bad).startswith("Error: Invalid arguments")


async def test_5_12_get_workflow_run_details(make_env: Any, pr_state: PrState) -> None:
    """E2.4: jobs of a run with only their failed steps."""
    run = seed_runs(pr_state)[1]
    pr_state.add_jobs(
        run["id"],
        [
            {
                "id": 1,
                "name": "ruff",
                "conclusion": "failure",
                "html_url": "https://github.com/x/1",
                "steps": [
                    {"name": "checkout", "number": 1, "conclusion": "success"},
                    {"name": "ruff check", "number": 2, "conclusion": "failure"},
                ],
            },
            {
                "id": 2,
                "name": "mypy",
                "conclusion": "success",
                "html_url": "https://github.com/x/2",
                "steps": [],
            },
        ],
    )
    result = payload(await call(ci_tools(make_env()), "get_workflow_run_details", {"run_id": run["id"]}))
    assert result == {
        "jobs": [
            {
                "id": 1,
                "name": "ruff",
                "conclusion": "failure",
                "html_url": "https://github.com/x/1",
                "failed_steps": [{"name": "ruff check", "number": 2}],
            },
            {
                "id": 2,
                "name": "mypy",
                "conclusion": "success",
                "html_url": "https://github.com/x/2",
                "failed_steps": [],
            },
        ]
    }


async def test_5_12_get_workflow_run_details_not_found(make_env: Any, pr_state: PrState) -> None:
    """E2.4: errors come back as "Error: <message>"."""
    result = await call(ci_tools(make_env()), "get_workflow_run_details", {"run_id": 123456})
    assert result["is_error"] is True and text(result).startswith("Error: Not Found")
