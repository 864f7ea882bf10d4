"""Incremental re-review helpers (behaviour R2.17, R1 steps 19 and 27).

``compute_incremental_diff`` asks git (in the job's local workspace) which files changed since the last
reviewed head SHA. Git runs through an injectable runner, so the decision logic is testable and the
handler controls the process call. Every failure degrades to a full review (fail-open).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel

from kodiai.compat.js import js_trim
from kodiai.github.git_env import UnsafeGitConfigError, harden_args, workspace_git_env
from kodiai.log import Logger, get_logger

DEEPEN_COMMITS = 100
#: NUL-separated raw names; no external diff or textconv driver from the repository's configuration.
NAME_ONLY_ARGS = ["diff", "--name-only", "-z", "--no-color", "--no-ext-diff", "--no-textconv"]


class GitResult(BaseModel):
    returncode: int
    stdout: str = ""


class GitRunner(Protocol):
    def __call__(self, args: Sequence[str], cwd: str) -> GitResult: ...


def run_git(args: Sequence[str], cwd: str) -> GitResult:
    """Run ``git <args>`` in ``cwd`` with the hardened environment (the repository's own driver keys
    neutralised, diffs without external drivers); a missing directory or a refused configuration is a
    failed command, not an exception."""
    if not Path(cwd).is_dir():
        return GitResult(returncode=128, stdout="")
    try:
        env = workspace_git_env(cwd)
    except (UnsafeGitConfigError, OSError, subprocess.SubprocessError):
        return GitResult(returncode=128, stdout="")
    proc = subprocess.run(
        ["git", *harden_args(args)], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    return GitResult(returncode=proc.returncode, stdout=proc.stdout)


class IncrementalDiffResult(BaseModel):
    mode: Literal["incremental", "full"]
    changed_files_since_last_review: list[str]
    last_reviewed_head_sha: str | None
    reason: str


def parse_name_only(stdout: str) -> list[str]:
    """The non-empty lines of ``git diff --name-only`` output."""
    return [line for line in (js_trim(raw) for raw in stdout.split("\n")) if line]


def parse_name_only_z(stdout: str) -> list[str]:
    """The paths of ``git diff --name-only -z`` output, raw (a newline, tab, quote or space is part of
    the name; git's quoted form would match none of the review's raw paths)."""
    return [name for name in stdout.split("\0") if name]


def _full(reason: str, sha: str | None) -> IncrementalDiffResult:
    return IncrementalDiffResult(
        mode="full", changed_files_since_last_review=[], last_reviewed_head_sha=sha, reason=reason
    )


def compute_incremental_diff(
    *,
    workspace_dir: str,
    repo: str,
    pr_number: int,
    get_last_reviewed_head_sha: Callable[[str, int], str | None],
    git: GitRunner = run_git,
    logger: Logger | None = None,
) -> IncrementalDiffResult:
    """Incremental mode from the last reviewed SHA, or full mode with the reason it could not be used.

    ``logger`` is the handler's bound logger (with the delivery id); the fail-open path warns on it.
    """
    log = logger if logger is not None else get_logger(__name__, repo=repo, pr_number=pr_number)
    try:
        sha = get_last_reviewed_head_sha(repo, pr_number)
        if not sha:
            return _full("no-prior-review", None)
        if git(["cat-file", "-t", sha], workspace_dir).returncode != 0:
            git(["fetch", f"--deepen={DEEPEN_COMMITS}"], workspace_dir)
            if git(["cat-file", "-t", sha], workspace_dir).returncode != 0:
                return _full("prior-sha-unreachable", sha)
        diff = git([*NAME_ONLY_ARGS, f"{sha}...HEAD", "--"], workspace_dir)
        if diff.returncode != 0:
            return _full("diff-computation-failed", sha)
        return IncrementalDiffResult(
            mode="incremental",
            changed_files_since_last_review=parse_name_only_z(diff.stdout),
            last_reviewed_head_sha=sha,
            reason=f"incremental-from-{sha[:7]}",
        )
    except Exception as exc:  # fail-open: any surprise means a full review
        log.warning("Incremental diff failed; falling back to a full review", error=str(exc))
        return _full("unexpected-error", None)


def select_review_files(changed_files: Sequence[str], incremental: IncrementalDiffResult | None) -> list[str]:
    """Step 27: in incremental mode with a non-empty since-list, keep only those files (changed-files order)."""
    if (
        incremental is None
        or incremental.mode != "incremental"
        or not incremental.changed_files_since_last_review
    ):
        return list(changed_files)
    since = set(incremental.changed_files_since_last_review)
    return [path for path in changed_files if path in since]
