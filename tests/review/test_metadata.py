"""R2.31 inline comment metadata parse (enhanced yaml, standard tag, dropped comments)."""

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


def test_extract_findings_from_review_comments() -> None:
    """R1 step 38: marker-tagged comments only; id/path/body types checked; unparseable dropped."""
    from kodiai.review.metadata import extract_findings

    class Comment:
        def __init__(self, **fields: object) -> None:
            self.__dict__.update(fields)

    comments: list[object] = [
        {
            "id": 11,
            "path": "src/db.ts",
            "body": f"[CRITICAL] SQL injection\n\n{MARKER}",
            "start_line": None,
            "line": 42,
        },
        {
            "id": 12,
            "path": "src/a.ts",
            "body": f"```yaml\nseverity: minor\ncategory: style\n```\n\n**Fmt**\n\n{MARKER}",
            "start_line": 3,
            "line": 5,
        },
        {"id": 13, "path": "src/a.ts", "body": "[MAJOR] from another run"},
        {"id": "14", "path": "src/a.ts", "body": f"[MAJOR] bad id {MARKER}"},
        {"id": 15, "path": None, "body": f"[MAJOR] no path {MARKER}"},
        {"id": 16, "path": "x", "body": f"Thanks! {MARKER}"},
        {"id": True, "path": "x", "body": f"[MAJOR] bool id {MARKER}"},
        Comment(id=17, path="src/b.go", body=f"[medium] Unchecked error\n{MARKER}", start_line=1.5, line=9),
    ]
    found = extract_findings(comments, MARKER)
    assert [
        (f.comment_id, f.file_path, f.severity, f.category, f.title, f.start_line, f.end_line) for f in found
    ] == [
        (11, "src/db.ts", "critical", "correctness", "SQL injection", None, 42),
        (12, "src/a.ts", "minor", "style", "Fmt", 3, 5),
        (17, "src/b.go", "medium", "correctness", "Unchecked error", None, 9),
    ]
