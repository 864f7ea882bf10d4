"""Deriving a calibration profile from a labelled set (``kodiai memory calibrate``, leave-one-out): replay
``headgap`` over each query's pool on a grid of bands and keep the best, and the ``.kodiai.yml`` keys that
reproduce a derived profile. Offline only; the review reads the result from
:mod:`kodiai.learning.threshold.profiles`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.metrics import query_scores
from kodiai.learning.threshold.head_gap import HeadGapParams, head_gap_decide
from kodiai.learning.threshold.profiles import CalibrationProfile, profile_for_model
from kodiai.learning.threshold.types import Candidate


@dataclass(frozen=True)
class LabelledPool:
    """One labelled query's candidate pool as the cut sees it (ascending adjusted distance): ``vector``
    from the vector channel alone, ``fused`` with the lexical channel's hits and scores (None when the
    evaluation ran without it). ``recency`` says whether the multipliers are the recency ones."""

    query_id: str
    repo: str
    relevant: frozenset[str]
    graded: dict[str, int]
    vector: list[Candidate[str]]
    fused: list[Candidate[str]] | None = None
    recency: bool = True

    def pool(self, lexical: bool) -> list[Candidate[str]]:
        return self.fused if lexical and self.fused is not None else self.vector


class CalibrationTargets(BaseModel):
    """Constraints a derived profile must meet: ``max_empty`` on every track, ``min_abstain`` on the
    tracks in ``abstain_tracks``. ``min_abstain`` defaults to 0 (off): on the dev split no relative
    signal reaches the re-review track's 70 % without emptying answers on held-out repositories, so the
    constraint would only trade F0.5 for an abstain rate that does not carry over (see the docs)."""

    model_config = ConfigDict(frozen=True)

    max_empty: float = 0.10
    min_abstain: float = 0.0
    abstain_tracks: frozenset[str] = frozenset({"rereview"})


class TrackFigures(BaseModel):
    """The figures calibration optimises, for one track (metric definitions in ``evaluation.metrics``)."""

    model_config = ConfigDict(frozen=True)

    queries: int
    f0_5: float
    precision: float
    recall_at_5: float
    empty: float
    abstain: float | None


class CalibrationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: CalibrationProfile
    metrics: dict[str, TrackFigures]
    """Per track."""
    meets_targets: bool
    candidates_tried: int
    lexical: bool


BAND_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
PROMINENCE_GRID = (0.0, 0.03, 0.05, 0.07, 0.09, 0.11, 0.13)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def track_figures(
    pools: Sequence[LabelledPool], params: HeadGapParams, top_k: int, *, lexical: bool
) -> TrackFigures:
    """Replay ``headgap`` with ``params`` over ``pools`` (the same function the chain's cut calls)."""
    f, p, r, e, a = [], [], [], [], []
    for pool in pools:
        kept, _ = head_gap_decide(
            pool.pool(lexical), top_k, params, lexical=lexical and pool.fused is not None
        )
        if pool.relevant:
            qp, qr, qf = query_scores(kept, pool.relevant)
            f.append(qf)
            p.append(qp)
            r.append(qr)
            e.append(0.0 if kept else 1.0)
        else:
            a.append(0.0 if kept else 1.0)
    return TrackFigures(
        queries=len(pools),
        f0_5=_mean(f),
        precision=_mean(p),
        recall_at_5=_mean(r),
        empty=_mean(e),
        abstain=_mean(a) if a else None,
    )


def _violation(metrics: Mapping[str, TrackFigures], goal: CalibrationTargets) -> float:
    total = 0.0
    for track, m in metrics.items():
        total += max(0.0, m.empty - goal.max_empty)
        if goal.min_abstain > 0 and m.abstain is not None and track in goal.abstain_tracks:
            total += max(0.0, goal.min_abstain - m.abstain)
    return total


def derive_profile(
    tracks: Mapping[str, Sequence[LabelledPool]],
    *,
    model: str,
    top_k: int = 5,
    targets: CalibrationTargets | None = None,
    lexical: bool = True,
    base: CalibrationProfile | None = None,
    bands: Sequence[float] = BAND_GRID,
) -> CalibrationResult:
    """Fit the one ``headgap`` constant that is fitted: the band (``head_lexical_band`` with the lexical
    channel, else ``head_band``), on a coarse grid. Everything else comes from ``base`` (the model's
    built-in profile): the lexical weight (0.5, equal weights) and the recency margin (0.1) are set, not
    fitted, because leave-one-repository-out showed fitting them too moves the profile between folds
    without a gain on the held-out repository.

    Objective: the mean F0.5 over the tracks. A candidate is feasible when ``empty ≤ max_empty`` on every
    track (and, when ``min_abstain > 0``, ``abstain ≥ min_abstain`` on the abstain tracks — only then is
    the relative abstain gate searched too); the best feasible one wins, else the one with the smallest
    total violation; ties keep the narrower band.
    """
    goal = targets or CalibrationTargets()
    start = base or profile_for_model(model)
    present = {name: list(pools) for name, pools in tracks.items() if pools}
    if not present:
        raise ValueError("no labelled queries to calibrate on")
    use_lexical = (
        lexical
        and start.head_lexical_weight > 0
        and all(p.fused is not None for pools in present.values() for p in pools)
    )
    prominences = PROMINENCE_GRID if goal.min_abstain > 0 else (start.head_min_prominence,)
    best_key: tuple[float, float] | None = None
    best: tuple[CalibrationProfile, dict[str, TrackFigures]] | None = None
    tried = 0
    for band, prominence in itertools.product(bands, prominences):
        update: dict[str, Any] = {"strategy": "headgap", "head_min_prominence": prominence}
        update["head_lexical_band" if use_lexical else "head_band"] = band
        profile = start.model_copy(update=update)
        params = profile.head_gap_params()
        metrics = {
            name: track_figures(pools, params, top_k, lexical=use_lexical) for name, pools in present.items()
        }
        tried += 1
        mean_f = sum(m.f0_5 for m in metrics.values()) / len(metrics)
        rank = (-round(_violation(metrics, goal), 9), round(mean_f, 9))
        if best_key is None or rank > best_key:
            best_key, best = rank, (profile, metrics)
    assert best is not None and best_key is not None
    return CalibrationResult(
        profile=best[0],
        metrics=best[1],
        meets_targets=best_key[0] == 0.0,
        candidates_tried=tried,
        lexical=use_lexical,
    )


def calibration_yaml_keys(profile: CalibrationProfile, model: str) -> dict[str, Any]:
    """The ``knowledge.retrieval`` keys of ``.kodiai.yml`` that reproduce ``profile`` under ``model``:
    both bands, the lexical weight and the recency margin (the constants calibration fits or sets), and the
    relative abstain gate when it is on. :func:`resolve_profile` of the result gives ``profile`` back for
    every constant ``.kodiai.yml`` can express (see :func:`profile_only_keys` for the rest)."""
    calibration: dict[str, Any] = {
        "model": model,
        "headBand": profile.head_band,
        "headLexicalBand": profile.head_lexical_band,
        "headLexicalWeight": profile.head_lexical_weight,
    }
    if profile.head_recency_margin is not None:
        calibration["headRecencyMargin"] = profile.head_recency_margin
    if profile.head_min_prominence > 0:
        calibration["headMinProminence"] = profile.head_min_prominence
    return {"knowledge": {"retrieval": {"cutStrategy": profile.strategy, "calibration": calibration}}}


def profile_only_keys(profile: CalibrationProfile) -> dict[str, Any]:
    """Constants of ``profile`` that ``.kodiai.yml`` cannot express (camelCase), for the calibrate report:
    only a recency margin of None (recency re-orders but never drops), since YAML keys reject null."""
    return {"headRecencyMargin": None} if profile.head_recency_margin is None else {}
