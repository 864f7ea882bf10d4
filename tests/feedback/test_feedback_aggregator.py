"""Feedback aggregation: behaviour R4.33 (FA-01…08)."""

from __future__ import annotations

from typing import Any

from kodiai.feedback.aggregator import FeedbackPattern, FeedbackThresholds, aggregate_suppressible_patterns

DEFAULTS = FeedbackThresholds(min_thumbs_down=3, min_distinct_reactors=3, min_distinct_prs=2)


class PatternList:
    """A feedback pattern source holding fixed patterns (the aggregator's store interface)."""

    def __init__(self, *patterns: FeedbackPattern | dict[str, Any]) -> None:
        self.patterns = list(patterns)
        self.repos: list[str] = []

    def aggregate_feedback_patterns(self, repo: str) -> list[Any]:
        self.repos.append(repo)
        return self.patterns


def pattern(fp: str, down: int, reactors: int, prs: int, up: int = 0) -> FeedbackPattern:
    return FeedbackPattern(
        fingerprint=fp,
        thumbs_down_count=down,
        thumbs_up_count=up,
        distinct_reactors=reactors,
        distinct_prs=prs,
        severity="minor",
        category="style",
        sample_title=f"title {fp}",
    )


def fps(store: PatternList, thresholds: FeedbackThresholds = DEFAULTS) -> list[str]:
    return [p.fingerprint for p in aggregate_suppressible_patterns(store, "o/r", thresholds)]


def test_4_33_fa_01_above_all_thresholds_included() -> None:
    """R4.33 FA-01."""
    store = PatternList(pattern("fp-a", 5, 4, 3))
    assert fps(store) == ["fp-a"] and store.repos == ["o/r"]


def test_4_33_fa_02_too_few_thumbs_down() -> None:
    """R4.33 FA-02."""
    assert fps(PatternList(pattern("fp-a", 2, 4, 3))) == []


def test_4_33_fa_03_too_few_reactors() -> None:
    """R4.33 FA-03."""
    assert fps(PatternList(pattern("fp-a", 5, 1, 3))) == []


def test_4_33_fa_04_too_few_prs() -> None:
    """R4.33 FA-04."""
    assert fps(PatternList(pattern("fp-a", 5, 4, 1))) == []


def test_4_33_fa_05_exactly_at_thresholds_included() -> None:
    """R4.33 FA-05."""
    assert fps(PatternList(pattern("fp-a", 3, 3, 2))) == ["fp-a"]


def test_4_33_fa_06_empty_store() -> None:
    """R4.33 FA-06."""
    assert fps(PatternList()) == []


def test_4_33_fa_07_custom_min_thumbs_down() -> None:
    """R4.33 FA-07."""
    assert fps(PatternList(pattern("fp-a", 4, 4, 3)), FeedbackThresholds(min_thumbs_down=5)) == []


def test_4_33_fa_08_mixed_only_good() -> None:
    """R4.33 FA-08."""
    store = PatternList(pattern("fp-low", 1, 1, 1), pattern("fp-good", 6, 5, 3), pattern("fp-prs", 6, 5, 1))
    assert fps(store) == ["fp-good"]


def test_store_order_kept_and_dicts_accepted() -> None:
    store = PatternList(pattern("fp-b", 3, 3, 2).model_dump(), pattern("fp-a", 9, 9, 9))
    assert fps(store) == ["fp-b", "fp-a"]
