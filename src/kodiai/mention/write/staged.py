"""Reading a workspace's staged change set and enforcing the write policy on it (git I/O).

Works with anything exposing ``async git(*args) -> str`` (:class:`kodiai.github.workspace.Workspace`):
the workspace passes the installation token to git through its environment, never argv, and redacts
its error messages, so nothing here can leak it. Policy messages never quote file content.

Every staged file's added lines and the commit message pass the secret scanner (the token detectors and
the server's own secret values always; entropy under ``write.secretScan.enabled``) before anything is
committed; a hit refuses the write, is logged without the value and counted
(``kodiai_outbound_secret_hits_total{surface="pushed_file"|"commit_message",action="refused"}``). Diffs
are read with ``--text --no-textconv``, so neither a binary-looking file nor a textconv driver hides what
is really pushed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kodiai.github.branch_names import validate_branch_name
from kodiai.mention.write.policy import (
    WritePolicy,
    WritePolicyError,
    added_lines,
    check_commit_message,
    check_write_policy,
)
from kodiai.outbound import known_secrets, report_hit

__all__ = [
    "GitWorkspace",
    "PushedCommit",
    "StagedChanges",
    "commit_and_push",
    "enforce_write_policy",
    "read_staged_changes",
    "stage_all",
    "staged_paths",
]


class GitWorkspace(Protocol):
    async def git(self, *args: str) -> str: ...


@dataclass(frozen=True)
class StagedChanges:
    """What ``git diff --cached`` holds: the paths (deletions included, renames as the new path) and,
    per path, the added lines of its diff (without the leading ``+``)."""

    paths: tuple[str, ...]
    added_lines_by_path: dict[str, list[str]]


async def stage_all(ws: GitWorkspace) -> None:
    """``git add -A``: every edit, addition and deletion of the work tree."""
    await ws.git("add", "-A")


async def staged_paths(ws: GitWorkspace) -> list[str]:
    """``git diff --cached --name-only``, NUL-separated so that unusual names arrive unquoted."""
    out = await ws.git("diff", "--cached", "--name-only", "-z")
    return [name for name in out.split("\0") if name]


async def read_staged_changes(ws: GitWorkspace, *, with_diffs: bool = True) -> StagedChanges:
    """The staged paths and, when ``with_diffs``, each path's ``git diff --cached -- <path>`` added lines."""
    paths = await staged_paths(ws)
    by_path: dict[str, list[str]] = {}
    if with_diffs:
        for path in paths:
            diff = await ws.git(
                "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--", path
            )
            by_path[path] = added_lines(diff)
    return StagedChanges(tuple(paths), by_path)


async def enforce_write_policy(ws: GitWorkspace, policy: WritePolicy) -> StagedChanges:
    """Read what is staged and raise :class:`~kodiai.mention.write.policy.WritePolicyError` when the
    policy refuses it (``write-policy-no-changes`` when nothing is staged). Does not stage anything."""
    changes = await read_staged_changes(ws)
    try:
        check_write_policy(
            changes.paths,
            changes.added_lines_by_path,
            policy.deny_paths,
            policy.allow_paths,
            policy.secret_scan,
            known=known_secrets(),
        )
    except WritePolicyError as error:
        _report_secret(error, "pushed_file")
        raise
    return changes


def _report_secret(error: WritePolicyError, surface: str) -> None:
    if error.code == "write-policy-secret-detected":
        report_hit(surface, "refused", [error.detector or "unknown"], path=error.path)


@dataclass(frozen=True)
class PushedCommit:
    """A commit made and pushed by :func:`commit_and_push`."""

    remote_ref: str
    head_sha: str
    paths: tuple[str, ...]


async def commit_and_push(
    ws: GitWorkspace,
    *,
    remote_ref: str,
    message: str,
    policy: WritePolicy,
    new_branch: str | None = None,
    remote: str = "origin",
) -> PushedCommit:
    """The publishing sequence of write mode: validate the ref(s); optionally ``git checkout -b
    <new_branch>``; stage everything; refuse by policy (nothing staged included) or for a secret in the
    commit message; commit; push ``HEAD``
    to ``refs/heads/<remote_ref>``. Returns the pushed sha. Git failures propagate (redacted by the
    workspace); policy refusals raise ``WritePolicyError`` before anything is committed.
    """
    validate_branch_name(remote_ref)
    if new_branch is not None:
        validate_branch_name(new_branch)
        await ws.git("checkout", "--quiet", "-b", new_branch)
    await stage_all(ws)
    changes = await enforce_write_policy(ws, policy)
    try:
        check_commit_message(message, known_secrets())
    except WritePolicyError as error:
        _report_secret(error, "commit_message")
        raise
    await ws.git("commit", "--quiet", "-m", message)
    head = (await ws.git("rev-parse", "HEAD")).strip()
    await ws.git("push", "--quiet", remote, f"HEAD:refs/heads/{remote_ref}")
    return PushedCommit(remote_ref, head, changes.paths)
