"""What the real Claude Code CLI sends the model, run by the executor with production options (sandbox
on) against the fake Anthropic API: the run's own tools and no others (every other built-in would be
described on every request, ~10,000 tokens a review never uses), and no side request (no session-title
call to a small model, no ``/api/hello`` probe) although the server's environment does not ask for that."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.sandbox import AgentSandbox
from kodiai.execution.types import ExecutionContext
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, Text
from support.gitrepo import commit_files, git

pytestmark = pytest.mark.slow

READ = {"Read", "Grep", "Glob"}
GIT = {"mcp__git__diff", "mcp__git__log", "mcp__git__show", "mcp__git__status"}
COMMENT = {"mcp__github_comment__create_comment", "mcp__github_comment__update_comment"}
REVIEW = {
    *READ,
    *GIT,
    *COMMENT,
    "mcp__github_inline_comment__create_inline_comment",
    "mcp__github_ci__get_ci_status",
    "mcp__github_ci__get_workflow_run_details",
}
#: ``MultiEdit`` is asked for too; this CLI has no such tool any more (its Edit takes several edits).
WRITE = {*READ, *GIT, "Edit", "Write", "WebFetch", "WebSearch"}
PROMPT = (
    "You are reviewing pull request #7 in acme/widgets. Read the diff with the git tools, look for bugs, "
    "post inline comments on the lines that need changes and finish with a summary comment."
)


@pytest.fixture(scope="module")
def _model() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def model(_model: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    _model.reset()
    _model.script = lambda _request: Text("Done.")
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", raising=False)  # production sets it
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    return _model


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git("init", "-q", "-b", "main", cwd=ws)
    commit_files(ws, {"app.py": "x = 1\n"}, "initial")
    return ws


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"event_type": "pull_request.opened"}, REVIEW),
        ({"event_type": "issue_comment.created"}, {*READ, *GIT, *COMMENT}),
        (
            {
                "event_type": "issue_comment.created",
                "write_mode": True,
                "allowed_domains": ("docs.python.org",),
            },
            WRITE,
        ),
    ],
    ids=["review", "mention", "write-mode-with-web"],
)
async def test_the_model_is_offered_only_the_runs_tools_and_no_side_request_is_made(
    model: FakeAnthropic, workspace: Path, tmp_path: Path, fields: dict[str, object], expected: set[str]
) -> None:
    executor = ClaudeAgentExecutor(
        installation_client=None,
        credentials=ModelCredentials(
            anthropic_api_key=SecretStr(FAKE_API_KEY), endpoint={"ANTHROPIC_BASE_URL": SecretStr(model.url)}
        ),
        sandbox=AgentSandbox(run_root=tmp_path),
    )
    context = ExecutionContext(
        workspace_dir=workspace,
        installation_id=1,
        owner="acme",
        repo="widgets",
        pr_number=7,
        prompt=PROMPT,
        **fields,  # type: ignore[arg-type]
    )
    result = await executor.execute(context)

    assert result.conclusion == "success", result.error_message
    [request] = model.main_requests
    assert set(request.tool_names) == expected
    assert [(r.method, r.path, r.kind) for r in model.side_requests] == []
    assert (
        "Available agent types" not in request.user_text and "skills are available" not in request.user_text
    )
