"""Deriving a calibration profile from labelled pools (``kodiai memory calibrate``) and the
``.kodiai.yml`` keys that reproduce it."""

from __future__ import annotations

import pytest

from kodiai.evaluation.calibration import (
    CalibrationTargets,
    LabelledPool,
    calibration_yaml_keys,
    derive_profile,
)
from kodiai.learning.threshold.profiles import MINILM_PROFILE, resolve_profile
from kodiai.learning.threshold.types import Candidate


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
