"""Dependency-bump enrichment data shapes and breaking-change extraction (behaviour R2.10).

The network parts of the original (advisories, registry look-ups, changelog fetching) live in
:mod:`kodiai.review.dep_bumps.enrichment_fetch`; this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from kodiai.compat.js import JS_S, js_trim

__all__ = [
    "ADVISORY_ECOSYSTEMS",
    "AdvisoryInfo",
    "ChangelogContext",
    "ReleaseNote",
    "SecurityContext",
    "extract_breaking_changes",
]

ADVISORY_ECOSYSTEMS: dict[str, str] = {
    "npm": "npm",
    "python": "pip",
    "go": "go",
    "rust": "rust",
    "ruby": "rubygems",
    "java": "maven",
    "php": "composer",
    "dotnet": "nuget",
    "github-actions": "actions",
}
SNIPPET_CHARS = 200
SNIPPET_LINES = 3

# JS multiline ``^`` also matches after ``\r``, U+2028 and U+2029; ``/i`` folds ASCII only.
_JS_LINE_START = r"(?:^|(?<=[\n\r\u2028\u2029]))"
BREAKING_MARKERS: tuple[re.Pattern[str], ...] = (
    re.compile(r"BREAKING CHANGES?:", re.ASCII | re.IGNORECASE),
    re.compile(rf"{_JS_LINE_START}#+{JS_S}*Breaking", re.ASCII | re.IGNORECASE),
    re.compile(r"\*\*Breaking\*\*", re.ASCII | re.IGNORECASE),
    re.compile(r"\bINCOMPATIBLE\b", re.ASCII | re.IGNORECASE),
)

ChangelogSource = Literal["releases", "changelog-file", "compare-url-only"]


class ReleaseNote(BaseModel):
    body: str
    tag: str | None = None


class AdvisoryInfo(BaseModel):
    ghsa_id: str
    cve_id: str | None = None
    severity: str = "unknown"
    summary: str = ""
    vulnerable_version_range: str = ""
    first_patched_version: str | None = None
    affects_old: bool = False
    affects_new: bool = False
    url: str = ""


class SecurityContext(BaseModel):
    advisories: list[AdvisoryInfo] = Field(default_factory=list)
    is_security_bump: bool = False


class ChangelogContext(BaseModel):
    release_notes: list[ReleaseNote] = Field(default_factory=list)
    breaking_changes: list[str] = Field(default_factory=list)
    compare_url: str | None = None
    source: ChangelogSource


def _snippet(body: str, matched: str) -> str:
    start = body.find(matched)  # the first occurrence of the matched text, which may precede the match
    window = body[start : start + SNIPPET_CHARS]
    return js_trim("\n".join(window.split("\n")[:SNIPPET_LINES]))[:SNIPPET_CHARS]


def extract_breaking_changes(release_notes: Sequence[ReleaseNote | dict[str, Any]]) -> list[str]:
    """One snippet per note, from the first marker that matches; de-duplicated in first-seen order."""
    snippets: dict[str, None] = {}
    for raw in release_notes:
        note = raw if isinstance(raw, ReleaseNote) else ReleaseNote.model_validate(raw)
        for marker in BREAKING_MARKERS:
            match = marker.search(note.body)
            if match:
                snippets.setdefault(_snippet(note.body, match.group(0)), None)
                break
    return list(snippets)
