"""Finding confidence and suppression matching (behaviour R2.30, behaviour P8.5).

``compute_confidence`` scores a finding from its severity, category and whether it matches a known
pattern. ``match_pattern`` / ``matches_suppression`` decide whether a configured suppression applies:
a ``glob:`` pattern is picomatch (``dot: true``) on the lowercased title, a ``regex:`` pattern is a JS
``RegExp(src, "i")`` (translated faithfully by :mod:`kodiai.compat.jsregex`; an invalid one never
matches), anything else is a case-insensitive substring test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.compat.glob import glob_match
from kodiai.compat.jsregex import JsRegexUnsupported, compile_js_regex

SEVERITY_BOOST: dict[str, int] = {"critical": 30, "major": 20, "medium": 10, "minor": 0}
CATEGORY_BOOST: dict[str, int] = {
    "security": 15,
    "correctness": 10,
    "performance": 5,
    "style": -5,
    "documentation": -10,
}
KNOWN_PATTERN_BOOST = 10
BASE_CONFIDENCE = 50
#: Bound on one ``regex:`` evaluation. A user pattern with catastrophic backtracking (``(a|aa)+$``)
#: counts as "no match" instead of stalling the review (the original would hang); the port's only
#: deviation here, and it never triggers on ordinary patterns.
REGEX_TIMEOUT_SECONDS = 0.5


class ConfidenceInput(BaseModel):
    """What confidence is computed from."""

    model_config = ConfigDict(extra="allow")

    severity: str
    category: str
    matches_known_pattern: bool = False


class SuppressionFinding(BaseModel):
    """The finding fields a suppression looks at."""

    model_config = ConfigDict(extra="allow")

    title: str
    severity: str
    category: str
    file_path: str


class SuppressionPattern(BaseModel):
    """A ``review.suppressions`` entry in object form; absent filters do not constrain."""

    model_config = ConfigDict(extra="allow")

    pattern: str
    severity: list[str] | None = None
    category: list[str] | None = None
    paths: list[str] | None = None


def compute_confidence(input: ConfidenceInput | Mapping[str, object]) -> int:
    """``clamp(50 + severity boost + category boost + (known ? 10 : 0), 0, 100)``; unknown values add 0."""
    data = ConfidenceInput.model_validate(input)
    score = BASE_CONFIDENCE + SEVERITY_BOOST.get(data.severity, 0) + CATEGORY_BOOST.get(data.category, 0)
    if data.matches_known_pattern:
        score += KNOWN_PATTERN_BOOST
    return max(0, min(100, score))


def match_pattern(pattern: str, text: str) -> bool:
    """Match one suppression pattern against a text (see the module docstring).

    An empty ``glob:`` raises ``ValueError`` (picomatch throws on an empty pattern). A ``regex:`` that
    runs longer than :data:`REGEX_TIMEOUT_SECONDS` counts as no match.
    """
    if pattern.startswith("glob:"):
        return glob_match(pattern[5:].lower(), text.lower())
    if pattern.startswith("regex:"):
        try:
            compiled = compile_js_regex(pattern[6:], "i")
        except JsRegexUnsupported:
            return False
        if compiled is None:
            return False
        try:
            return compiled.test(text, timeout=REGEX_TIMEOUT_SECONDS)
        except TimeoutError:
            return False
    return pattern.lower() in text.lower()


def matches_suppression(
    finding: SuppressionFinding | Mapping[str, object],
    suppression: str | SuppressionPattern | Mapping[str, object],
) -> bool:
    """True when the suppression's pattern matches the title and every present filter passes.

    Severity and category lists are exact membership tests; an empty list never matches (``[]`` is
    truthy in JS). A non-empty path list needs one glob matching the (not lowercased) file path.
    """
    f = SuppressionFinding.model_validate(finding)
    if isinstance(suppression, str):
        return match_pattern(suppression, f.title)
    s = SuppressionPattern.model_validate(suppression)
    if not match_pattern(s.pattern, f.title):
        return False
    if s.severity is not None and f.severity not in s.severity:
        return False
    if s.category is not None and f.category not in s.category:
        return False
    return not s.paths or any(glob_match(glob, f.file_path) for glob in s.paths)


def first_matching_suppression(
    finding: SuppressionFinding | Mapping[str, object],
    suppressions: Sequence[str | SuppressionPattern | Mapping[str, object]],
) -> str | SuppressionPattern | None:
    """The first ``review.suppressions`` entry that matches the finding (step 41 ``matchedSuppression``)."""
    f = SuppressionFinding.model_validate(finding)
    for entry in suppressions:
        candidate = entry if isinstance(entry, str) else SuppressionPattern.model_validate(entry)
        if matches_suppression(f, candidate):
            return candidate
    return None


def suppression_label(suppression: str | SuppressionPattern) -> str:
    """How a matched suppression is recorded and counted: the string itself, or the object's ``pattern``."""
    return suppression if isinstance(suppression, str) else suppression.pattern
