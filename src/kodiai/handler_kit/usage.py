"""Usage analysis for dependency bumps: search terms, ``git grep`` output parsing (behaviour R2.12).

The helpers are pure. :func:`analyze_package_usage` is the I/O part: it runs ``git grep`` in a workspace
through an injectable runner and never raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from kodiai.compat.js import JS_DOT, js_parse_int, js_trim

__all__ = ["UsageEvidence", "build_search_terms", "parse_git_grep_output"]

# JS regexes without the ``u`` flag: ``\w`` and ``\b`` are ASCII.
_DOT_CALL_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.\w+)+\(\)", re.ASCII)
_BACKTICK_RE = re.compile(r"`([^`]+)`")
# ``.`` stops at JS line terminators and ``$`` is the end of the line string: CRLF lines never match.
_GREP_LINE_RE = re.compile(rf"([^:]+):([0-9]+):({JS_DOT}*)\Z")


class UsageEvidence(BaseModel):
    file_path: str
    line: int | float
    snippet: str


def build_search_terms(package_name: str, snippets: Sequence[str]) -> list[str]:
    """The package name, then each snippet's dot-calls (``foo.bar()``) and backticked text: trimmed,
    non-empty, unique, in insertion order."""
    terms: dict[str, None] = {}

    def add(term: str) -> None:
        trimmed = js_trim(term)
        if trimmed:
            terms.setdefault(trimmed, None)

    add(package_name)
    for snippet in snippets:
        for match in _DOT_CALL_RE.finditer(snippet):
            add(match.group(0))
        for match in _BACKTICK_RE.finditer(snippet):
            add(match.group(1))
    return list(terms)


def parse_git_grep_output(stdout: str) -> list[UsageEvidence]:
    """``path:line:snippet`` lines (the path has no ``:``) → evidence; other lines, and CRLF-terminated
    ones, are skipped."""
    evidence: list[UsageEvidence] = []
    for line in stdout.split("\n"):
        if not line:
            continue
        match = _GREP_LINE_RE.match(line)
        if match is None:
            continue
        evidence.append(
            UsageEvidence(
                file_path=match.group(1),
                line=js_parse_int(match.group(2)),
                snippet=js_trim(match.group(3)),
            )
        )
    return evidence
