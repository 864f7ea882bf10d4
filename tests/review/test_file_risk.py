"""behaviour R4.14 (file risk scorer, FR-01…FR-09), R2.4 vectors and the rounding trap."""

from __future__ import annotations

from kodiai.review.diff_analysis import FileLineStats
from kodiai.review.file_risk import (
    FileRiskScore,
    RiskBreakdown,
    RiskWeights,
    compute_file_risk_scores,
    is_executable_extension,
    triage_files_by_risk,
)


def _stats(**lines: tuple[int, int]) -> dict[str, FileLineStats]:
    return {path: FileLineStats(added=a, removed=r) for path, (a, r) in lines.items()}


def _scores(n: int) -> list[FileRiskScore]:
    zero = RiskBreakdown(lines_changed=0, path_risk=0, file_category=0, language_risk=0, file_extension=0)
    return [FileRiskScore(file_path=f"f{i}.ts", score=100 - i % 100, breakdown=zero) for i in range(n)]


def test_fr_01_auth_file_scores_higher_than_a_test_file() -> None:
    files = ["src/auth/login.ts", "src/utils.test.ts"]
    stats = {f: FileLineStats(added=80, removed=20) for f in files}
    scores = compute_file_risk_scores(files, stats, {"source": [files[0]], "test": [files[1]]})
    by_path = {s.file_path: s.score for s in scores}
    assert by_path == {"src/auth/login.ts": 94, "src/utils.test.ts": 48}, "R2.4 vector: 94 vs 48"


def test_fr_02_zero_line_auth_file_scores_above_zero() -> None:
    scores = compute_file_risk_scores(["src/auth.ts"], {"src/auth.ts": FileLineStats(added=0, removed=0)}, {})
    assert scores[0].score > 0


def test_fr_03_single_file_score_in_range_and_section_vector() -> None:
    scores = compute_file_risk_scores(
        ["src/app.ts"], _stats(**{"src/app.ts": (50, 10)}), {"source": ["src/app.ts"]}
    )
    assert 0 <= scores[0].score <= 100
    assert scores[0].score == 64, "R2.4 vector: src/app.ts alone (+50/−10) → 64"


def test_fr_04_sorted_descending() -> None:
    files = ["docs/a.md", "src/auth/token.ts", "src/x.ts"]
    scores = compute_file_risk_scores(files, _stats(**{f: (10, 1) for f in files}), {"docs": ["docs/a.md"]})
    values = [s.score for s in scores]
    assert values == sorted(values, reverse=True)
    assert scores[0].file_path == "src/auth/token.ts"


def test_fr_05_weights_summing_to_two_are_normalised() -> None:
    weights = RiskWeights(
        lines_changed=0.6, path_risk=0.6, file_category=0.4, language_risk=0.2, file_extension=0.2
    )
    files = ["src/auth/login.ts"]
    stats = _stats(**{files[0]: (80, 20)})
    doubled = compute_file_risk_scores(files, stats, {}, weights)
    default = compute_file_risk_scores(files, stats, {})
    assert 0 <= doubled[0].score <= 100
    assert doubled[0].score == default[0].score


def test_fr_06_below_threshold_everything_is_full() -> None:
    tiers = triage_files_by_risk(_scores(30), file_threshold=50, full_review_count=30, abbreviated_count=20)
    assert len(tiers.full) == 30 and tiers.abbreviated == [] and tiers.mention_only == []
    assert tiers.is_large_pr is False and tiers.total_files == 30


def test_fr_07_hundred_files_split_30_20_50() -> None:
    tiers = triage_files_by_risk(_scores(100), file_threshold=50, full_review_count=30, abbreviated_count=20)
    assert (len(tiers.full), len(tiers.abbreviated), len(tiers.mention_only)) == (30, 20, 50)
    assert tiers.is_large_pr is True and tiers.threshold == 50


def test_fr_08_fifty_one_files() -> None:
    tiers = triage_files_by_risk(_scores(51), file_threshold=50, full_review_count=30, abbreviated_count=20)
    assert (len(tiers.full), len(tiers.abbreviated), len(tiers.mention_only)) == (30, 20, 1)
    assert tiers.is_large_pr is True


def test_fr_09_empty_input() -> None:
    tiers = triage_files_by_risk([], file_threshold=50, full_review_count=30, abbreviated_count=20)
    assert (tiers.full, tiers.abbreviated, tiers.mention_only) == ([], [], [])
    assert tiers.is_large_pr is False and tiers.total_files == 0


def test_triage_uses_total_file_count_and_does_not_resort() -> None:
    scores = list(reversed(_scores(5)))
    tiers = triage_files_by_risk(
        scores, file_threshold=10, full_review_count=2, abbreviated_count=1, total_file_count=11
    )
    assert tiers.is_large_pr is True and tiers.total_files == 11
    assert [s.file_path for s in tiers.full] == ["f4.ts", "f3.ts"]


def test_trap_half_up_rounding_of_scores() -> None:
    """Dyadic weights and log10 ratios produce exact .5 ties; JS Math.round rounds them up (12.5 → 13)."""
    files = ["src/a.rs", "src/b.rs"]
    stats = _stats(**{"src/a.rs": (9, 0), "src/b.rs": (9999, 0)})
    weights = RiskWeights(
        lines_changed=0.5, path_risk=0.125, file_category=0, language_risk=0, file_extension=0.375
    )
    scores = {s.file_path: s for s in compute_file_risk_scores(files, stats, {}, weights)}
    assert scores["src/a.rs"].breakdown.lines_changed == 25
    # log10(10)/log10(10000) = 0.25 → 0.5*0.25 + 0.375*1.0 = 0.5 → 50 exactly
    assert scores["src/a.rs"].score == 50


def test_file_in_two_categories_takes_the_later_one_and_unknown_category_scores_half() -> None:
    files = ["x.ts"]
    stats = _stats(**{"x.ts": (1, 0)})
    later = compute_file_risk_scores(files, stats, {"test": ["x.ts"], "docs": ["x.ts"]})
    assert later[0].breakdown.file_category == 10
    unknown = compute_file_risk_scores(files, stats, {"vendor": ["x.ts"]})
    assert unknown[0].breakdown.file_category == 50


def test_non_positive_weight_sum_falls_back_to_defaults() -> None:
    files = ["src/app.ts"]
    stats = _stats(**{"src/app.ts": (50, 10)})
    zero = RiskWeights(lines_changed=0, path_risk=0, file_category=0, language_risk=0, file_extension=0)
    assert compute_file_risk_scores(files, stats, {}, zero)[0].score == 64


def test_executable_extensions() -> None:
    assert is_executable_extension("a.TS") and is_executable_extension("x.zig")
    assert not is_executable_extension("a.h") and not is_executable_extension("a.hpp")
    assert is_executable_extension("sh"), "a path without a dot uses all of itself"
