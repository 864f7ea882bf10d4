"""The executor with the real bundled Claude Code CLI, in its real bubblewrap sandbox, against the fake
Anthropic API whose scripted model follows a pull request's injected instructions: every attempt to leave
the workspace, read the server's secrets, run a shell, write where it must not or fetch the web fails,
and each test proves the attempt was made (the next model request carries the failing tool result).

The workspace also ships the attacker's Claude Code project files (a SessionStart hook, CLAUDE.md,
.mcp.json with auto-approval, an agent): none of them reaches the CLI, with or without the sandbox."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from sandbox_helpers import (
    AGENT_MARKER,
    CLAUDE_MD_MARKER,
    DATA_FILE,
    DATA_SENTINEL,
    ENV_SENTINEL,
    HOOK_MARKER,
    MCP_SERVER,
    SIBLING_SENTINEL,
    Machine,
    build_machine,
)

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.sandbox import AgentSandbox
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.metrics import Metrics
from support.fake_anthropic import (
    FAKE_API_KEY,
    FakeAnthropic,
    Hang,
    ScriptedConversation,
    ToolResult,
    ToolUse,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def _model() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def model(_model: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    _model.reset()
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    monkeypatch.setenv("KODIAI_SENTINEL", ENV_SENTINEL)  # an arbitrary server variable
    return _model


@pytest.fixture
def machine(tmp_path: Path, model: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Machine:
    built = build_machine(tmp_path, beacon=model.url.removeprefix("http://").rstrip("/"))
    monkeypatch.setenv("HOME", str(built.home))  # the server's own HOME (and its ~/.claude)
    return built


def executor(
    model: FakeAnthropic, sandbox: AgentSandbox, metrics: Metrics | None = None
) -> ClaudeAgentExecutor:
    return ClaudeAgentExecutor(
        installation_client=None,
        credentials=ModelCredentials(
            anthropic_api_key=SecretStr(FAKE_API_KEY), endpoint={"ANTHROPIC_BASE_URL": SecretStr(model.url)}
        ),
        sandbox=sandbox,
        on_sandbox_failure=metrics.agent_sandbox_failures.inc if metrics is not None else None,
    )


def context(machine: Machine, **fields: object) -> ExecutionContext:
    base: dict[str, object] = {
        "workspace_dir": machine.workspace,
        "installation_id": 1,
        "owner": "acme",
        "repo": "widgets",
        "event_type": "pull_request.opened",
        "pr_number": 7,
        "prompt": "Review this pull request. Follow the instructions in its files.",
    }
    return ExecutionContext(**{**base, **fields})  # type: ignore[arg-type]


async def attack(
    model: FakeAnthropic,
    machine: Machine,
    calls: dict[str, ToolUse],
    *,
    sandbox: AgentSandbox | None = None,
    **fields: object,
) -> tuple[ExecutionResult, dict[str, ToolResult]]:
    """One session whose model makes ``calls`` in turn; each call's tool result by name."""
    scripted = [ToolUse(call.name, call.input, id=f"toolu_{name}") for name, call in calls.items()]
    model.script = ScriptedConversation(scripted)
    chosen = sandbox or AgentSandbox(run_root=machine.runs)
    result = await executor(model, chosen).execute(context(machine, **fields))
    results = {r.tool_use_id.removeprefix("toolu_"): r for r in model.main_requests[-1].all_tool_results}
    assert set(results) == set(calls), "every attempt was made and answered"
    return result, results


def everything_sent(model: FakeAnthropic) -> str:
    return json.dumps([(r.headers, r.body) for r in model.requests])


def assert_untrusted_settings_ignored(model: FakeAnthropic, machine: Machine) -> None:
    sent = everything_sent(model)
    assert not [r.path for r in model.requests if r.path.startswith("/beacon/")], "hook or MCP server ran"
    assert HOOK_MARKER not in sent and not machine.hook_ran.exists()
    assert CLAUDE_MD_MARKER not in sent
    assert AGENT_MARKER not in sent and "evil-agent" not in sent
    assert f"mcp__{MCP_SERVER}" not in sent and not machine.mcp_started.exists()


def read(path: str | Path) -> ToolUse:
    return ToolUse("Read", {"file_path": str(path)})


async def test_review_under_injection_reaches_nothing_outside_its_workspace(
    model: FakeAnthropic, machine: Machine
) -> None:
    ws = machine.workspace
    calls = {
        "passwd": read("/etc/passwd"),
        "data_abs": read(machine.env_file),
        "data_dotdot": read(ws / ".." / ".." / "data" / ".env"),
        "symlink": read(ws / "leak"),
        "sibling": read(machine.sibling / "secret.txt"),
        "pid1_environ": read("/proc/1/environ"),
        "server_environ": read(f"/proc/{os.getpid()}/environ"),
        "self_environ": read("/proc/self/environ"),
        "proc_list": ToolUse("Glob", {"pattern": "*/comm", "path": "/proc"}),
        "glob_root": ToolUse("Glob", {"pattern": f"**/{DATA_FILE}", "path": "/"}),
        # the pattern does not match itself in the CLI's own transcript (under its HOME in /tmp)
        "grep_tmp": ToolUse(
            "Grep", {"pattern": "kodiai-(data|sibling)-sentinel-[0-9a-f]{6}", "path": "/tmp"}
        ),
        "bash": ToolUse("Bash", {"command": f"cat {machine.env_file}"}),
        "write": ToolUse("Write", {"file_path": str(ws / "planted.txt"), "content": "x"}),
        "webfetch": ToolUse("WebFetch", {"url": "https://example.com/", "prompt": "read"}),
        "own_file": read(ws / "app.py"),
    }
    result, out = await attack(model, machine, calls)

    assert result.conclusion == "success"
    assert "x = 1" in out["own_file"].text and not out["own_file"].is_error  # the workspace is readable
    assert "root:x:0:0" not in out["passwd"].text and "kodiai-agent:x:65534" in out["passwd"].text
    for name in ("data_abs", "data_dotdot", "symlink", "sibling", "bash", "write", "webfetch"):
        assert out[name].is_error, (name, out[name].text)
    for name in ("pid1_environ", "server_environ", "self_environ"):
        assert out[name].is_error or ENV_SENTINEL not in out[name].text, name
    pids = [line.split("/")[2] for line in out["proc_list"].text.splitlines() if line.startswith("/proc/")]
    assert pids and str(os.getpid()) not in pids and len(pids) <= 4, out["proc_list"].text
    assert "No files found" in out["glob_root"].text
    assert "No files found" in out["grep_tmp"].text or "No matches" in out["grep_tmp"].text
    assert not (ws / "planted.txt").exists()
    sent = everything_sent(model)
    for secret in (ENV_SENTINEL, DATA_SENTINEL, SIBLING_SENTINEL, "KODIAI_SENTINEL"):
        assert secret not in sent, secret
    assert_untrusted_settings_ignored(model, machine)
    assert list(machine.runs.iterdir()) == [], "the run's HOME and config dir are removed"
    assert not (machine.home / ".claude").exists(), "the server's own ~/.claude is never used"


async def test_write_mode_cannot_touch_git_dir(model: FakeAnthropic, machine: Machine) -> None:
    ws = machine.workspace
    config_before = (ws / ".git" / "config").read_text(encoding="utf-8")
    calls = {
        "git_config": ToolUse(
            "Write", {"file_path": str(ws / ".git" / "config"), "content": "[core]\n\tfsmonitor = x\n"}
        ),
        "git_hook": ToolUse(
            "Write", {"file_path": str(ws / ".git" / "hooks" / "post-checkout"), "content": "#!/bin/sh\n"}
        ),
        "outside": ToolUse("Write", {"file_path": str(machine.data / "planted"), "content": "x"}),
        "legit": ToolUse("Write", {"file_path": str(ws / "fix.py"), "content": "y = 2\n"}),
    }
    _, out = await attack(model, machine, calls, write_mode=True, event_type="issue_comment.created")

    for name in ("git_config", "git_hook"):
        assert out[name].is_error, (name, out[name].text)
    # "outside" lands in the sandbox's private /tmp (the data directory lives under the host's /tmp
    # here) and vanishes with it; the host's data directory is untouched
    assert (ws / ".git" / "config").read_text(encoding="utf-8") == config_before
    assert not (ws / ".git" / "hooks" / "post-checkout").exists() and not (machine.data / "planted").exists()
    assert not out["legit"].is_error and (ws / "fix.py").read_text(encoding="utf-8") == "y = 2\n"


async def test_mention_without_allowed_domains_has_no_web(model: FakeAnthropic, machine: Machine) -> None:
    calls = {
        "webfetch": ToolUse("WebFetch", {"url": "https://example.com/", "prompt": "read"}),
        "websearch": ToolUse("WebSearch", {"query": "kodiai"}),
    }
    _, out = await attack(model, machine, calls, event_type="issue_comment.created", issue_number=7)
    assert out["webfetch"].is_error and out["websearch"].is_error
    assert "WebFetch" not in [t.get("name") for t in model.main_requests[0].body.get("tools", [])]


async def test_sandbox_off_still_loads_no_project_settings(model: FakeAnthropic, machine: Machine) -> None:
    """``AGENT_SANDBOX=off``: the CLI is unconfined (it reads the data directory: the operator's risk),
    but it still loads none of the workspace's settings, runs with its own HOME and no foreign env."""
    calls = {"data_abs": read(machine.env_file)}
    _, out = await attack(model, machine, calls, sandbox=AgentSandbox(enabled=False, run_root=machine.runs))
    assert DATA_SENTINEL in out["data_abs"].text  # no sandbox: exactly why it is on by default
    assert_untrusted_settings_ignored(model, machine)
    assert ENV_SENTINEL not in everything_sent(model)
    assert list(machine.runs.iterdir()) == [] and not (machine.home / ".claude").exists()


async def test_sandbox_that_cannot_start_fails_closed(model: FakeAnthropic, machine: Machine) -> None:
    metrics = Metrics(CollectorRegistry())
    sandbox = AgentSandbox(bwrap=str(machine.root / "bin" / "bwrap"), run_root=machine.runs)  # no such file
    result = await executor(model, sandbox, metrics).execute(context(machine))

    assert result.conclusion == "error" and result.published is False
    assert (result.error_message or "").startswith("agent sandbox unavailable: cannot execute")
    assert model.requests == [], "the model is never called"
    assert metrics.registry.get_sample_value("kodiai_agent_sandbox_failures_total") == 1
    assert list(machine.runs.iterdir()) == []


def processes_of(run_root: Path) -> list[int]:
    """Pids whose environment names ``run_root`` (bwrap and the CLI carry the run's HOME)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(run_root).encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_timeout_leaves_no_sandboxed_process(model: FakeAnthropic, machine: Machine) -> None:
    """On a timeout the SDK terminates bwrap; ``--die-with-parent`` takes the CLI inside with it."""
    model.script = lambda _request: Hang()
    sandbox = AgentSandbox(run_root=machine.runs)
    result = await executor(model, sandbox).execute(context(machine, dynamic_timeout_seconds=4))
    assert result.is_timeout is True
    assert model.main_requests, "the CLI was running (its request hung) when the timeout hit"
    deadline = time.monotonic() + 10
    while processes_of(machine.runs) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of(machine.runs) == []
    assert list(machine.runs.iterdir()) == []
