"""Per-embedder calibration profiles, their resolution from config, and derivation from labelled pools."""

from __future__ import annotations

import pytest

from kodiai.learning.evaluation.calibration import (
    CalibrationTargets,
    LabelledPool,
    calibration_yaml_keys,
    derive_profile,
)
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
from kodiai.learning.threshold.types import Candidate


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


def _pool(qid: str, relevant: set[str], distances: list[tuple[str, float]]) -> LabelledPool:
    return LabelledPool(
        query_id=qid,
        repo="acme/api",
        relevant=frozenset(relevant),
        graded=dict.fromkeys(relevant, 2),
        vector=[Candidate(i, d) for i, d in distances],
    )


def test_derive_profile_fits_the_band() -> None:
    """Each positive has two relevant matches at the top (similarity 1 and 0.9), then others from 0.5
    down: every band in [0.1, 0.5) keeps exactly the two; a tie keeps the narrowest."""
    pools = [
        _pool(
            f"p{i}",
            {f"a{i}", f"b{i}"},
            [(f"a{i}", 0.50), (f"b{i}", 0.55), *((f"x{i}{k}", 0.75 + 0.05 * k) for k in range(6))],
        )
        for i in range(6)
    ]
    result = derive_profile({"past-fixes": pools}, model="m", lexical=False)
    assert result.meets_targets and not result.lexical
    assert result.profile.head_band == 0.1
    assert result.metrics["past-fixes"].f0_5 == pytest.approx(1.0)
    assert result.profile.head_ceiling is None and result.profile.head_min_prominence == 0


def test_derive_profile_opens_the_relative_gate_only_for_an_abstain_target() -> None:
    """Positives stand out of their pool, negatives do not: with an abstain target the relative
    prominence gate is searched and separates them; without one it stays off."""
    positives = [
        _pool(f"p{i}", {f"r{i}"}, [(f"r{i}", 0.6), *((f"x{i}{k}", 0.9 + 0.01 * k) for k in range(6))])
        for i in range(8)
    ]
    negatives = [_pool(f"n{i}", set(), [(f"y{i}{k}", 0.92 + 0.01 * k) for k in range(6)]) for i in range(4)]
    tracks = {"rereview": positives + negatives}
    gated = derive_profile(tracks, model="m", lexical=False, targets=CalibrationTargets(min_abstain=0.7))
    assert gated.meets_targets and gated.profile.head_min_prominence > 0
    m = gated.metrics["rereview"]
    assert m.abstain == 1.0 and m.empty == 0.0 and m.f0_5 == pytest.approx(1.0)
    plain = derive_profile(tracks, model="m", lexical=False)
    assert plain.profile.head_min_prominence == 0 and plain.metrics["rereview"].abstain == 0.0


def test_derive_profile_reports_unmet_targets() -> None:
    """Positives and negatives look alike: no relative gate abstains without emptying positives."""
    same = [(f"z{k}", 0.9 + 0.01 * k) for k in range(6)]
    pools = [_pool("p", {"z0"}, same), _pool("n", set(), same)]
    result = derive_profile({"rereview": pools}, model="m", targets=CalibrationTargets(min_abstain=0.7))
    assert not result.meets_targets


def test_derive_profile_needs_data() -> None:
    with pytest.raises(ValueError, match="no labelled queries"):
        derive_profile({"t": []}, model="m")


def test_yaml_keys_are_the_kodiai_yml_shape() -> None:
    keys = calibration_yaml_keys(MINILM_PROFILE, "all-MiniLM-L6-v2")
    retrieval = keys["knowledge"]["retrieval"]
    assert retrieval["cutStrategy"] == "headgap"
    assert retrieval["calibration"]["model"] == "all-MiniLM-L6-v2"
    assert resolve_profile("all-MiniLM-L6-v2", retrieval["calibration"]) == MINILM_PROFILE
