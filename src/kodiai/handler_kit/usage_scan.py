"""Package usage scan in a workspace with ``git grep`` (behaviour R2.12) — the I/O half of usage analysis.

The pure helpers live in :mod:`kodiai.handler_kit.usage`. Here a runner executes ``git`` (injectable, so tests
can make it slow or fail), a time budget bounds it, and nothing ever raises. It is in the handler kit because
:class:`~kodiai.handler_kit.deps.HandlerDeps` carries it as the injectable ``usage_analyzer``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel, Field

from kodiai.github.git_env import git_child_env
from kodiai.handler_kit.usage import UsageEvidence, build_search_terms, parse_git_grep_output
from kodiai.log import get_logger

__all__ = [
    "GrepResult",
    "GrepRunner",
    "UsageAnalysisResult",
    "analyze_package_usage",
    "build_grep_command",
    "run_git",
    "with_time_budget",
]

MAX_EVIDENCE = 20
DEFAULT_TIME_BUDGET_MS = 3000

T = TypeVar("T")


class GrepResult(BaseModel):
    exit_code: int
    stdout: str


class UsageAnalysisResult(BaseModel):
    evidence: list[UsageEvidence] = Field(default_factory=list)
    search_terms: list[str] = Field(default_factory=list)
    timed_out: bool = False


GrepRunner = Callable[[Sequence[str]], Awaitable[GrepResult]]


async def run_git(argv: Sequence[str]) -> GrepResult:
    """Run ``argv`` (a ``git`` command, the hardened allow-listed environment) and capture stdout; the
    process is killed if the call is cancelled."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=git_child_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        stdout, _ = await proc.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    return GrepResult(exit_code=proc.returncode or 0, stdout=stdout.decode("utf-8", errors="replace"))


async def with_time_budget(work: Awaitable[T], ms: float) -> T | None:
    """``work``'s result, or ``None`` when ``ms`` milliseconds pass first (the work is cancelled)."""
    try:
        return await asyncio.wait_for(work, timeout=ms / 1000)
    except TimeoutError:
        return None


def build_grep_command(workspace_dir: str, terms: Sequence[str]) -> list[str]:
    """``git -C <dir> grep -rn --max-count=20 -e <terms joined by \\|> --`` (GNU BRE alternation,
    unescaped, R4.37 X-38). The pattern is an ``-e`` argument and ``--`` ends the options, so a term from a
    pull request (a dependency named ``--output=x``) is only ever a pattern."""
    pattern = "\\|".join(terms)
    return ["git", "-C", workspace_dir, "grep", "-rn", f"--max-count={MAX_EVIDENCE}", "-e", pattern, "--"]


async def analyze_package_usage(
    workspace_dir: str,
    package_name: str,
    breaking_change_snippets: Sequence[str],
    ecosystem: str | None = None,
    time_budget_ms: float = DEFAULT_TIME_BUDGET_MS,
    runner: GrepRunner = run_git,
) -> UsageAnalysisResult:
    """Find where the package (and the APIs its breaking changes name) is used. Never raises."""
    del ecosystem  # accepted for parity with the original's signature; not used
    terms = build_search_terms(package_name, breaking_change_snippets)
    if not terms:
        return UsageAnalysisResult()
    try:
        result = await with_time_budget(runner(build_grep_command(workspace_dir, terms)), time_budget_ms)
    except Exception as exc:
        get_logger(__name__).warning("usage analysis failed", error=str(exc))
        return UsageAnalysisResult(search_terms=terms)
    if result is None:
        return UsageAnalysisResult(search_terms=terms, timed_out=True)
    if result.exit_code != 0 or not result.stdout:
        return UsageAnalysisResult(search_terms=terms)
    return UsageAnalysisResult(
        evidence=parse_git_grep_output(result.stdout)[:MAX_EVIDENCE], search_terms=terms
    )
