"""Arguments of the ``git`` MCP tools: typed fields only, turned into a fixed argv (no shell, no free flag).

The model asks for a diff, a log, a commit or the status; it never writes a flag. A revision must match
:data:`REVISION_PATTERN` (no leading ``-``, no whitespace or control character, bounded length), paths go
after ``--`` under ``--literal-pathspecs`` (so ``-rf`` or ``--output=x`` is a file name, never an
option or pathspec magic), and the only options are the typed fields below. ``--output``, ``--ext-diff``,
``--textconv``, ``-c``, ``--exec``, ``--upload-pack`` cannot be expressed.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_REVISION_CHARS = 256
MAX_PATH_CHARS = 4096
MAX_PATHS = 100
MAX_LOG_COUNT = 200
DEFAULT_LOG_COUNT = 20
MAX_CONTEXT_LINES = 20
MAX_OFFSET = 10_000_000
#: ``--stat`` wide enough that a path is printed whole (git's default 80 columns shortens it to
#: ``.../x.py``, which the model could not pass back as a path), with a short graph.
STAT_ARGS = ("--stat=200", "--stat-graph-width=20")

#: A commit, ref, range (``a..b``, ``a...b``), ancestry (``HEAD~2``, ``HEAD^``), ``rev:path`` or
#: ``@{u}``: visible characters only (paths such as ``pages/[id].tsx`` or ``routes/$id.tsx`` included;
#: there is no shell), never whitespace, never starting with ``-``.
REVISION_PATTERN = re.compile(rf"[^\s\x00-\x1f\x7f]{{1,{MAX_REVISION_CHARS}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: Global options before every sub-command (paths are literal, no pager, no optional index writes).
GLOBAL_ARGS = ("--no-pager", "--literal-pathspecs")
#: After every sub-command that prints a diff.
DIFF_ARGS = ("--no-ext-diff", "--no-textconv", "--no-color")


def check_revision(value: str) -> str:
    """A revision the tools accept, or a ``ValueError`` saying why not."""
    if value.startswith("-"):
        raise ValueError("a revision may not start with '-'")
    if len(value) > MAX_REVISION_CHARS:
        raise ValueError(f"a revision is at most {MAX_REVISION_CHARS} characters")
    if not REVISION_PATTERN.fullmatch(value):
        raise ValueError(
            "a revision is a commit, branch, tag or range (e.g. HEAD~2, origin/main...HEAD, a sha, "
            "HEAD:path) without spaces or control characters"
        )
    return value


def check_path(value: str) -> str:
    """A repository-relative path (any name, even ``-rf``: it is passed after ``--``)."""
    if not value:
        raise ValueError("a path may not be empty")
    if len(value) > MAX_PATH_CHARS:
        raise ValueError(f"a path is at most {MAX_PATH_CHARS} characters")
    if _CONTROL.search(value):
        raise ValueError("a path may not contain NUL or control characters")
    if value.startswith("/"):
        raise ValueError("a path is relative to the repository root (no leading '/')")
    return value


Revision = Annotated[str, AfterValidator(check_revision)]
RepoPath = Annotated[str, AfterValidator(check_path)]
Paths = Annotated[
    list[RepoPath],
    Field(
        default_factory=list, max_length=MAX_PATHS, description="Limit to these paths (repository-relative)"
    ),
]
Offset = Annotated[
    int,
    Field(
        default=0,
        ge=0,
        le=MAX_OFFSET,
        description=(
            "Output lines to skip (0: from the start). An answer too long for one call ends with a note "
            "giving the offset of the next part"
        ),
    ),
]
ContextLines = Annotated[
    int | None,
    Field(default=None, ge=0, le=MAX_CONTEXT_LINES, alias="contextLines", description="Lines of context"),
]


class _Args(BaseModel):
    model_config = ConfigDict(populate_by_name=True, strict=True, extra="forbid")


class DiffArgs(_Args):
    revisions: list[Revision] = Field(
        default_factory=list,
        max_length=2,
        description=(
            "Zero to two revisions: none = working tree vs index; one = that revision or range "
            "(e.g. 'origin/main...HEAD', 'HEAD~2') vs the working tree, or the range; two = one vs the other"
        ),
    )
    paths: Paths
    staged: bool = Field(default=False, description="Compare the index (staged changes) instead")
    stat: bool = Field(default=False, description="Only a diffstat")
    name_only: bool = Field(default=False, alias="nameOnly", description="Only the changed file names")
    context_lines: ContextLines
    offset: Offset


class LogArgs(_Args):
    revision: Revision | None = Field(
        default=None, description="A revision or range, e.g. 'origin/main..HEAD' (default: HEAD)"
    )
    paths: Paths
    max_count: int = Field(
        default=DEFAULT_LOG_COUNT, ge=1, le=MAX_LOG_COUNT, alias="maxCount", description="At most this many"
    )
    oneline: bool = Field(default=False, description="One line per commit")
    patch: bool = Field(default=False, description="Include each commit's diff")
    stat: bool = Field(default=False, description="Include each commit's diffstat")
    name_only: bool = Field(default=False, alias="nameOnly", description="Include changed file names")
    offset: Offset


class ShowArgs(_Args):
    revision: Revision = Field(
        default="HEAD", description="A commit (its message and diff) or 'rev:path' (a file's content)"
    )
    paths: Paths
    stat: bool = Field(default=False, description="Only the diffstat of the commit")
    name_only: bool = Field(default=False, alias="nameOnly", description="Only the changed file names")
    context_lines: ContextLines
    offset: Offset


class StatusArgs(_Args):
    paths: Paths
    offset: Offset


def named_paths(args: DiffArgs | LogArgs | ShowArgs | StatusArgs) -> list[str]:
    """Every worktree path a call names: its ``paths`` and the path part of each ``rev:path`` revision
    (``:/message`` searches and ``@{…}`` reflog forms name no path)."""
    revisions: list[str] = []
    if isinstance(args, DiffArgs):
        revisions = list(args.revisions)
    elif isinstance(args, LogArgs | ShowArgs) and args.revision is not None:
        revisions = [args.revision]
    named = list(args.paths)
    for revision in revisions:
        _rev, colon, path = revision.partition(":")
        if colon and path and not path.startswith("/"):
            named.append(path)
    return named


def _diff_shape(stat: bool, name_only: bool, context_lines: int | None) -> list[str]:
    shape = list(STAT_ARGS) if stat else []
    if name_only:
        shape.append("--name-only")
    if context_lines is not None:
        shape.append(f"--unified={context_lines}")
    return shape


def _tail(paths: list[str]) -> list[str]:
    return ["--", *paths]


def diff_argv(args: DiffArgs) -> list[str]:
    cached = ["--cached"] if args.staged else []
    shape = _diff_shape(args.stat, args.name_only, args.context_lines)
    return ["diff", *DIFF_ARGS, *cached, *shape, *args.revisions, *_tail(args.paths)]


def diff_names_argv(args: DiffArgs) -> list[str]:
    """The names of the files ``args`` diffs (what a cut diff's note lists)."""
    listing = args.model_copy(update={"stat": False, "name_only": True, "context_lines": None})
    return diff_argv(listing)


def log_argv(args: LogArgs) -> list[str]:
    shape = ["--oneline"] if args.oneline else []
    shape += ["--patch"] if args.patch else []
    shape += _diff_shape(args.stat, args.name_only, None)
    revision = [args.revision] if args.revision else []
    return ["log", *DIFF_ARGS, f"--max-count={args.max_count}", *shape, *revision, *_tail(args.paths)]


def show_argv(args: ShowArgs) -> list[str]:
    shape = _diff_shape(args.stat, args.name_only, args.context_lines)
    # `rev:path` names a blob: a trailing `--` would make git read it as a path limit and print nothing
    tail = _tail(args.paths) if args.paths or ":" not in args.revision else []
    return ["show", *DIFF_ARGS, *shape, args.revision, *tail]


def status_argv(args: StatusArgs) -> list[str]:
    return ["status", "--porcelain=v1", "--branch", "--untracked-files=normal", *_tail(args.paths)]
