"""The I/O of one CLI run's confinement: its private directory, the launcher the SDK starts, a probe that
the sandbox starts at all, and the cleanup (see :mod:`kodiai.execution.sandbox` for what is confined).

Fail closed: when bwrap is missing or the kernel refuses its namespaces, :func:`agent_run` raises
:class:`SandboxUnavailable` before the CLI (and so the model) is started.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from kodiai.execution import sandbox_launch
from kodiai.execution.sandbox import (
    SYSTEM_DIRS,
    AgentSandbox,
    RunLayout,
    SandboxSpec,
    bwrap_argv,
    env_policy,
    file_variable_paths,
    fixed_env,
    group_text,
    passwd_text,
    system_mounts,
)
from kodiai.log import get_logger

PROBE_ENV = {"PATH": "/usr/bin:/bin"}
PROBE_TIMEOUT_SECONDS = 30


class SandboxUnavailable(RuntimeError):
    """The sandbox could not start; the run must not go ahead without it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"agent sandbox unavailable: {reason}")


def bundled_cli() -> Path | None:
    """The Claude Code executable shipped inside claude-agent-sdk (what the SDK runs by default). Found
    without importing the SDK (seconds of CPU; the start-up sandbox check needs only the path)."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def resolve_cli(cli_path: str | Path | None) -> Path:
    """The real CLI the launcher starts: ``cli_path``, else the bundled one, else ``claude`` on PATH."""
    if cli_path is not None:
        return Path(cli_path).absolute()
    found = bundled_cli() or (Path(p) if (p := shutil.which("claude")) else None)
    if found is None:
        raise FileNotFoundError("Claude Code CLI not found (bundled or on PATH)")
    return found.absolute()


def host_system() -> dict[str, str | None]:
    """Which system directories exist here, and which are symlinks (merged /usr)."""
    host: dict[str, str | None] = {}
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            host[path] = os.readlink(path)
        elif os.path.isdir(path):
            host[path] = None
    return host


def bwrap_path(sandbox: AgentSandbox) -> str:
    """The bwrap executable: a path as given, a bare name looked up on PATH (unresolved: kept as is,
    so that the probe reports it missing)."""
    if "/" in sandbox.bwrap:
        return sandbox.bwrap
    return shutil.which(sandbox.bwrap) or sandbox.bwrap


def make_layout(sandbox: AgentSandbox) -> RunLayout:
    """A fresh private run directory with an empty ``HOME`` and the synthetic passwd/group files."""
    root = sandbox.run_root if sandbox.run_root is not None else Path(tempfile.gettempdir())
    layout = RunLayout(Path(tempfile.mkdtemp(prefix="kodiai-agent-", dir=root)).resolve())
    layout.config_dir.mkdir(parents=True)
    layout.tmp.mkdir()
    layout.passwd.write_text(passwd_text(layout), encoding="utf-8")
    layout.group.write_text(group_text(), encoding="utf-8")
    return layout


def remove_tree(path: Path) -> None:
    """Remove a run directory whatever the CLI left in it (read-only directories included)."""

    def retry(func: object, failed: str, _exc: object) -> None:
        parent = os.path.dirname(failed)
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, stat.S_IRWXU)
            shutil.rmtree(failed, ignore_errors=True)
        else:
            os.unlink(failed)

    if path.exists():
        shutil.rmtree(path, onerror=retry)


def sandbox_spec(
    sandbox: AgentSandbox,
    layout: RunLayout,
    workspace: Path,
    *,
    write_mode: bool,
    cli: Path,
    files: list[str],
) -> SandboxSpec:
    return SandboxSpec(
        bwrap=bwrap_path(sandbox),
        layout=layout,
        workspace=workspace,
        write_mode=write_mode,
        cli=cli,
        system=system_mounts(host_system()),
        extra_files=files,
    )


def probe_error(argv: list[str]) -> str | None:
    """Run ``argv + ["true"]``: None when the sandbox starts, else why not (bwrap's own message)."""
    try:
        done = subprocess.run(
            [*argv, "true"], env=PROBE_ENV, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS
        )
    except OSError as exc:
        return f"cannot execute {argv[0]}: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return f"{argv[0]} did not start within {PROBE_TIMEOUT_SECONDS}s"
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return lines[-1] if lines else f"{argv[0]} exited with status {done.returncode}"
    return None


def write_launcher(
    layout: RunLayout,
    command: list[str],
    env_names: Iterable[str],
    prefixes: Iterable[str],
    env_set: dict[str, str],
) -> None:
    """The plan (no secret: names and fixed values only) and the ``sh`` launcher the SDK executes."""
    plan: sandbox_launch.LaunchPlan = {
        "command": command,
        "env_names": sorted(env_names),
        "env_prefixes": list(prefixes),
        "env_set": env_set,
    }
    layout.plan.write_text(json.dumps(plan), encoding="utf-8")
    words = [sys.executable, "-I", "-S", sandbox_launch.__file__, str(layout.plan)]
    script = f'#!/bin/sh\nexec {shlex.join(words)} "$@"\n'
    layout.launcher.write_text(script, encoding="utf-8")
    layout.launcher.chmod(stat.S_IRWXU)


@asynccontextmanager
async def agent_run(
    sandbox: AgentSandbox,
    *,
    workspace: Path,
    write_mode: bool,
    cli_path: str | Path | None,
    endpoint_names: Iterable[str],
) -> AsyncIterator[RunLayout]:
    """Prepare one run: yields its layout (``layout.launcher`` is the SDK's ``cli_path``); the run
    directory — ``HOME`` and the CLI's config, transcripts and temp files — is removed afterwards,
    whatever happens. Raises :class:`SandboxUnavailable` (sandbox on) when bwrap cannot start."""
    layout = await anyio.to_thread.run_sync(make_layout, sandbox)
    try:
        cli = resolve_cli(cli_path)
        ws = workspace.resolve()
        policy = env_policy(endpoint_names)
        if sandbox.enabled:
            files = file_variable_paths(os.environ, policy)
            argv = bwrap_argv(sandbox_spec(sandbox, layout, ws, write_mode=write_mode, cli=cli, files=files))
            error = await anyio.to_thread.run_sync(probe_error, argv)
            if error is not None:
                raise SandboxUnavailable(error)
            command = [*argv, str(cli)]
        else:
            command = [str(cli)]
        env_set = fixed_env(layout, ws, sandboxed=sandbox.enabled)
        write_launcher(layout, command, policy.names, policy.prefixes, env_set)
        yield layout
    finally:
        await anyio.to_thread.run_sync(remove_tree, layout.run_dir)


def startup_check(sandbox: AgentSandbox) -> str | None:
    """At server start: None when a sandbox like a run's starts here, else why not."""
    layout = make_layout(sandbox)
    try:
        workspace = layout.run_dir / "workspace"
        workspace.mkdir()
        cli = bundled_cli() or Path("/usr/bin/true")
        spec = sandbox_spec(sandbox, layout, workspace, write_mode=False, cli=cli, files=[])
        return probe_error(bwrap_argv(spec))
    finally:
        remove_tree(layout.run_dir)


def log_startup_status(sandbox: AgentSandbox) -> bool:
    """Say at every server start whether agent runs will be sandboxed: a warning when the operator
    turned the sandbox off, an error when it cannot start here (every run will then be refused)."""
    log = get_logger("kodiai.execution.sandbox")
    if not sandbox.enabled:
        log.warning(
            "Agent sandbox is OFF (AGENT_SANDBOX=off): the Claude Code CLI runs unconfined, with the "
            "server user's access to files and processes; do not review untrusted pull requests like this"
        )
        return False
    error = startup_check(sandbox)
    if error is not None:
        log.error("Agent sandbox unavailable: every agent run will be refused", error=error)
        return False
    log.info("Agent sandbox ready", bwrap=bwrap_path(sandbox))
    return True
