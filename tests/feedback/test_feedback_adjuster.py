"""Confidence adjustment and suppression evaluation: behaviour R4.34 (CA-01…12), with one run against a
real SQLite knowledge store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from kodiai.feedback.adjuster import (
    FAIL_OPEN_WARNING,
    adjust_confidence_for_feedback,
    evaluate_feedback_suppressions,
)
from kodiai.feedback.aggregator import FeedbackPattern
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingRecord, ReviewRecord
from kodiai.text.fingerprint import fingerprint_finding_title

ENABLED = {"enabled": True, "thresholds": {"minThumbsDown": 3, "minDistinctReactors": 3, "minDistinctPRs": 2}}


class PatternList:
    def __init__(self, *patterns: FeedbackPattern) -> None:
        self.patterns = list(patterns)
        self.calls = 0

    def aggregate_feedback_patterns(self, repo: str) -> list[Any]:
        self.calls += 1
        return self.patterns


class BrokenStore:
    def aggregate_feedback_patterns(self, repo: str) -> list[Any]:
        raise RuntimeError("database is locked")


def strong(fp: str, severity: str, category: str) -> FeedbackPattern:
    return FeedbackPattern(
        fingerprint=fp,
        thumbs_down_count=9,
        thumbs_up_count=0,
        distinct_reactors=6,
        distinct_prs=4,
        severity=severity,
        category=category,
        sample_title=fp,
    )


@pytest.mark.parametrize(
    ("checklist", "base", "up", "down", "expected"),
    [
        ("CA-01", 50, 0, 0, 50),
        ("CA-02", 50, 3, 0, 80),
        ("CA-03", 50, 0, 3, 0),
        ("CA-04", 80, 0, 1, 60),
        ("CA-05", 90, 2, 0, 100),
        ("CA-06", 30, 1, 1, 20),
        ("CA-07", 5, 0, 1, 0),
    ],
)
def test_4_34_ca_01_to_07_adjustment(checklist: str, base: int, up: int, down: int, expected: int) -> None:
    """R4.34 CA-01…CA-07: clamp(base + 10·up − 20·down, 0, 100)."""
    assert adjust_confidence_for_feedback(base, {"thumbs_up": up, "thumbs_down": down}) == expected, checklist


def test_4_34_ca_08_disabled_returns_empty_without_touching_store() -> None:
    """R4.34 CA-08."""
    store = PatternList(strong("fp-a", "minor", "style"))
    result = evaluate_feedback_suppressions(store, "o/r", {"enabled": False})
    assert result.suppressed_fingerprints == set() and result.suppressed_pattern_count == 0
    assert store.calls == 0


def test_4_34_ca_09_critical_security_filtered_medium_style_kept() -> None:
    """R4.34 CA-09."""
    store = PatternList(strong("fp-crit", "critical", "security"), strong("fp-style", "medium", "style"))
    result = evaluate_feedback_suppressions(store, "o/r", ENABLED)
    assert result.suppressed_fingerprints == {"fp-style"} and result.suppressed_pattern_count == 1


def test_4_34_ca_10_major_security_filtered_major_style_kept() -> None:
    """R4.34 CA-10."""
    store = PatternList(strong("fp-sec", "major", "security"), strong("fp-style", "major", "style"))
    result = evaluate_feedback_suppressions(store, "o/r", ENABLED)
    assert result.suppressed_fingerprints == {"fp-style"}


def test_4_34_ca_11_two_unprotected_patterns() -> None:
    """R4.34 CA-11."""
    store = PatternList(strong("fp-a", "minor", "style"), strong("fp-b", "medium", "documentation"))
    result = evaluate_feedback_suppressions(store, "o/r", ENABLED)
    assert len(result.suppressed_fingerprints) == 2 and result.suppressed_pattern_count == 2
    assert [p.fingerprint for p in result.patterns] == ["fp-a", "fp-b"]


def test_4_34_ca_12_store_error_is_fail_open_with_warning() -> None:
    """R4.34 CA-12."""
    with capture_logs() as logs:
        result = evaluate_feedback_suppressions(BrokenStore(), "o/r", ENABLED, delivery_id="d-9")
    assert result.suppressed_fingerprints == set() and result.patterns == []
    warning = [e for e in logs if e["event"] == FAIL_OPEN_WARNING]
    assert warning and warning[0]["log_level"] == "warning" and warning[0]["delivery_id"] == "d-9"


def test_no_store_gives_empty_result() -> None:
    assert evaluate_feedback_suppressions(None, "o/r", ENABLED).suppressed_pattern_count == 0


def test_float_inputs_keep_js_arithmetic() -> None:
    assert adjust_confidence_for_feedback(50.5, {"thumbs_up": 1, "thumbs_down": 0}) == 60.5


def test_with_real_knowledge_store(tmp_path: Path) -> None:
    """End to end on a real SQLite knowledge store: reactions on two PRs by three people suppress a minor/style
    title; a major/security title with the same feedback is protected."""
    store = KnowledgeStore(tmp_path / "knowledge.db")
    reaction_id = finding_id = 0
    for pr in (1, 2):
        review_id = store.record_review(ReviewRecord(repo="o/r", pr_number=pr))
        for title, severity, category in (
            ("Prefer const", "minor", "style"),
            ("Weak hash", "major", "security"),
        ):
            store.record_findings(
                [
                    FindingRecord(
                        review_id=review_id,
                        file_path="a.ts",
                        severity=severity,
                        category=category,
                        confidence=50,
                        title=title,
                        comment_id=pr * 100,
                    )
                ]
            )
            finding_id += 1  # a fresh database numbers findings 1, 2, … in insertion order
            for login in ("ann", "bob", "cy"):
                reaction_id += 1
                store.record_feedback_reactions(
                    [
                        FeedbackReactionRecord(
                            repo="o/r",
                            review_id=review_id,
                            finding_id=finding_id,
                            comment_id=pr * 100,
                            comment_surface="pull_request_review_comment",
                            reaction_id=reaction_id,
                            reaction_content="-1",
                            reactor_login=login,
                            severity=severity,
                            category=category,
                            file_path="a.ts",
                            title=title,
                        )
                    ]
                )
    result = evaluate_feedback_suppressions(store, "o/r", ENABLED)
    assert result.suppressed_fingerprints == {fingerprint_finding_title("Prefer const")}
    assert result.patterns[0].thumbs_down_count == 6 and result.patterns[0].distinct_prs == 2
