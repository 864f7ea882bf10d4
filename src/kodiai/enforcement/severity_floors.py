"""Severity floors: raise the severity of findings that match known-dangerous patterns (behaviour R2.28).

The built-in patterns come first, then the user's ``languageRules.severityFloors``; the first pattern whose
language filter passes and whose keywords match decides, even when it raises nothing. Severities are only
ever raised, never lowered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kodiai.compat.js import JS_S
from kodiai.text.languages import classify_file_language

SEVERITY_RANK: dict[str, int] = {"minor": 0, "medium": 1, "major": 2, "critical": 3}
_WHITESPACE_RUN = re.compile(JS_S + "+")


class SeverityFloor(BaseModel):
    """A user floor from ``languageRules.severityFloors``."""

    model_config = ConfigDict(extra="allow")

    pattern: str
    language: str | None = None
    min_severity: str
    skip_test_files: bool = True


class ToolingOverride(BaseModel):
    """A user override from ``languageRules.toolingOverrides`` (``config_files`` is accepted but unused)."""

    model_config = ConfigDict(extra="allow")

    language: str
    suppress_formatting: bool = True
    suppress_import_order: bool = True
    config_files: list[str] | None = None


class LanguageRulesConfig(BaseModel):
    """The ``languageRules`` section."""

    model_config = ConfigDict(extra="allow")

    severity_floors: list[SeverityFloor] = Field(default_factory=list)
    tooling_overrides: list[ToolingOverride] = Field(default_factory=list)
    disable_builtin_floors: bool = False


class EnforcementPattern(BaseModel):
    """One floor: keyword groups (OR of AND-groups), the language it applies to ("" = any), the floor."""

    id: str
    language: str
    keywords: list[list[str]]
    min_severity: str
    test_files_relaxed: bool


def _builtin(
    pid: str, language: str, keywords: list[list[str]], floor: str, relaxed: bool = True
) -> EnforcementPattern:
    return EnforcementPattern(
        id=pid, language=language, keywords=keywords, min_severity=floor, test_files_relaxed=relaxed
    )


BUILTIN_SEVERITY_PATTERNS: tuple[EnforcementPattern, ...] = (
    _builtin(
        "cpp-null-deref",
        "C++",
        [["null", "dereference"], ["null", "pointer"], ["nullptr"], ["npe"]],
        "critical",
    ),
    _builtin(
        "cpp-uninitialized",
        "C++",
        [["uninitialized", "member"], ["uninitialized", "variable"], ["uninitialized", "field"]],
        "critical",
    ),
    _builtin(
        "go-unchecked-error",
        "Go",
        [["unchecked", "error"], ["error", "ignored"], ["error", "discarded"], ["error", "not checked"]],
        "major",
    ),
    _builtin(
        "python-bare-except",
        "Python",
        [["bare", "except"], ["bare", "exception"], ["catch-all", "exception"]],
        "major",
    ),
    _builtin("c-null-deref", "C", [["null", "dereference"], ["null", "pointer"]], "critical"),
    _builtin(
        "c-buffer-overflow",
        "C",
        [["buffer", "overflow"], ["buffer", "overrun"], ["strcpy"], ["sprintf"]],
        "critical",
    ),
    _builtin(
        "rust-unwrap", "Rust", [["unwrap", "panic"], ["unwrap", "crash"], ["unwrap()", "error"]], "major"
    ),
    _builtin(
        "java-unclosed-resource",
        "Java",
        [["unclosed", "resource"], ["resource", "leak"], ["missing", "close"]],
        "major",
    ),
    _builtin(
        "sql-injection", "", [["sql", "injection"], ["sql", "concatenation"]], "critical", relaxed=False
    ),
    _builtin(
        "ts-unhandled-promise",
        "TypeScript",
        [["unhandled", "promise"], ["floating", "promise"], ["missing", "await"]],
        "major",
    ),
)


def severity_rank(severity: str | None) -> int:
    """minor 0, medium 1, major 2, critical 3; any other value (exact match only) ranks 0."""
    return SEVERITY_RANK.get(severity, 0) if isinstance(severity, str) else 0


def matches_pattern(finding_title: str, keywords: Sequence[Sequence[str]]) -> bool:
    """Case-insensitive: true when every keyword of at least one group is a substring of the title.

    An empty group matches everything; an empty list of groups matches nothing.
    """
    title = finding_title.lower()
    return any(all(k.lower() in title for k in group) for group in keywords)


def user_floor_pattern(floor: SeverityFloor) -> EnforcementPattern:
    """A user floor as a pattern: id ``user-<pattern, JS-whitespace runs → "-", lowercased>``."""
    return EnforcementPattern(
        id="user-" + _WHITESPACE_RUN.sub("-", floor.pattern).lower(),
        language=floor.language or "",
        keywords=[[floor.pattern.lower()]],
        min_severity=floor.min_severity,
        test_files_relaxed=floor.skip_test_files,
    )


def active_patterns(language_rules: LanguageRulesConfig | None) -> list[EnforcementPattern]:
    """Built-in patterns (unless disabled) followed by the user floors, in order."""
    rules = language_rules or LanguageRulesConfig()
    builtin = [] if rules.disable_builtin_floors else list(BUILTIN_SEVERITY_PATTERNS)
    return builtin + [user_floor_pattern(f) for f in rules.severity_floors]


def enforce_severity_floors(
    findings: Sequence[Mapping[str, Any]],
    files_by_category: Mapping[str, Sequence[str]],
    files_by_language: Mapping[str, Sequence[str]],
    language_rules: LanguageRulesConfig | Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Apply the floors; each result is the input finding plus ``original_severity``, ``severity``,
    ``severity_elevated``, ``enforcement_pattern_id`` (when raised) and ``tooling_suppressed=False``.

    A test file (listed in ``files_by_category["test"]``) is left alone when the matching pattern relaxes
    test files. A finding's language is ``classify_file_language(file_path)``, from the path alone, as in
    the original: a file missing from ``files_by_language`` still gets the C++ floors for ``.cxx``, and a
    file named ``go`` is Go. ``files_by_language`` is accepted for the pinned signature and not read (the
    review builds it with the same function, so the two never disagree). The language test is exact
    string equality.
    """
    rules = None if language_rules is None else LanguageRulesConfig.model_validate(language_rules)
    patterns = active_patterns(rules)
    test_files = set(files_by_category.get("test", ()))
    out: list[dict[str, Any]] = []
    for finding in findings:
        original = finding.get("severity")  # JS: an absent severity ranks 0, like any unknown value
        result: dict[str, Any] = {
            **finding,
            "original_severity": original,
            "severity": original,
            "severity_elevated": False,
            "tooling_suppressed": False,
        }
        language = classify_file_language(finding["file_path"])
        match = next(
            (
                p
                for p in patterns
                if (not p.language or p.language == language)
                and matches_pattern(finding["title"], p.keywords)
            ),
            None,
        )
        relaxed = match is not None and match.test_files_relaxed and finding["file_path"] in test_files
        if match is not None and not relaxed and severity_rank(original) < severity_rank(match.min_severity):
            result["severity"] = match.min_severity
            result["severity_elevated"] = True
            result["enforcement_pattern_id"] = match.id
        out.append(result)
    return out
