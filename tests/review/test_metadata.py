"""§2.31 inline comment metadata parse (enhanced yaml, standard tag, dropped comments)."""

from __future__ import annotations

import pytest

from kodiai.review.metadata import (
    normalize_category,
    normalize_severity,
    parse_finding_metadata,
    strip_review_markers,
)

MARKER = "<!-- kodiai:review-output-key:kodiai-review-output:v1:inst-1:a/b:pr-1:action-opened:delivery-d:head-h -->"


def test_enhanced_yaml_comment() -> None:
    body = (
        "```yaml\nseverity: MAJOR\ncategory: correctness\nsuggested_action: Fix it\n```\n\n"
        f"**Unchecked error return in handler**\n\nExplanation.\n\n{MARKER}"
    )
    meta = parse_finding_metadata(body)
    assert (meta.severity, meta.category, meta.title) == (
        "major",
        "correctness",
        "Unchecked error return in handler",
    )


def test_standard_tagged_comment() -> None:
    meta = parse_finding_metadata(f"[CRITICAL] SQL injection in raw query path\nDetails\n\n{MARKER}")
    assert (meta.severity, meta.category, meta.title) == (
        "critical",
        "correctness",
        "SQL injection in raw query path",
    )


def test_standard_tag_case_insensitive_and_untitled() -> None:
    assert parse_finding_metadata("  \n[minor]").title == "Untitled finding"
    assert parse_finding_metadata("[Minor]   Legacy shim cleanup candidate").severity == "minor"


def test_comment_without_severity_is_dropped() -> None:
    assert parse_finding_metadata("Looks good to me!").severity is None
    assert parse_finding_metadata("[BLOCKER] nope").severity is None
    assert parse_finding_metadata("```yaml\nseverity: high\n```\n\n**T**").severity is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("security", "security"),
        ("Correctness", "correctness"),
        ("error-handling", "correctness"),
        ("performance", "performance"),
        ("resource-management", "performance"),
        ("concurrency", "performance"),
        ("style", "style"),
        ("documentation", "documentation"),
        ("maintainability", "correctness"),
        (None, "correctness"),
    ],
)
def test_category_normalisation(raw: str | None, expected: str) -> None:
    assert normalize_category(raw) == expected


def test_yaml_title_rules() -> None:
    """The title is the first non-empty line after the block; whole-line bold is unwrapped."""
    assert (
        parse_finding_metadata("```yaml\nseverity: minor\n```\n\n\nPlain title\nmore").title == "Plain title"
    )
    assert (
        parse_finding_metadata("```yaml\nseverity: minor\n```\n**bold** not whole").title
        == "**bold** not whole"
    )
    assert (
        parse_finding_metadata("```yaml\nseverity: minor\ncategory: style\n```").title == "Untitled finding"
    )
    meta = parse_finding_metadata("```yaml\nSeverity :  Medium \nnot a field\nurl: http://x:1\n```\n**T**")
    assert (meta.severity, meta.category) == ("medium", "correctness")


def test_markers_removed_everywhere() -> None:
    assert strip_review_markers(f"{MARKER}\n[MAJOR] X\n{MARKER}") == "[MAJOR] X"
    assert parse_finding_metadata(f"{MARKER}\n[MAJOR] Title").title == "Title"
    assert normalize_severity(" CRITICAL ") == "critical"
