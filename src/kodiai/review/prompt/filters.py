"""Comment limit, severity filter, focus areas, suppression rules and confidence display (R2.32 items 24–28)."""

from __future__ import annotations

from kodiai.compat.js import js_number_to_string

from .context import SeverityLevel, SuppressionView

SEVERITY_ORDER: list[SeverityLevel] = ["critical", "major", "medium", "minor"]

OVERFLOW_NOTE = (
    "Note: Additional lower-severity issues were found but omitted. "
    "Increase review.maxComments in .kodiai.yml to see more."
)


def build_comment_limit_section(max_comments: int | float) -> str:
    """``## Comment Limit``: the inline-comment cap and the overflow note the model must add."""
    return "\n".join(
        [
            "## Comment Limit",
            "",
            f"Post at most {js_number_to_string(max_comments)} inline comments for this PR review.",
            "If you find more issues than that, post only the most important ones and end your last inline "
            f'comment with: "{OVERFLOW_NOTE}"',
        ]
    )


def build_severity_filter_section(min_level: SeverityLevel) -> str:
    """``## Severity Filter`` for any minimum level other than ``minor``."""
    if min_level == "minor":
        return ""
    allowed = SEVERITY_ORDER[: SEVERITY_ORDER.index(min_level) + 1]
    return "\n".join(
        [
            "## Severity Filter",
            "",
            f"Only report findings at these severity levels: {', '.join(allowed)}.",
            f"Do NOT generate findings below {min_level} severity.",
        ]
    )


def build_focus_areas_section(focus_areas: list[str], ignored_areas: list[str]) -> str:
    """``## Focus Areas``: the categories to concentrate on and those to skip."""
    if not focus_areas and not ignored_areas:
        return ""
    lines = ["## Focus Areas", ""]
    if focus_areas:
        lines.append(
            f"Concentrate your review on these categories: {', '.join(focus_areas)}. "
            "For other categories, only report CRITICAL issues."
        )
    if ignored_areas:
        lines.append(
            f"Explicitly SKIP these categories unless the finding is CRITICAL: {', '.join(ignored_areas)}."
        )
    return "\n".join(lines)


def format_suppression(entry: str | SuppressionView) -> str:
    """``- pattern: <p>`` plus `` (severity=[..]; category=[..]; paths=[..])`` for object entries with filters."""
    if isinstance(entry, str):
        return f"- pattern: {entry}"
    filters = [
        f"{name}=[{', '.join(values)}]"
        for name, values in (
            ("severity", entry.severity),
            ("category", entry.category),
            ("paths", entry.paths),
        )
        if values
    ]
    suffix = f" ({'; '.join(filters)})" if filters else ""
    return f"- pattern: {entry.pattern}{suffix}"


def build_suppression_rules_section(suppressions: list[str | SuppressionView]) -> str:
    """``## Suppression Rules``; "" without suppressions."""
    if not suppressions:
        return ""
    return "\n".join(
        [
            "## Suppression Rules",
            "",
            "Do NOT post findings that match any of these suppression patterns:",
            *(format_suppression(entry) for entry in suppressions),
            "",
            "A plain pattern matches a case-insensitive substring of the finding title; `glob:` patterns are "
            "globs and `regex:` patterns are case-insensitive regular expressions over the title. Optional "
            "filters narrow a pattern to the listed severities, categories or file paths.",
            "NEVER suppress findings at CRITICAL severity, even when they match a pattern.",
        ]
    )


def build_confidence_section(min_confidence: int | float) -> str:
    """``## Confidence Display`` and, for a positive threshold, the collapsible-section note."""
    lines = [
        "## Confidence Display",
        "",
        "Every finding receives a confidence score (0-100) derived from its severity and category. Report real "
        "issues with the severity they deserve; do not inflate severity to raise confidence.",
    ]
    if min_confidence > 0:
        lines.append(
            f"Findings below {js_number_to_string(min_confidence)}% confidence will be shown in a separate collapsible section."
        )
    return "\n".join(lines)
