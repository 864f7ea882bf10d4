"""behaviour R4.9 (auto profile, AP-01…AP-07)."""

from __future__ import annotations

from kodiai.review.profiles import AUTO_PROFILE_THRESHOLDS, ResolvedReviewProfile, resolve_review_profile


def _r(profile: str, source: str, band: str | None, lines: float) -> ResolvedReviewProfile:
    return ResolvedReviewProfile(selected_profile=profile, source=source, auto_band=band, lines_changed=lines)  # type: ignore[arg-type]


def test_ap_01_small() -> None:
    assert resolve_review_profile(None, None, 100) == _r("strict", "auto", "small", 100)


def test_ap_02_medium_from_101() -> None:
    assert resolve_review_profile(None, None, 101) == _r("balanced", "auto", "medium", 101)


def test_ap_03_medium_at_500() -> None:
    assert resolve_review_profile(None, None, 500) == _r("balanced", "auto", "medium", 500)


def test_ap_04_large_from_501() -> None:
    assert resolve_review_profile(None, None, 501) == _r("minimal", "auto", "large", 501)


def test_ap_05_manual() -> None:
    assert resolve_review_profile(None, "minimal", 40) == _r("minimal", "manual", None, 40)


def test_ap_06_keyword_beats_manual() -> None:
    assert resolve_review_profile("strict", "minimal", 900) == _r("strict", "keyword", None, 900)


def test_ap_07_thresholds() -> None:
    assert AUTO_PROFILE_THRESHOLDS == {"strictMax": 100, "balancedMax": 500}


def test_trap_empty_string_is_falsy_and_falls_through_to_auto() -> None:
    assert resolve_review_profile("", "", 500.5) == _r("minimal", "auto", "large", 500.5)
