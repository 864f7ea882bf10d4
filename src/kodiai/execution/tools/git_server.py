"""``git``: ``diff``, ``log``, ``show`` and ``status`` on the workspace, without a shell.

Why: ``Bash(git log:*)`` let the model run ``git log --output=.git/config`` (planting a
``core.fsmonitor`` command the server's next ``git status`` ran with the installation token in its
environment) and ``git diff --output=/any/path``. These tools run a fixed sub-command with the typed
arguments of :mod:`kodiai.execution.tools.git_args` only, in the server process (outside the agent's
sandbox), so each run is hardened as the server's own git is (:mod:`kodiai.github.git_env`): the
repository's hooks, ``core.fsmonitor``, filter, textconv and external-diff drivers never run, the
environment holds no secret and no token, and ``GIT_OPTIONAL_LOCKS=0`` keeps ``status`` from writing the
index. Every run has a timeout.

Answers are plain text, one page of at most :data:`~kodiai.execution.tools.git_page.PAGE_BYTES` of git's
output per call (:mod:`kodiai.execution.tools.git_page`): the Claude Code CLI keeps a larger tool result
from the model, and a JSON line could not be paged. A cut answer ends with the call that gets the next
part (``offset``) and, for a diff, the files in it; git itself stops once the page is full.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server, tool
from claude_agent_sdk.types import McpSdkServerConfig

from kodiai.execution.tools.common import (
    SERVER_VERSION,
    ToolEnv,
    ToolResult,
    guarded,
    input_schema,
    parse_args,
)
from kodiai.execution.tools.git_args import (
    GLOBAL_ARGS,
    DiffArgs,
    LogArgs,
    ShowArgs,
    StatusArgs,
    diff_argv,
    diff_names_argv,
    log_argv,
    named_paths,
    show_argv,
    status_argv,
)
from kodiai.execution.tools.git_page import PAGE_BYTES, Page, Pager, page_note
from kodiai.github.git_env import (
    check_git_dir,
    config_overlay,
    git_child_env,
    list_config_keys_async,
    neutralizing_config,
)
from kodiai.github.git_stream import close_pipes
from kodiai.log import redact

SERVER_NAME = "git"
#: What a cut diff's note reads of its file names (``--name-only``): enough to count them.
NAMES_BYTES = 256 * 1024
STDERR_TAIL_BYTES = 2000
TIMEOUT_SECONDS = 30.0
_CHUNK = 64 * 1024

A = TypeVar("A", DiffArgs, LogArgs, ShowArgs, StatusArgs)


class GitToolError(RuntimeError):
    """git failed, timed out or was refused; the message goes back to the model as ``Error: …``."""


async def _read_page(stream: asyncio.StreamReader, pager: Pager) -> None:
    """Feed ``stream`` to ``pager`` until its page is full (the reader stops there) or the stream ends."""
    while chunk := await stream.read(_CHUNK):
        if pager.feed(chunk):
            return


async def _tail(stream: asyncio.StreamReader, limit: int) -> bytes:
    """The last ``limit`` bytes of ``stream``, read to its end (a child never blocks on a full pipe)."""
    tail = b""
    while chunk := await stream.read(_CHUNK):
        tail = (tail + chunk)[-limit:]
    return tail


def _has_exited(pid: int) -> bool:
    """True once the child exited, without reaping it: killing an exited child makes ``Popen`` reap it
    behind asyncio's watcher, which then logs "Unknown child process" and reports exit code 255 (common
    now that a page is smaller than the pipe's buffer, so git is often done when the page is full)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


async def _stop(proc: asyncio.subprocess.Process, stdout: asyncio.StreamReader) -> None:
    """Kill the child if it still runs, then reap it. ``wait()`` resolves only once every pipe is closed,
    and a stdout the reader stopped draining stays paused (never sees its end): drain it first."""
    if proc.returncode is None and not _has_exited(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(5):
            while await stdout.read(_CHUNK):
                pass
    await proc.wait()


async def run_workspace_git(
    workspace: Path,
    argv: list[str],
    *,
    timeout: float = TIMEOUT_SECONDS,
    offset: int = 0,
    limit: int = PAGE_BYTES,
) -> Page:
    """``git <GLOBAL_ARGS> <argv>`` in ``workspace``: the page of its output after ``offset`` lines, at
    most ``limit`` bytes; raise :class:`GitToolError`."""
    try:
        check_git_dir(workspace)
        neutral = neutralizing_config(await list_config_keys_async(workspace))
    except (RuntimeError, OSError) as exc:
        raise GitToolError(f"git refused: {exc}") from None
    env = git_child_env({**config_overlay(neutral), "GIT_OPTIONAL_LOCKS": "0"})
    proc = await asyncio.create_subprocess_exec(
        "git",
        *GLOBAL_ARGS,
        *argv,
        cwd=str(workspace),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr_task = asyncio.ensure_future(_tail(proc.stderr, STDERR_TAIL_BYTES))
    pager = Pager(offset=offset, limit=limit)
    try:
        async with asyncio.timeout(timeout):
            await _read_page(proc.stdout, pager)
            if not pager.full:
                # wait, never kill, a child that is exiting anyway: Popen.send_signal polls (reaps) it
                # first, and asyncio's watcher then reports exit code 255
                await proc.wait()
    except TimeoutError:
        raise GitToolError(f"git {argv[0]} timed out after {timeout:g}s; narrow the range or paths") from None
    finally:
        await _stop(proc, proc.stdout)
        err = await stderr_task
        close_pipes(proc)
    if proc.returncode != 0 and not pager.full:
        detail = redact(err.decode("utf-8", "replace").strip()[-STDERR_TAIL_BYTES:])
        raise GitToolError(f"git {argv[0]} failed (exit {proc.returncode}): {detail}")
    if pager.past_end:
        raise GitToolError(f"offset {offset} is past the end of the output ({pager.skipped} lines)")
    return pager.page()


def answer(page: Page, note: str | None) -> ToolResult:
    """Plain text: git's output, then the note on a line of its own."""
    text = page.text() or "(git printed nothing for these arguments)"
    if note:
        text += ("" if text.endswith("\n") else "\n") + note
    return {"content": [{"type": "text", "text": text}]}


async def diff_files(workspace: Path, args: DiffArgs) -> tuple[list[str], bool]:
    """The names of the files a diff covers (``True``: more than were read)."""
    page = await run_workspace_git(workspace, diff_names_argv(args), limit=NAMES_BYTES)
    return page.text().splitlines(), page.more


def _workspace(env: ToolEnv) -> Path:
    if env.workspace_dir is None:
        raise GitToolError("no workspace for this run")
    return env.workspace_dir


def check_inside(workspace: Path, paths: list[str]) -> None:
    """Refuse a path that leaves the workspace (``../``, or through a symlink the PR committed): git would
    look at the host's file system there, and its answer ("exists on disk, but not in HEAD") tells the
    model whether a server file exists. The same refusal whether the target exists or not."""
    root = os.path.realpath(workspace)
    for path in paths:
        resolved = os.path.realpath(os.path.join(root, path))
        if resolved != root and not resolved.startswith(root + os.sep):
            raise GitToolError(f"path leaves the workspace: {path}")


def _handler(
    env: ToolEnv, name: str, model: type[A], to_argv: Callable[[A], list[str]]
) -> Callable[[dict[str, Any]], Any]:
    async def handle(args: dict[str, Any]) -> ToolResult:
        params = parse_args(model, args)
        workspace = _workspace(env)
        check_inside(workspace, named_paths(params))
        page = await run_workspace_git(workspace, to_argv(params), offset=params.offset)
        files = None
        listing = page.more and not params.offset  # the first page of a cut diff lists its files
        if listing and isinstance(params, DiffArgs) and not (params.stat or params.name_only):
            files = await diff_files(workspace, params)
        return answer(page, page_note(name, page, files))

    return guarded(handle)


#: Said in every tool's description: the model sees it before its first call.
PAGING = (
    f"Plain-text output, at most {PAGE_BYTES:,} bytes per call; a longer answer ends with a note "
    'giving the "offset" of the next part.'
)


def git_tools(env: ToolEnv) -> list[SdkMcpTool[Any]]:
    """The four tools, bound to ``env`` (its ``workspace_dir``)."""
    return [
        tool(
            "diff",
            "git diff in the workspace (typed options only; paths are literal and go after --). "
            "On a large change list the files first (stat or nameOnly), then diff one file at a time "
            f"(paths). {PAGING}",
            input_schema(DiffArgs),
        )(_handler(env, "diff", DiffArgs, diff_argv)),
        tool(
            "log",
            f"git log in the workspace: commits of a revision or range, optionally with diffs. {PAGING}",
            input_schema(LogArgs),
        )(_handler(env, "log", LogArgs, log_argv)),
        tool(
            "show",
            f"git show: a commit's message and diff, or a file at a revision ('rev:path'). {PAGING}",
            input_schema(ShowArgs),
        )(_handler(env, "show", ShowArgs, show_argv)),
        tool(
            "status",
            "git status --porcelain of the workspace (branch line included)",
            input_schema(StatusArgs),
        )(_handler(env, "status", StatusArgs, status_argv)),
    ]


def create_git_server(env: ToolEnv) -> McpSdkServerConfig:
    return create_sdk_mcp_server(name=SERVER_NAME, version=SERVER_VERSION, tools=git_tools(env))
