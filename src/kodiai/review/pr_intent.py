"""PR intent parsing: bracket tags, conventional-commit type and breaking-change signals (R2.8).

The regexes reproduce the original's JS regexes (no ``u`` flag): ``\\s`` is JS whitespace and ``/i``
folds ASCII letters only, hence :data:`kodiai.compat.js.JS_S` and ``re.ASCII | re.IGNORECASE``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kodiai.compat.js import JS_S, js_trim

__all__ = [
    "DEFAULT_EMPTY_INTENT",
    "RECOGNIZED_TAGS",
    "BracketTag",
    "BreakingChangeSource",
    "CommitMessage",
    "ConventionalCommitType",
    "ParsedPRIntent",
    "build_keyword_parsing_section",
    "parse_pr_intent",
    "sample_commits",
]

RECOGNIZED_TAGS = (
    "wip",
    "draft",
    "no-review",
    "strict-review",
    "balanced-review",
    "minimal-review",
    "security-review",
    "style-ok",
)
_PROFILE_RANK = {
    "minimal-review": (1, "minimal"),
    "balanced-review": (2, "balanced"),
    "strict-review": (3, "strict"),
}
CONVENTIONAL_TYPES = (
    "feat",
    "fix",
    "docs",
    "style",
    "refactor",
    "perf",
    "test",
    "build",
    "ci",
    "chore",
    "revert",
)
MAX_COMMITS_SCANNED_FULLY = 50
BODY_EXCERPT_CHARS = 120

_BRACKET_RE = re.compile(r"\[([^\]]+)\]")
_LEADING_BRACKETS_RE = re.compile(rf"^(?:{JS_S}*\[[^\]]+\]{JS_S}*)+")
_CONVENTIONAL_RE = re.compile(
    rf"^({'|'.join(CONVENTIONAL_TYPES)})(!)?(\([^)]+\))?{JS_S}*:", re.ASCII | re.IGNORECASE
)
_FENCED_RE = re.compile(r"```[\s\S]*?```")
_INLINE_CODE_RE = re.compile(r"`[^`]*`")
_BREAKING_I_RE = re.compile(
    rf"\bbreaking{JS_S}+changes?\b|\bthis{JS_S}+breaks\b|\bbreaking{JS_S}+api\b", re.ASCII | re.IGNORECASE
)
_BREAKING_RE = re.compile(r"BREAKING[- ]CHANGE")

TagSource = Literal["title", "body", "commit"]


class CommitMessage(BaseModel):
    sha: str
    message: str


class BracketTag(BaseModel):
    tag: str
    recognized: bool
    source: str
    commit_sha: str | None = None


class ConventionalCommitType(BaseModel):
    type: str
    is_breaking: bool
    source: str


class BreakingChangeSource(BaseModel):
    source: str
    excerpt: str
    commit_sha: str | None = None


class ParsedPRIntent(BaseModel):
    """Everything the keyword parser found in the title, body and commits."""

    model_config = ConfigDict(populate_by_name=True)

    bracket_tags: list[BracketTag] = Field(default_factory=list)
    conventional_type: ConventionalCommitType | None = None
    breaking_change_detected: bool = False
    breaking_change_sources: list[BreakingChangeSource] = Field(default_factory=list)
    no_review: bool = False
    is_wip: bool = False
    profile_override: str | None = None
    focus_areas: list[str] = Field(default_factory=list)
    style_ok: bool = False
    recognized: list[str] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list)


DEFAULT_EMPTY_INTENT = ParsedPRIntent()


def sample_commits(commits: Sequence[CommitMessage]) -> list[CommitMessage]:
    """All commits up to 50; beyond, the first 10, every 5th of the middle (``(i+1) % 5 == 0``), the last 10."""
    n = len(commits)
    if n <= MAX_COMMITS_SCANNED_FULLY:
        return list(commits)
    middle = [commits[i] for i in range(10, n - 10) if (i + 1) % 5 == 0]
    return [*commits[:10], *middle, *commits[n - 10 :]]


def _tags_in(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for match in _BRACKET_RE.finditer(text):
        seen.setdefault(js_trim(match.group(1)).lower(), None)
    return list(seen)


def _has_breaking_marker(text: str) -> bool:
    return bool(_BREAKING_I_RE.search(text) or _BREAKING_RE.search(text))


def _strip_code(body: str) -> str:
    return _INLINE_CODE_RE.sub(" ", _FENCED_RE.sub(" ", body))


def _commit(value: CommitMessage | dict[str, Any]) -> CommitMessage:
    return value if isinstance(value, CommitMessage) else CommitMessage.model_validate(value)


def parse_pr_intent(
    title: str,
    body: str | None,
    commits: Sequence[CommitMessage | dict[str, Any]] | None = None,
) -> ParsedPRIntent:
    """Parse the PR title, body and (sampled) commit messages for intent keywords."""
    sampled = sample_commits([_commit(c) for c in commits or []])

    tags: list[BracketTag] = []
    seen: set[str] = set()

    def collect(text: str, source: str, sha: str | None) -> None:
        for tag in _tags_in(text):
            if not tag:
                continue
            if tag in seen:
                continue
            seen.add(tag)
            tags.append(
                BracketTag(tag=tag, recognized=tag in RECOGNIZED_TAGS, source=source, commit_sha=sha or None)
            )

    collect(title, "title", None)
    for commit in sampled:
        collect(commit.message, "commit", commit.sha)

    conventional: ConventionalCommitType | None = None
    stripped_title = _LEADING_BRACKETS_RE.sub("", title, count=1)
    match = _CONVENTIONAL_RE.match(stripped_title)
    if match:
        conventional = ConventionalCommitType(
            type=match.group(1).lower(), is_breaking=match.group(2) is not None, source="title"
        )

    sources: list[BreakingChangeSource] = []
    if conventional is not None and conventional.is_breaking:
        sources.append(BreakingChangeSource(source="title", excerpt=title))
    if body:
        code_free = _strip_code(body)
        if _has_breaking_marker(code_free):
            sources.append(
                BreakingChangeSource(source="body", excerpt=js_trim(code_free)[:BODY_EXCERPT_CHARS])
            )
    for commit in sampled:
        if _has_breaking_marker(commit.message):
            sources.append(
                BreakingChangeSource(source="commit", excerpt=commit.message, commit_sha=commit.sha)
            )

    recognized = [t.tag for t in tags if t.recognized]
    unrecognized = [t.tag for t in tags if not t.recognized]
    best: tuple[int, str] | None = None
    for tag in recognized:
        rank = _PROFILE_RANK.get(tag)
        if rank is not None and (best is None or rank[0] > best[0]):
            best = rank
    return ParsedPRIntent(
        bracket_tags=tags,
        conventional_type=conventional,
        breaking_change_detected=bool(sources),
        breaking_change_sources=sources,
        no_review="no-review" in recognized,
        is_wip="wip" in recognized,
        profile_override=best[1] if best else None,
        focus_areas=["security"] if "security-review" in recognized else [],
        style_ok="style-ok" in recognized,
        recognized=recognized,
        unrecognized=unrecognized,
    )


# The review prompt's "Keyword parsing" bullet (behaviour R2.8).

NO_KEYWORDS_LINE = "- Keyword parsing: No keywords detected"


def _where(source: str, commit_sha: str | None) -> str:
    # A commit source without a sha renders as JS string interpolation of ``undefined``.
    if source != "commit":
        return source
    return f"commit {commit_sha if commit_sha is not None else 'undefined'}"


def _tag_location(tag: BracketTag) -> str:
    return f"[{tag.tag.upper()}] in {_where(tag.source, tag.commit_sha)}"


def build_keyword_parsing_section(intent: ParsedPRIntent | dict[str, Any]) -> str:
    """The prompt's "Keyword parsing" bullet (behaviour R2.8): the parsed intent as a Markdown bullet list
    (tags uppercased the JS way)."""
    data = intent if isinstance(intent, ParsedPRIntent) else ParsedPRIntent.model_validate(intent)
    if (
        not data.recognized
        and not data.unrecognized
        and data.conventional_type is None
        and not data.breaking_change_detected
    ):
        return NO_KEYWORDS_LINE
    lines = ["- Keyword parsing:"]
    recognized = [t for t in data.bracket_tags if t.recognized]
    if recognized:
        lines.append("  - recognized: " + ", ".join(_tag_location(t) for t in recognized))
    if data.unrecognized:
        lines.append("  - focus hints: " + ", ".join(f"[{tag.upper()}]" for tag in data.unrecognized))
    if data.conventional_type is not None:
        suffix = " (breaking)" if data.conventional_type.is_breaking else ""
        lines.append(f"  - conventional type: {data.conventional_type.type}{suffix}")
    for source in data.breaking_change_sources:
        lines.append(f"  - breaking change in {_where(source.source, source.commit_sha)}")
    return "\n".join(lines)
