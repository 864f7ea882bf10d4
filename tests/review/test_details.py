"""R3.4 Review Details block, byte for byte, and its embedding into the summary (X-13…X-17)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from kodiai.execution.output_key import build_review_details_marker, build_review_output_marker
from kodiai.review.details import (
    FindingCounts,
    ReviewDetailsInput,
    count_severity_tags,
    embed_review_details,
    find_comment_with_marker,
    format_review_details_summary,
    insert_before_last_details_close,
    js_iso_timestamp,
)

KEY = "kodiai-review-output:v1:inst-42:acme/repo:pr-101:action-opened:delivery-d1:head-abc"
WHEN = datetime(2026, 2, 15, 12, 34, 56, 789123, tzinfo=UTC)


def details(**overrides: Any) -> ReviewDetailsInput:
    base: dict[str, Any] = {
        "review_output_key": KEY,
        "files_reviewed": 3,
        "lines_added": 120,
        "lines_removed": 45,
        "profile": {"selected_profile": "strict", "source": "auto", "lines_changed": 100},
        "author_tier": "regular",
        "finding_counts": {"critical": 1, "major": 0, "medium": 2, "minor": 1},
        "completed_at": WHEN,
    }
    base.update(overrides)
    return ReviewDetailsInput.model_validate(base)


def test_minimal_block_exact() -> None:
    assert format_review_details_summary(details()) == (
        "<details>\n"
        "<summary>Review Details</summary>\n"
        "\n"
        "- Files reviewed: 3\n"
        "- Lines changed: +120 -45\n"
        "- Profile: strict (auto, lines changed: 100)\n"
        "- Author: regular (default)\n"
        "- Findings: 1 critical, 0 major, 2 medium, 1 minor\n"
        "- Review completed: 2026-02-15T12:34:56.789Z\n"
        "- Keyword parsing: No keywords detected\n"
        "\n"
        "</details>\n"
        "\n"
        f"<!-- kodiai:review-details:{KEY} -->"
    )


def test_profile_sources_and_author_tone() -> None:
    manual = format_review_details_summary(
        details(
            profile={"selected_profile": "minimal", "source": "manual", "lines_changed": 40},
            author_tier="core",
        )
    )
    assert "- Profile: minimal (manual config)\n" in manual
    assert "- Author: core (adapted tone)\n" in manual
    keyword = format_review_details_summary(
        details(profile={"selected_profile": "strict", "source": "keyword"}, author_tier="first-time")
    )
    assert "- Profile: strict (keyword override)\n" in keyword
    assert "- Author: first-time (adapted tone)\n" in keyword
    assert "- Profile:" not in format_review_details_summary(details(profile=None))


def test_large_pr_block_exact() -> None:
    mention = [{"file_path": f"docs/f{i}.md", "score": 100 - i} for i in range(102)]
    block = format_review_details_summary(
        details(
            triage={
                "full": [{"file_path": "a.ts", "score": 90}] * 30,
                "abbreviated": [{"file_path": "b.ts", "score": 50}] * 20,
                "mention_only": mention,
                "total_files": 152,
                "is_large_pr": True,
            }
        )
    )
    expected_head = (
        "- Review completed: 2026-02-15T12:34:56.789Z\n"
        "\n"
        "- Review scope: Reviewed 50/152 files, prioritized by risk\n"
        "- Full review: 30 files | Abbreviated review: 20 files | Not reviewed: 102 files\n"
        "\n"
        "<details>\n"
        "<summary>Files not fully reviewed (sorted by risk score)</summary>\n"
        "\n"
        "- docs/f0.md (risk: 100)\n"
    )
    assert expected_head in block
    assert "- docs/f99.md (risk: 1)\n- ...and 2 more files\n\n</details>\n- Keyword parsing:" in block
    assert "docs/f100.md" not in block


def test_large_pr_block_only_when_large_and_list_only_with_mention_files() -> None:
    small = details(
        triage={"full": [], "abbreviated": [], "mention_only": [], "total_files": 3, "is_large_pr": False}
    )
    assert "Review scope" not in format_review_details_summary(small)
    no_mention = details(
        triage={
            "full": [{"file_path": "a", "score": 1}],
            "abbreviated": [],
            "mention_only": [],
            "total_files": 1,
            "is_large_pr": True,
        }
    )
    text = format_review_details_summary(no_mention)
    assert "- Full review: 1 files | Abbreviated review: 0 files | Not reviewed: 0 files\n- Keyword" in text
    assert "Files not fully reviewed" not in text


def test_feedback_and_prioritization_lines() -> None:
    """RV-46 / RV-50 wording; scores print as JS numbers (56.15, 78.2, no trailing zeros)."""
    one = format_review_details_summary(details(feedback_suppressed_patterns=1))
    assert "- 1 pattern auto-suppressed by feedback\n" in one
    two = format_review_details_summary(
        details(
            feedback_suppressed_patterns=2,
            prioritization={"findings_scored": 2, "top_score": 78.2, "threshold_score": 56.15},
        )
    )
    assert (
        "- 2 patterns auto-suppressed by feedback\n"
        "- Prioritization: scored 2 findings | top score 78.2 | threshold score 56.15\n"
        "- Keyword parsing:"
    ) in two
    empty = format_review_details_summary(details(prioritization={"findings_scored": 0}))
    assert "- Prioritization: scored 0 findings | top score n/a | threshold score n/a" in empty
    assert "auto-suppressed" not in format_review_details_summary(details())


def test_keyword_parsing_lines_are_included_verbatim() -> None:
    section = "- Keyword parsing:\n  - recognized: [WIP] in title\n  - conventional type: feat (breaking)"
    assert f"{section}\n\n</details>" in format_review_details_summary(details(keyword_parsing=section))


def test_rv_33_forbidden_lines_absent() -> None:
    text = format_review_details_summary(details())
    for absent in (
        "Lines analyzed:",
        "Suppressions applied:",
        "Estimated review time saved:",
        "Low Confidence Findings",
    ):
        assert absent not in text


def test_iso_timestamp_matches_js_to_iso_string() -> None:
    assert js_iso_timestamp(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000Z"
    plus_two = timezone(timedelta(hours=2))
    assert (
        js_iso_timestamp(datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=plus_two)) == "2026-01-02T01:04:05.999Z"
    )
    assert js_iso_timestamp(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"


def test_x_15_tag_counts_merge_into_findings_line() -> None:
    summary = (
        "<details>\n<summary>Kodiai Review Summary</summary>\n\n## Observations\n### Impact\n"
        "[CRITICAL] a.ts (1): x\nwhy\n[major] b.ts (2): y\nwhy\n**[Minor]** c.ts (3): z\nwhy\n</details>\n\n"
        + build_review_output_marker(KEY)
    )
    assert count_severity_tags(summary) == FindingCounts(critical=1, major=1, medium=0, minor=1)
    merged = embed_review_details(
        summary, details(finding_counts={"critical": 1, "major": 0, "medium": 2, "minor": 1})
    )
    assert (
        "- Findings: 2 critical, 1 major, 2 medium, 2 minor (includes 3 from summary observations)\n"
        in merged
    )


def test_no_tags_keeps_findings_line() -> None:
    merged = embed_review_details("<details>\nplain\n</details>", details())
    assert "- Findings: 1 critical, 0 major, 2 medium, 1 minor\n" in merged
    assert "includes" not in merged


def test_x_16_inserted_before_last_details_close() -> None:
    summary = "<details>\n<summary>S</summary>\n<details>inner</details>\nbody\n</details>\n\n<!-- m -->"
    assert insert_before_last_details_close(summary, "BLOCK") == (
        "<details>\n<summary>S</summary>\n<details>inner</details>\nbody\n\n\nBLOCK\n</details>\n\n<!-- m -->"
    )
    assert insert_before_last_details_close("no closing tag", "BLOCK") == "no closing tag\n\nBLOCK"


def test_embedded_block_keeps_marker_and_details_marker() -> None:
    summary = (
        "<details>\n<summary>Kodiai Review Summary</summary>\nx\n</details>\n\n"
        + build_review_output_marker(KEY)
    )
    merged = embed_review_details(summary, details())
    assert merged.endswith("</details>\n\n" + build_review_output_marker(KEY))
    assert build_review_details_marker(KEY) in merged
    assert merged.index("<summary>Review Details</summary>") < merged.rindex("</details>")


def test_x_17_standalone_comment_found_by_details_marker() -> None:
    marker = build_review_details_marker(KEY)
    bodies: list[object] = ["hello", None, f"old block\n{marker}", f"newer {marker}"]
    assert find_comment_with_marker(bodies, marker) == 2
    assert find_comment_with_marker(["x"], marker) is None
    standalone = format_review_details_summary(details())
    assert build_review_output_marker(KEY) not in standalone


def test_x_14_finding_counts_of_severities() -> None:
    """R4.37 X-14 (Q10): counts over every processed finding; unknown severities are not counted."""
    assert FindingCounts.of(["major", "minor", "major", "weird", "critical"]) == FindingCounts(
        critical=1, major=2, medium=0, minor=1
    )
