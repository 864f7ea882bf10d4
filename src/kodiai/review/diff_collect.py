"""Diff collection (behaviour R1 step 20): which files changed and how, with real ``git``.

The range is triple-dot from the merge base when one exists. A shallow clone often lacks it, so the base
fetch is deepened (50, 150, 300), then unshallowed, before falling back to a two-dot range. Fail-closed:
a failing two-dot listing, numstat or full diff reaches the job's outer catch.

A pull request's content is hostile input, so every output is streamed with a cap (:class:`DiffLimits`)
and parsed NUL-separated (:mod:`kodiai.review.diff_parse`): the file list and numstat stop at
``max_files`` entries; a file larger than ``max_file_bytes`` is left out of the full diff and noted;
the full diff is read for its hunk count up to ``max_diff_bytes`` and kept only while the content risk
scan would read it. Paths never reach git's argv except as literal pathspecs after ``--``.

The workspace is a :class:`kodiai.github.workspace.Workspace`: the cloned webhook workspace, or a local
checkout for ``kodiai review`` (which has no remote to deepen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kodiai.github.git_stream import Consumer, StreamOutcome
from kodiai.github.workspace import GitCommandError
from kodiai.review.diff_analysis import CONTENT_SCAN_LIMIT
from kodiai.review.diff_parse import (
    ChangedFile,
    DiffReader,
    NumstatListing,
    RawListing,
    parse_blob_sizes,
)
from kodiai.text.git_path import markdown_code

MAX_FILES_FOR_FULL_DIFF = 200
DEEPEN_STEPS = (50, 150, 300)
MIB = 1024 * 1024

#: Options every diff the server runs gets: no external diff or textconv driver (a repository's
#: configuration names commands), no colour codes in what is parsed.
SAFE_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv")

Strategy = Literal["triple-dot", "deepened-triple-dot", "fallback-two-dot"]


class DiffLimits(BaseModel):
    """How much of a pull request's diff the server reads (see docs/review-handler.md, "Diff limits")."""

    model_config = ConfigDict(frozen=True)

    max_files: int = 10_000
    """Changed files listed, counted and risk-scored; a PR with more is triaged over the first ones."""
    max_listing_bytes: int = 64 * MIB
    """Bytes of file list or numstat read (10,000 paths of 4 KB each fit)."""
    max_file_bytes: int = 8 * MIB
    """A file whose base or head version is larger has its diff omitted (with a note)."""
    max_diff_bytes: int = 64 * MIB
    """Bytes of the full diff read (for the hunk count) before git is stopped."""
    keep_diff_bytes: int = 4 * CONTENT_SCAN_LIMIT
    """Diff text kept for the content risk scan, which reads diffs under ``CONTENT_SCAN_LIMIT``
    characters only (a UTF-8 character is at most 4 bytes, so a longer diff is never scanned)."""


DEFAULT_LIMITS = DiffLimits()


class GitWorkspace(Protocol):
    async def git(self, *args: str) -> str: ...

    async def git_stream(
        self, args: Sequence[str], consume: Consumer, *, max_bytes: int, stdin: bytes | None = None
    ) -> StreamOutcome: ...


class OmittedDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    size_bytes: int


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
    hunks_count: int | None = None
    """Hunks over the diff read (None: the full diff was not collected)."""
    omitted_diffs: list[OmittedDiff] = []
    files_capped: bool = False
    """More files changed than ``limits.max_files``; only the first ones are listed."""
    diff_capped: bool = False
    """The full diff was longer than ``limits.max_diff_bytes``; reading stopped there."""
    limits: DiffLimits = DEFAULT_LIMITS

    @property
    def notes(self) -> list[str]:
        """What the limits left out, one line each, for the prompt and the Review Details."""
        return diff_notes(self)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


def diff_notes(diff: DiffCollection) -> list[str]:
    limits = diff.limits
    notes = [
        f"Diff of {markdown_code(o.path)} omitted: the file is {_mib(o.size_bytes)} "
        f"(limit {_mib(limits.max_file_bytes)} per file)"
        for o in diff.omitted_diffs
    ]
    if diff.files_capped:
        notes.append(
            f"File list capped at {limits.max_files} files: the PR changes more; only the first "
            f"{limits.max_files} (in path order) were triaged"
        )
    if diff.diff_capped:
        notes.append(f"Diff read up to {_mib(limits.max_diff_bytes)}; the hunk count covers that part only")
    return notes


async def _has_merge_base(ws: GitWorkspace, base: str, head: str) -> bool:
    try:
        await ws.git("merge-base", base, head)
    except GitCommandError:
        return False
    return True


async def list_changed_files(ws: GitWorkspace, diff_range: str, limits: DiffLimits) -> RawListing:
    """The changed files (``--raw -z``: raw names, blob ids, statuses), at most ``limits.max_files``."""
    listing = RawListing(limits.max_files)
    outcome = await ws.git_stream(
        ["diff", "--raw", "-z", "--no-abbrev", *SAFE_DIFF_OPTIONS, diff_range, "--"],
        listing.feed,
        max_bytes=limits.max_listing_bytes,
    )
    listing.capped = listing.capped or outcome.stopped
    return listing


async def list_numstat(ws: GitWorkspace, diff_range: str, limits: DiffLimits) -> NumstatListing:
    numstat = NumstatListing(limits.max_files)
    outcome = await ws.git_stream(
        ["diff", "--numstat", "-z", *SAFE_DIFF_OPTIONS, diff_range, "--"],
        numstat.feed,
        max_bytes=limits.max_listing_bytes,
    )
    numstat.capped = numstat.capped or outcome.stopped
    return numstat


async def blob_sizes(ws: GitWorkspace, files: Sequence[ChangedFile]) -> dict[str, int]:
    """Sizes of the files' base and head blobs (one ``cat-file --batch-check``; submodules left out)."""
    blobs = sorted(
        {
            blob
            for f in files
            for blob, mode in ((f.old_blob, f.old_mode), (f.new_blob, f.new_mode))
            if mode.startswith(("100", "120")) and blob.strip("0")
        }
    )
    if not blobs:
        return {}
    out = bytearray()

    def keep(chunk: bytes) -> bool:
        out.extend(chunk)
        return True

    await ws.git_stream(
        ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
        keep,
        max_bytes=len(blobs) * 128,
        stdin=("\n".join(blobs) + "\n").encode("ascii"),
    )
    return parse_blob_sizes(bytes(out))


def oversized(files: Sequence[ChangedFile], sizes: dict[str, int], limit: int) -> list[OmittedDiff]:
    """Files whose base or head version exceeds ``limit`` bytes and whose content changed."""
    omitted = []
    for f in files:
        size = max(sizes.get(f.old_blob, 0), sizes.get(f.new_blob, 0))
        if f.content_changed and size > limit:
            omitted.append(OmittedDiff(path=f.path, size_bytes=size))
    return omitted


def exclude_pathspecs(files: Sequence[ChangedFile], omitted: Sequence[OmittedDiff]) -> list[str]:
    """``:(exclude,literal)<path>`` for each omitted file and a renamed one's source: the name is
    matched literally (no glob, no magic), whatever characters it holds."""
    names = {o.path for o in omitted}
    out: list[str] = []
    for f in files:
        if f.path in names:
            out += [f":(exclude,literal){p}" for p in (f.old_path, f.path) if p is not None]
    return out


async def read_full_diff(
    ws: GitWorkspace, diff_range: str, excludes: Sequence[str], limits: DiffLimits
) -> tuple[DiffReader, bool]:
    """The patch, streamed: ``(reader, capped)``."""
    reader = DiffReader(limits.keep_diff_bytes)
    outcome = await ws.git_stream(
        ["diff", *SAFE_DIFF_OPTIONS, diff_range, "--", *excludes],
        reader.feed,
        max_bytes=limits.max_diff_bytes,
    )
    reader.finish()
    return reader, outcome.stopped


async def collect_diff(
    ws: GitWorkspace,
    base: str,
    *,
    base_ref: str | None,
    head: str = "HEAD",
    limits: DiffLimits = DEFAULT_LIMITS,
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
        listing = await list_changed_files(ws, diff_range, limits)
    except GitCommandError:
        if not found:
            raise
        strategy, diff_range = "fallback-two-dot", f"{base}..{head}"
        listing = await list_changed_files(ws, diff_range, limits)
    numstat = await list_numstat(ws, diff_range, limits)
    content: str | None = None
    hunks: int | None = None
    omitted: list[OmittedDiff] = []
    diff_capped = False
    if len(listing.files) <= MAX_FILES_FOR_FULL_DIFF and not listing.capped:
        omitted = oversized(listing.files, await blob_sizes(ws, listing.files), limits.max_file_bytes)
        reader, diff_capped = await read_full_diff(
            ws, diff_range, exclude_pathspecs(listing.files, omitted), limits
        )
        hunks = reader.hunks.count
        # a diff with a part left out is not the diff: no content scan over what remains
        content = None if omitted or diff_capped else reader.text
    return DiffCollection(
        changed_files=listing.paths,
        numstat_lines=numstat.lines,
        diff_content=content,
        strategy=strategy,
        merge_base_recovered=recovered,
        deepen_attempts=deepen_attempts,
        unshallow_attempted=unshallow,
        diff_range=diff_range,
        hunks_count=hunks,
        omitted_diffs=omitted,
        files_capped=listing.capped or numstat.capped,
        diff_capped=diff_capped,
        limits=limits,
    )
