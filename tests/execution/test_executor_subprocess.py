"""The executor against a real CLI subprocess (a fake ``claude`` via ``cli_path``): the flags and
environment it is started with, and that a timeout really terminates it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from execution_helpers import INSTALLATION, OWNER, PR, REPO, UNSANDBOXED, fake_cli, make_client
from pydantic import SecretStr

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.types import ExecutionContext, ExecutionResult
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState

API_KEY = "sk-ant-api03-" + "x" * 40


def context(workspace: Path, **overrides: object) -> ExecutionContext:
    fields: dict[str, object] = {
        "workspace_dir": workspace,
        "installation_id": INSTALLATION,
        "owner": OWNER,
        "repo": REPO,
        "event_type": "pull_request.opened",
        "pr_number": PR,
        "prompt": "Review.",
    }
    fields.update(overrides)
    return ExecutionContext(**fields)  # type: ignore[arg-type]


def executor(fake: FakeGitHub, cli: Path) -> ClaudeAgentExecutor:
    return ClaudeAgentExecutor(
        installation_client=lambda _i: make_client(fake),
        credentials=ModelCredentials(anthropic_api_key=SecretStr(API_KEY)),
        cli_path=cli,
        sandbox=UNSANDBOXED,  # a Python stand-in for the CLI: tests/execution/test_sandbox*.py confine the real one
    )


async def test_cli_started_with_mapped_flags_and_env(
    tmp_path: Path, fake_gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E1.3 step 7 end to end: the real subprocess transport starts the CLI (through the run's launcher)
    in the workspace with the model, turns, preset append, no settings sources, dontAsk, the tool lists,
    our SDK MCP servers, the entrypoint and the API key; the app's own secrets do not reach it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".kodiai.yml").write_text(
        "maxTurns: 9\nsystemPromptAppend: Extra rules.\n", encoding="utf-8"
    )
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    monkeypatch.setenv("FAKE_CLI_MODE", "result")
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----app-secret")

    result = await executor(fake_gh, fake_cli(tmp_path)).execute(context(workspace))

    assert result.conclusion == "success" and result.session_id == "cli-session" and result.output_tokens == 2
    seen = json.loads(record.read_text(encoding="utf-8"))
    argv = seen["argv"]

    def flag(name: str) -> str:
        return argv[argv.index(name) + 1]

    assert Path(seen["cwd"]).resolve() == workspace.resolve()
    assert flag("--model") == "claude-sonnet-4-5-20250929" and flag("--max-turns") == "9"
    assert flag("--append-system-prompt") == "Extra rules."
    assert flag("--permission-mode") == "dontAsk"
    assert "--setting-sources=" in argv
    allowed = flag("--allowedTools").split(",")
    assert "mcp__github_comment__*" in allowed and "mcp__github_ci__*" in allowed
    assert not [tool for tool in allowed if tool.startswith("Bash")]
    assert flag("--disallowedTools") == "Bash,Edit,Write,MultiEdit,NotebookEdit,WebSearch,WebFetch"
    servers = json.loads(flag("--mcp-config"))["mcpServers"]
    assert servers == {
        "github_comment": {"type": "sdk", "name": "github_comment"},
        "github_inline_comment": {"type": "sdk", "name": "github_inline_comment"},
        "github_ci": {"type": "sdk", "name": "github_ci"},
        "git": {"type": "sdk", "name": "git"},
    }
    assert seen["env"]["CLAUDE_CODE_ENTRYPOINT"] == "kodiai-github-app"
    assert seen["env"]["ANTHROPIC_API_KEY"] == API_KEY
    assert seen["env"]["GITHUB_PRIVATE_KEY"] is None


class SkippableClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves forward: a timeout elapses when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0.0

    def time(self) -> float:
        return super().time() + self.skipped


@pytest.mark.slow
def test_timeout_terminates_cli_subprocess(
    tmp_path: Path, fake_gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E1.10 timeout: a CLI that never answers is cancelled after the timeout and its process is gone
    (stdin closed, then terminated by the SDK's shielded cleanup). The timeout elapses (on the loop's
    clock) only once the CLI hangs, so however slow its start-up is, the timeout cuts a running CLI."""
    record = tmp_path / "record.json"
    hanging = tmp_path / "record.json.hanging"
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    timeout = 600

    async def scenario() -> ExecutionResult:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SkippableClockLoop)
        run = asyncio.ensure_future(
            executor(fake_gh, fake_cli(tmp_path)).execute(context(tmp_path, dynamic_timeout_seconds=timeout))
        )
        started = time.monotonic()
        while not hanging.exists():
            assert not run.done(), "the run ended before the CLI was hanging"
            assert time.monotonic() - started < 120, "the fake CLI never started"
            await asyncio.sleep(0.02)
        loop.skipped += timeout
        return await run

    with asyncio.Runner(loop_factory=SkippableClockLoop) as runner:
        result = runner.run(scenario())

    assert result.is_timeout is True and result.conclusion == "error" and result.published is False
    pid = json.loads(record.read_text(encoding="utf-8"))["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_cli_tool_call_posts_to_github(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The production path end to end: CLI subprocess → SDK control protocol → our MCP server →
    PyGithub → the fake GitHub server; published=true."""
    monkeypatch.setenv("FAKE_CLI_RECORD", str(tmp_path / "record.json"))
    monkeypatch.setenv("FAKE_CLI_MODE", "tool")
    monkeypatch.setenv(
        "FAKE_CLI_TOOL",
        json.dumps(["github_comment", "create_comment", {"issueNumber": PR, "body": "hi @kodiai"}]),
    )

    result = await executor(fake_gh, fake_cli(tmp_path)).execute(context(tmp_path, bot_handles=["kodiai"]))

    assert result.conclusion == "success" and result.published is True
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["hi kodiai"]
