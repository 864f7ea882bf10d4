"""Finding prioritisation: behaviour R4.16 (FP-01…08), the R2.16 vectors and the JS traps of
parity-vectors/README.md §3 for score_finding / prioritize_findings."""

from __future__ import annotations

from kodiai.review.prioritizer import (
    DEFAULT_FINDING_PRIORITY_WEIGHTS,
    FindingForPrioritization,
    FindingPriorityWeights,
    prioritize_findings,
    score_finding,
)


def f(
    title: str,
    severity: str,
    category: str,
    risk: float | None = None,
    rec: float | None = None,
    **extra: object,
) -> dict:
    return {
        "file_path": extra.pop("file_path", "src/a.ts"),
        "title": title,
        "severity": severity,
        "category": category,
        "file_risk_score": risk,
        "recurrence_count": rec,
        **extra,
    }


def test_4_16_fp_01_security_with_risk_and_recurrence_outscores_style() -> None:
    """R4.16 FP-01."""
    high = score_finding(f("a", "major", "security", 90, 4)).score
    low = score_finding(f("b", "major", "style", 10, 0)).score
    assert high > low


def test_4_16_fp_02_higher_file_risk_scores_higher() -> None:
    """R4.16 FP-02."""
    assert (
        score_finding(f("a", "medium", "correctness", 80)).score
        > score_finding(f("b", "medium", "correctness", 20)).score
    )


def test_4_16_fp_03_recurrence_5_beats_0() -> None:
    """R4.16 FP-03."""
    assert (
        score_finding(f("a", "minor", "style", 50, 5)).score
        > score_finding(f("a", "minor", "style", 50, 0)).score
    )


def test_4_16_fp_04_custom_weights_change_the_ranking() -> None:
    """R4.16 FP-04: default weights rank the major finding first; file-risk-heavy weights rank the risky one."""
    findings = [
        f("General regression", "major", "correctness", 20),
        f("Auth-sensitive regression", "medium", "security", 95),
    ]
    assert prioritize_findings(findings).ranked_findings[0].title == "General regression"
    weights = FindingPriorityWeights(severity=0.1, file_risk=0.7, category=0.15, recurrence=0.05)
    assert (
        prioritize_findings(findings, weights=weights).ranked_findings[0].title == "Auth-sensitive regression"
    )


def test_4_16_fp_05_max_comments_selects_top_two_of_four() -> None:
    """R4.16 FP-05."""
    findings = [
        f("C", "minor", "style"),
        f("A", "critical", "security"),
        f("D", "minor", "documentation"),
        f("B", "major", "correctness"),
    ]
    result = prioritize_findings(findings, max_comments=2)
    assert [r.title for r in result.selected_findings] == ["A", "B"]
    assert len(result.ranked_findings) == 4


def test_4_16_fp_06_ties_keep_original_order() -> None:
    """R4.16 FP-06."""
    result = prioritize_findings([f("First", "medium", "style"), f("Second", "medium", "style")])
    assert [r.title for r in result.ranked_findings] == ["First", "Second"]
    assert [r.original_index for r in result.ranked_findings] == [0, 1]


def test_4_16_fp_07_stats() -> None:
    """R4.16 FP-07."""
    result = prioritize_findings(
        [f("a", "minor", "style"), f("b", "critical", "security"), f("c", "major", "performance")],
        max_comments=2,
    )
    assert result.stats.findings_scored == 3
    assert result.stats.top_score == result.ranked_findings[0].score
    assert result.stats.threshold_score == result.selected_findings[-1].score


def test_4_16_fp_08_default_weights() -> None:
    """R4.16 FP-08."""
    assert DEFAULT_FINDING_PRIORITY_WEIGHTS.model_dump() == {
        "severity": 0.45,
        "file_risk": 0.3,
        "category": 0.15,
        "recurrence": 0.1,
    }


def test_2_16_spec_vectors() -> None:
    """R2.16: critical/style, risk 18, recurrence 1 → 56.15; major/security, risk 94, recurrence 1 → 78.2."""
    assert score_finding(f("x", "critical", "style", 18, 1, file_path="docs/changelog.md")).score == 56.15
    assert score_finding(f("x", "major", "security", 94, 1, file_path="src/auth/token.ts")).score == 78.2


def test_trap_score_uses_to_fixed_half_up() -> None:
    """toFixed(2) rounds the exact binary tie 13.125 up to 13.13 (Python round gives 13.12)."""
    weights = {"severity": 0.5, "file_risk": 0.25, "category": 0.125, "recurrence": 0.125}
    assert score_finding(f("x", "minor", "style", 0, 1), weights).score == 13.13


def test_trap_severity_and_category_use_js_trim_and_lowercase() -> None:
    """`\\ufeffsecurity` is security (JS trim); `major\\x85` is unknown (U+0085 is not JS whitespace) → 50."""
    assert score_finding(f("x", "CRITICAL", "\ufeffsecurity")).score_breakdown.category == 80
    assert score_finding(f("x", "major\x85", "style")).score_breakdown.severity == 50
    assert score_finding(f("x", "\u00a0minor ", "style")).score_breakdown.severity == 15


def test_trap_negative_weights_count_as_zero_and_all_zero_uses_defaults() -> None:
    finding = f("x", "critical", "documentation", 40, 2)
    defaults = score_finding(finding).score
    assert (
        score_finding(finding, {"severity": 0, "file_risk": 0, "category": 0, "recurrence": 0}).score
        == defaults
    )
    only_severity = score_finding(
        finding, {"severity": 1, "file_risk": -3, "category": -1, "recurrence": -0.2}
    )
    assert only_severity.score == 100


def test_trap_clamps_and_missing_values() -> None:
    b = score_finding(f("x", "minor", "style", 150, 10)).score_breakdown
    assert (b.file_risk, b.recurrence) == (100, 100)
    b = score_finding(f("x", "minor", "style", -5, -1)).score_breakdown
    assert (b.file_risk, b.recurrence) == (0, 0)
    b = score_finding(f("x", "minor", "style", None, 2.5)).score_breakdown
    assert (b.file_risk, b.recurrence) == (0, 50)


def test_trap_max_comments_floor_and_negative() -> None:
    findings = [f(str(i), "minor", "style") for i in range(4)]
    assert len(prioritize_findings(findings, max_comments=2.7).selected_findings) == 2
    assert prioritize_findings(findings, max_comments=-1).selected_findings == []
    assert prioritize_findings(findings, max_comments=-1).stats.threshold_score is None
    assert len(prioritize_findings(findings).selected_findings) == 4


def test_empty_input_stats_are_null() -> None:
    result = prioritize_findings([])
    assert result.stats.model_dump() == {"findings_scored": 0, "top_score": None, "threshold_score": None}


def test_ranked_entries_keep_unknown_input_fields() -> None:
    finding = FindingForPrioritization.model_validate(f("x", "minor", "style", comment_id=7))
    ranked = prioritize_findings([finding]).ranked_findings[0].model_dump()
    assert ranked["comment_id"] == 7 and ranked["original_index"] == 0 and "score_breakdown" in ranked
