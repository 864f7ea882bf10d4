"""Diff collection (spec/review.md §1 step 20): which files changed and how, with real ``git``.

The range is triple-dot from the merge base when one exists. A shallow clone often lacks it, so the base
fetch is deepened (50, 150, 300), then unshallowed, before falling back to a two-dot range. Fail-closed:
a failing two-dot listing, numstat or full diff reaches the job's outer catch.

The workspace is anything with an async ``git(*args) -> stdout`` that raises on a non-zero exit: the
cloned webhook workspace, or a local checkout for ``kodiai review`` (which has no remote to deepen).
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kodiai.github.workspace import GitCommandError

MAX_FILES_FOR_FULL_DIFF = 200
DEEPEN_STEPS = (50, 150, 300)

Strategy = Literal["triple-dot", "deepened-triple-dot", "fallback-two-dot"]


class GitWorkspace(Protocol):
    async def git(self, *args: str) -> str: ...


class DiffCollection(BaseModel):
    model_config = ConfigDict(frozen=True)

    changed_files: list[str]
    numstat_lines: list[str]
    diff_content: str | None
    strategy: Strategy
    merge_base_recovered: bool
    deepen_attempts: int
    unshallow_attempted: bool
    diff_range: str


async def _has_merge_base(ws: GitWorkspace, base: str, head: str) -> bool:
    try:
        await ws.git("merge-base", base, head)
    except GitCommandError:
        return False
    return True


async def _lines(ws: GitWorkspace, *args: str) -> list[str]:
    return [line for line in (await ws.git(*args)).split("\n") if line.strip()]


async def collect_diff(
    ws: GitWorkspace, base: str, *, base_ref: str | None, head: str = "HEAD"
) -> DiffCollection:
    """Collect the diff of ``head`` against ``base`` (``origin/<ref>`` or a commit).

    ``base_ref`` names the remote branch to deepen when there is no merge base (None: nothing to fetch).
    """
    deepen_attempts = 0
    unshallow = False
    recovered = False
    found = await _has_merge_base(ws, base, head)
    if not found and base_ref is not None:
        refspec = f"{base_ref}:refs/remotes/origin/{base_ref}"
        for step in DEEPEN_STEPS:
            deepen_attempts += 1
            try:
                await ws.git("fetch", "--quiet", "origin", refspec, f"--deepen={step}")
            except GitCommandError:
                continue
            if await _has_merge_base(ws, base, head):
                found = recovered = True
                break
        if not found:
            unshallow = True
            try:
                await ws.git("fetch", "--quiet", "--unshallow", "origin", refspec)
                found = recovered = await _has_merge_base(ws, base, head)
            except GitCommandError:
                found = False
    strategy: Strategy = (
        ("deepened-triple-dot" if recovered else "triple-dot") if found else "fallback-two-dot"
    )
    diff_range = f"{base}...{head}" if found else f"{base}..{head}"
    try:
        changed = await _lines(ws, "diff", diff_range, "--name-only")
    except GitCommandError:
        if not found:
            raise
        strategy, diff_range = "fallback-two-dot", f"{base}..{head}"
        changed = await _lines(ws, "diff", diff_range, "--name-only")
    numstat = await _lines(ws, "diff", diff_range, "--numstat")
    content = await ws.git("diff", diff_range) if len(changed) <= MAX_FILES_FOR_FULL_DIFF else None
    return DiffCollection(
        changed_files=changed,
        numstat_lines=numstat,
        diff_content=content,
        strategy=strategy,
        merge_base_recovered=recovered,
        deepen_attempts=deepen_attempts,
        unshallow_attempted=unshallow,
        diff_range=diff_range,
    )
