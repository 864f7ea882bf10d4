"""Per-embedder calibration profiles and their resolution from config (derivation: tests/evaluation)."""

from __future__ import annotations

import pytest

from kodiai.learning.threshold.head_gap import HeadGapCut
from kodiai.learning.threshold.max_gap import DEFAULT_ADAPTIVE_CONFIG, MaxGapCut, compute_adaptive_threshold
from kodiai.learning.threshold.profiles import (
    MINILM_PROFILE,
    SCALE_FREE_DEFAULT,
    VOYAGE_PROFILE,
    profile_for_model,
    resolve_cut,
    resolve_profile,
)


def test_voyage_keeps_the_originals_constants_exactly() -> None:
    profile = profile_for_model("voyage-code-3")
    assert profile is VOYAGE_PROFILE
    assert profile.strategy == "maxgap"
    assert (profile.floor, profile.ceiling, profile.min_gap, profile.fallback) == (0.15, 0.65, 0.05, None)
    assert profile.max_gap_config() == DEFAULT_ADAPTIVE_CONFIG


def test_voyage_default_cut_equals_compute_adaptive_threshold() -> None:
    """Parity for the original's default configuration: voyage-code-3 + no cutStrategy = the original."""
    cut = resolve_cut("voyage-code-3")
    assert isinstance(cut, MaxGapCut) and cut.name == "maxgap" and cut.fallback is None
    assert cut.config == DEFAULT_ADAPTIVE_CONFIG


def test_unknown_model_gets_the_scale_free_default() -> None:
    profile = profile_for_model("intfloat/multilingual-e5-small")
    assert profile is SCALE_FREE_DEFAULT
    assert profile.strategy == "headgap"
    assert profile.head_ceiling is None and profile.head_floor == 0  # no absolute number at all
    assert isinstance(resolve_cut("some-new-model"), HeadGapCut)


def test_minilm_profile_is_relative_only() -> None:
    """The previous MiniLM profile abstained on an absolute ceiling (0.829) that did not carry over to
    other repositories; the current one has no absolute number and no abstain gate."""
    profile = profile_for_model("all-MiniLM-L6-v2")
    assert profile is MINILM_PROFILE
    assert profile.strategy == "headgap"
    assert profile.head_ceiling is None and profile.head_floor == 0 and profile.head_min_prominence == 0
    assert (profile.head_band, profile.head_lexical_band) == (0.5, 0.3)
    assert (profile.head_lexical_weight, profile.head_recency_margin) == (0.5, 0.1)
    assert profile_for_model("ALL-minilm-l6-v2") is MINILM_PROFILE
    cut = resolve_cut("all-MiniLM-L6-v2")
    assert isinstance(cut, HeadGapCut) and cut.uses_lexical


def test_config_cut_strategy_overrides_the_profile_default() -> None:
    assert resolve_cut("voyage-code-3", "headgap").name == "headgap"
    assert resolve_cut("all-MiniLM-L6-v2", "maxgap").name == "maxgap"
    with pytest.raises(ValueError, match="unknown cut strategy"):
        resolve_cut("voyage-code-3", "bogus")


def test_calibration_keys_override_single_constants_camel_or_snake() -> None:
    profile = resolve_profile("all-MiniLM-L6-v2", {"headCeiling": 0.9, "head_band": 0.2})
    assert (profile.head_ceiling, profile.head_band) == (0.9, 0.2)
    assert profile.head == MINILM_PROFILE.head
    voyage = resolve_profile("voyage-code-3", {"fallback": 0.4})
    cut = voyage.cut()
    assert isinstance(cut, MaxGapCut) and cut.fallback == 0.4 and voyage.floor == 0.15


def test_calibration_for_another_model_is_ignored() -> None:
    profile = resolve_profile("voyage-code-3", {"model": "all-MiniLM-L6-v2", "headCeiling": 0.9})
    assert profile == VOYAGE_PROFILE
    same = resolve_profile("all-MiniLM-L6-v2", {"model": "all-MiniLM-L6-v2", "headCeiling": 0.9})
    assert same.head_ceiling == 0.9


def test_bad_calibration_values_are_rejected() -> None:
    with pytest.raises(ValueError):
        resolve_profile("all-MiniLM-L6-v2", {"headCeiling": -1})
    with pytest.raises(ValueError):
        resolve_profile("all-MiniLM-L6-v2", {"noSuchKey": 1})


def test_maxgap_profile_cut_matches_the_function_with_the_profile_constants() -> None:
    profile = resolve_profile("all-MiniLM-L6-v2", {"floor": 0.5, "ceiling": 1.1, "minGap": 0.02})
    distances = [0.8, 0.81, 0.83, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0]
    cut = profile.cut("maxgap")
    assert isinstance(cut, MaxGapCut) and cut.config is not None
    assert (cut.config.floor, cut.config.ceiling, cut.config.min_gap_size) == (0.5, 1.1, 0.02)
    expected = compute_adaptive_threshold(distances, 0.3, cut.config)
    assert expected.threshold == 0.83 and expected.method == "adaptive"
    assert compute_adaptive_threshold(distances, 0.3).threshold == 0.65  # the original clamps to 0.65
