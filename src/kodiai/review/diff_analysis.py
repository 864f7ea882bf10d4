"""Diff analysis: file categories, languages, risk signals and metrics (behaviour R2.3).

Pure: the only outside input is the clock used for the 50 ms time budget, which is injectable
(``clock`` returns milliseconds) so tests can freeze it or make it trip.

The budget bounds the matching work on a large diff, not pattern compilation. Compiling the ~40
built-in picomatch globs takes 50–90 ms in a fresh process (Python's ``re.compile`` is slow on the long
picomatch regexes); done inside the budget, it made a cold worker truncate even a 2-file analysis that a
warm one completes. So every glob is compiled before the clock starts: the built-in ones once per process
(:func:`warm_up`, also run by the first :func:`analyze_diff`), a repo's ``review.fileCategories``
additions on each call (cached). They are not compiled at import, which would add that time to every
import of this module.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kodiai.compat.glob import GlobSet, compile_glob_set, has_dot_segment
from kodiai.compat.js import JS_LINE_TERMINATORS, JS_S, js_parse_int
from kodiai.text.languages import (
    EXTENSION_LANGUAGE_MAP,
    UNKNOWN_LANGUAGE,
    classify_file_language,
    classify_languages,
    file_extension,
)

__all__ = [
    "CATEGORY_ORDER",
    "DEFAULT_FILE_CATEGORIES",
    "EXTENSION_LANGUAGE_MAP",
    "MAX_ANALYSIS_FILES",
    "MAX_ANALYSIS_TIME_MS",
    "TRUNCATION_SIGNAL",
    "UNKNOWN_LANGUAGE",
    "DiffAnalysis",
    "DiffAnalysisInput",
    "DiffMetrics",
    "FileLineStats",
    "analyze_diff",
    "classify_file_language",
    "classify_languages",
    "file_extension",
    "parse_numstat_per_file",
    "warm_up",
]

MAX_ANALYSIS_FILES = 200
MAX_ANALYSIS_TIME_MS = 50.0
CONTENT_SCAN_LIMIT = 50 * 1024
LARGE_PR_FILES = 200
LARGE_PR_LINES = 5000
TRUNCATION_SIGNAL = "Analysis truncated due to time budget"

#: Categories in classification precedence; ``source`` is the fallback and its patterns never match.
CATEGORY_ORDER = ("test", "config", "docs", "infra")
ALL_CATEGORIES = ("source", "test", "config", "docs", "infra")

DEFAULT_FILE_CATEGORIES: dict[str, tuple[str, ...]] = {
    "source": (),
    "test": ("**/*.test.*", "**/*.spec.*", "**/__tests__/**", "**/test/**", "**/tests/**"),
    "config": (
        "**/*.json",
        "**/*.yml",
        "**/*.yaml",
        "**/*.toml",
        "**/tsconfig*",
        "**/.eslintrc*",
        "**/.prettierrc*",
        "**/jest.config*",
        "**/vite.config*",
        "**/webpack.config*",
    ),
    "docs": ("**/*.md", "**/*.txt", "**/*.rst", "**/LICENSE*", "**/CHANGELOG*"),
    "infra": (
        "**/Dockerfile*",
        "**/.github/**",
        "**/terraform/**",
        "**/pulumi/**",
        "**/.gitlab-ci*",
        "**/Jenkinsfile*",
        "**/deploy*",
    ),
}

AUTH_PATTERNS = ("**/auth*", "**/login*", "**/session*", "**/token*", "**/jwt*", "**/oauth*")
SECRET_PATTERNS = (
    "**/password*",
    "**/secret*",
    "**/credential*",
    "**/api?key*",
    "**/*.pem",
    "**/*.key",
)
MANIFEST_PATTERNS = (
    "package.json",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "go.mod",
    "go.sum",
    "Cargo.toml",
    "Cargo.lock",
    "requirements.txt",
    "Pipfile.lock",
    "Gemfile.lock",
)
INFRA_RISK_PATTERNS = ("**/Dockerfile*", "**/.github/**", "**/terraform/**", "**/deploy*")
SCHEMA_PATTERNS = ("**/*migration*", "**/*schema*")

PATH_RISK_SIGNALS: tuple[tuple[tuple[str, ...], str], ...] = (
    (AUTH_PATTERNS, "Modifies authentication/authorization code"),
    (SECRET_PATTERNS, "Touches credential/secret-related files"),
    (MANIFEST_PATTERNS, "Modifies dependency manifest"),
    (INFRA_RISK_PATTERNS, "Changes CI/CD or infrastructure configuration"),
    (SCHEMA_PATTERNS, "Modifies database schema or migrations"),
)

# JS regexes without the ``u`` flag: ASCII case folding only, JS ``\s``.
_ERROR_HANDLING_RE = re.compile(
    rf"try{JS_S}*\{{|catch{JS_S}*\(|\.catch\(|panic\(|recover\(", re.IGNORECASE | re.ASCII
)
_CRYPTO_RE = re.compile(r"crypto|encrypt|decrypt|hash|sign|verify|bcrypt|argon", re.IGNORECASE | re.ASCII)
CONTENT_RISK_SIGNALS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_ERROR_HANDLING_RE, "Modifies error handling logic"),
    (_CRYPTO_RE, "Touches cryptographic code"),
)

_BuiltinSets = tuple[dict[str, GlobSet], tuple[tuple[GlobSet, str], ...]]


@functools.cache
def _builtin_sets() -> _BuiltinSets:
    """The built-in category and path-risk glob sets, compiled once per process.

    Held here rather than left to ``compile_glob_set``'s LRU cache, which other glob users share and can
    evict, so they never have to be recompiled.
    """
    categories = {name: compile_glob_set(patterns) for name, patterns in DEFAULT_FILE_CATEGORIES.items()}
    path_risk = tuple((compile_glob_set(group), message) for group, message in PATH_RISK_SIGNALS)
    return categories, path_risk


def warm_up() -> None:
    """Compile the built-in globs now (idempotent; 50–90 ms the first time).

    :func:`analyze_diff` does this itself before its clock starts, so calling it is never needed for
    correct results; a long-running process may call it at start-up to take that time off its first review.
    """
    _builtin_sets()


Clock = Callable[[], float]


def _default_clock() -> float:
    return time.monotonic() * 1000.0


class FileLineStats(BaseModel):
    """Lines added and removed for one file (numstat)."""

    added: int | float
    removed: int | float


class DiffAnalysisInput(BaseModel):
    """The inputs of :func:`analyze_diff`."""

    changed_files: list[str]
    numstat_lines: list[str]
    diff_content: str | None = None
    file_categories: dict[str, list[str]] | None = None
    hunks_count: int | None = None
    """Hunks counted while the diff was streamed (the text itself may not have been kept); None: count
    them in ``diff_content``."""


class DiffMetrics(BaseModel):
    total_files: int
    total_lines_added: int | float
    total_lines_removed: int | float
    hunks_count: int


class DiffAnalysis(BaseModel):
    """What the diff analysis reports to the prompt builder, the risk scorer and the handler."""

    model_config = ConfigDict(frozen=False)

    files_by_category: dict[str, list[str]] = Field(default_factory=dict)
    files_by_language: dict[str, list[str]] = Field(default_factory=dict)
    risk_signals: list[str] = Field(default_factory=list)
    metrics: DiffMetrics
    is_large_pr: bool


def _category_sets(user: Mapping[str, Sequence[str]] | None) -> dict[str, GlobSet]:
    """The compiled glob set of each category: the built-in one, or built-ins plus the user's additions.

    Unknown category names are ignored. Only a category the user extends is compiled here (and cached by
    ``compile_glob_set``); the caller does this before starting the budget clock.
    """
    sets = dict(_builtin_sets()[0])
    for name, patterns in (user or {}).items():
        if name in sets and patterns:
            sets[name] = compile_glob_set((*DEFAULT_FILE_CATEGORIES[name], *patterns))
    return sets


def _categorize(path: str, sets: Mapping[str, GlobSet], dotted: bool) -> str:
    for name in CATEGORY_ORDER:
        if sets[name].matches(path, dotted):
            return name
    return "source"


def count_hunks(diff_content: str) -> int:
    """Occurrences of JS ``/^@@/gm``: ``@@`` at the start or right after ``\\n``, ``\\r``, U+2028, U+2029."""
    count = 0
    pos = diff_content.find("@@")
    while pos != -1:
        if pos == 0 or diff_content[pos - 1] in JS_LINE_TERMINATORS:
            count += 1
            pos = diff_content.find("@@", pos + 2)
        else:
            pos = diff_content.find("@@", pos + 1)
    return count


def _numstat_totals(lines: Sequence[str]) -> tuple[int | float, int | float]:
    """Sum the first two tab fields as JS doubles, as the vectors pin it: a NaN ``removed`` skips the line,
    a NaN ``added`` skips only the added count (``１２<TAB>3`` still adds 3 removed lines)."""
    added = 0.0
    removed = 0.0
    for line in lines:
        parts = line.split("\t")
        a = 0 if parts[0] == "-" else js_parse_int(parts[0])
        r = (0 if parts[1] == "-" else js_parse_int(parts[1])) if len(parts) > 1 else math.nan
        if not _is_nan(r):
            removed += float(r)
            if not _is_nan(a):
                added += float(a)
    return _js_number(added), _js_number(removed)


def _js_number(value: float) -> int | float:
    """A JS double as the integer it holds when it is integral (``1e20`` → ``10**20``)."""
    return int(value) if value.is_integer() else value


def _is_nan(value: int | float) -> bool:
    return isinstance(value, float) and value != value


def analyze_diff(
    input: DiffAnalysisInput | Mapping[str, Any],
    *,
    clock: Clock | None = None,
    time_budget_ms: float = MAX_ANALYSIS_TIME_MS,
) -> DiffAnalysis:
    """Categorise and classify the changed files, detect risk signals and compute metrics.

    ``clock`` returns milliseconds (default: a monotonic clock); once ``clock() - start >= time_budget_ms``
    the current loop stops and the truncation signal is appended last. The clock starts after every glob
    is compiled, so the budget measures matching work only and a cold process gives a warm one's result.
    """
    data = input if isinstance(input, DiffAnalysisInput) else DiffAnalysisInput.model_validate(input)
    category_sets = _category_sets(data.file_categories)
    path_risk_sets = _builtin_sets()[1]
    now = clock or _default_clock
    start = now()
    exceeded = False

    def over_budget() -> bool:
        nonlocal exceeded
        if not exceeded and now() - start >= time_budget_ms:
            exceeded = True
        return exceeded

    files = data.changed_files[:MAX_ANALYSIS_FILES]
    dotted = {path: has_dot_segment(path) for path in files}
    by_category: dict[str, list[str]] = {name: [] for name in ALL_CATEGORIES}
    for path in files:
        if over_budget():
            break
        by_category[_categorize(path, category_sets, dotted[path])].append(path)
        if over_budget():
            break

    signals: list[str] = []
    for group_set, message in path_risk_sets:
        if over_budget():
            break
        if any(group_set.matches(path, dotted[path]) for path in files):
            signals.append(message)

    content = data.diff_content
    if content and len(content) < CONTENT_SCAN_LIMIT:
        for regex, message in CONTENT_RISK_SIGNALS:
            if over_budget():
                break
            if regex.search(content):
                signals.append(message)

    if exceeded:
        signals.append(TRUNCATION_SIGNAL)

    added, removed = _numstat_totals(data.numstat_lines)
    total_files = len(data.changed_files)
    return DiffAnalysis(
        files_by_category=by_category,
        files_by_language=classify_languages(files),
        risk_signals=signals,
        metrics=DiffMetrics(
            total_files=total_files,
            total_lines_added=added,
            total_lines_removed=removed,
            hunks_count=data.hunks_count
            if data.hunks_count is not None
            else (count_hunks(content) if content else 0),
        ),
        is_large_pr=total_files > LARGE_PR_FILES or added + removed > LARGE_PR_LINES,
    )


def parse_numstat_per_file(numstat_lines: Sequence[str]) -> dict[str, FileLineStats]:
    """``added<TAB>removed<TAB>path`` lines → per-path stats (``-`` and NaN count as 0; later lines win)."""
    out: dict[str, FileLineStats] = {}
    for line in numstat_lines:
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        raw_added, raw_removed = parts[0], parts[1]
        path = "\t".join(parts[2:])
        if not raw_added or not raw_removed or not path:
            continue
        added = 0 if raw_added == "-" else js_parse_int(raw_added)
        removed = 0 if raw_removed == "-" else js_parse_int(raw_removed)
        out[path] = FileLineStats(
            added=0 if _is_nan(added) else added,
            removed=0 if _is_nan(removed) else removed,
        )
    return out
