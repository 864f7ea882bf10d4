"""Per-embedder calibration profiles: which cut strategy, and its constants, for that model.

Distances between unit vectors live on 0..2 for every model, but where relevant memories fall on that
scale depends on the model (voyage-code-3 around 0.2–0.5, all-MiniLM-L6-v2 around 0.6–1.0) and, as the
leave-one-repository-out evaluation shows, on the repository too. A profile holds the constants of both
strategies for one model; the strategy used is ``knowledge.retrieval.cutStrategy`` when set, else the
profile's ``strategy``, and the keys of ``knowledge.retrieval.calibration`` override single constants.

- ``voyage-code-3``: the original's constants exactly (floor 0.15, ceiling 0.65, minimum gap 0.05, the
  configured threshold as fallback, strategy ``maxgap``), so the original's default configuration keeps
  parity.
- ``all-MiniLM-L6-v2`` and any other model: ``headgap`` with relative rules only (no absolute number), its
  two bands and the recency margin derived by ``kodiai memory calibrate`` on ``shared/eval-dev`` and
  checked leave-one-repository-out (``kodiai eval retrieval --loo``); the lexical channel's weight is the
  equal-weight 0.5 (see ``docs/retrieval-quality.md``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig
from kodiai.learning.cut_strategy import (
    Candidate,
    HeadGapCut,
    HeadGapParams,
    MaxGapCut,
    NamedCut,
    StrategyName,
    head_gap_decide,
)
from kodiai.learning.embeddings import LOCAL_MODEL, VOYAGE_MODEL
from kodiai.learning.evaluation.metrics import query_scores
from kodiai.log import get_logger


class CalibrationProfile(BaseModel):
    """The cut constants for one embedding model (YAML/JSON keys in camelCase, as in ``.kodiai.yml``).

    ``floor``/``ceiling``/``min_gap``/``fallback`` are the max-gap constants (absolute distances;
    ``fallback`` None = the configured ``distanceThreshold``); the ``head_*`` keys tune ``headgap``
    (:class:`~kodiai.learning.cut_strategy.HeadGapParams`): ``head_band`` / ``head_lexical_band`` are the
    bands on the pool-normalised score without / with the lexical channel, ``head_lexical_weight`` the
    lexical channel's weight (0 = off), ``head_recency_margin`` how much newer a memory must be to push out
    a less similar one (None = recency only re-orders), ``head_min_relative_gap`` the optional gap rule on
    the normalised score (0 = off), ``head_min_prominence`` the relative abstain gate (0 = off);
    ``head_ceiling`` / ``head_floor`` are absolute and off in every built-in profile.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")

    strategy: StrategyName = "headgap"
    floor: float = Field(0.15, ge=0, le=2)
    ceiling: float = Field(0.65, ge=0, le=2)
    min_gap: float = Field(0.05, ge=0, le=2)
    fallback: float | None = Field(None, ge=0, le=2)
    head: int = Field(5, ge=1, le=20)
    head_min_relative_gap: float = Field(0.0, ge=0, le=10)
    head_band: float = Field(0.5, ge=0, le=10)
    head_ceiling: float | None = Field(None, gt=0, le=2)
    head_floor: float = Field(0.0, ge=0, le=2)
    head_min_prominence: float = Field(0.0, ge=0, lt=1)
    head_lexical_weight: float = Field(0.0, ge=0, le=1)
    head_lexical_band: float = Field(0.25, ge=0, le=10)
    head_recency_margin: float | None = Field(0.1, ge=0, le=10)

    def max_gap_config(self) -> AdaptiveThresholdConfig:
        return AdaptiveThresholdConfig(floor=self.floor, ceiling=self.ceiling, min_gap_size=self.min_gap)

    def head_gap_params(self) -> HeadGapParams:
        return HeadGapParams(
            head=self.head,
            min_gap=self.head_min_relative_gap,
            band=self.head_band,
            ceiling=self.head_ceiling,
            floor=self.head_floor,
            min_prominence=self.head_min_prominence,
            lexical_weight=self.head_lexical_weight,
            lexical_band=self.head_lexical_band,
            recency_margin=self.head_recency_margin,
        )

    def cut(self, strategy: StrategyName | None = None) -> NamedCut:
        """The cut strategy object (``strategy`` overrides the profile's own)."""
        if (strategy or self.strategy) == "maxgap":
            return MaxGapCut(self.max_gap_config(), self.fallback)
        return HeadGapCut(self.head_gap_params())


# The original's constants: the configured threshold (default 0.3) is the fallback.
VOYAGE_PROFILE = CalibrationProfile(strategy="maxgap", floor=0.15, ceiling=0.65, min_gap=0.05, fallback=None)

# Relative rules only (scale-free: any affine change of the distances keeps every decision), so the same
# constants serve every model without its own profile. Derived on shared/eval-dev by `kodiai memory
# calibrate` (bands, recency margin) and checked leave-one-repository-out; no abstain gate, since none
# of the relative signals tried separates "has history" from "has none" on held-out repositories.
MINILM_PROFILE = CalibrationProfile(
    strategy="headgap",
    head_band=0.5,
    head_lexical_weight=0.5,
    head_lexical_band=0.3,
    head_recency_margin=0.1,
    head_min_relative_gap=0.0,
    head_min_prominence=0.0,
    head_ceiling=None,
)
SCALE_FREE_DEFAULT = MINILM_PROFILE.model_copy()

BUILTIN_PROFILES: dict[str, CalibrationProfile] = {
    VOYAGE_MODEL: VOYAGE_PROFILE,
    LOCAL_MODEL: MINILM_PROFILE,
}


def profile_for_model(model: str) -> CalibrationProfile:
    """The built-in profile of ``model`` (exact name, case-insensitive), else the scale-free default."""
    wanted = model.strip().lower()
    for name, profile in BUILTIN_PROFILES.items():
        if name.lower() == wanted:
            return profile
    return SCALE_FREE_DEFAULT


def resolve_profile(model: str, overrides: Mapping[str, Any] | BaseModel | None = None) -> CalibrationProfile:
    """The model's profile with ``knowledge.retrieval.calibration`` keys (camelCase or snake_case) on top.

    A ``model`` key names the embedder the keys were derived for: with another embedder in use they are
    ignored (with a warning), since its distances live on another scale.
    """
    base = profile_for_model(model)
    if overrides is None:
        return base
    given = (
        overrides.model_dump(exclude_none=True, by_alias=False)
        if isinstance(overrides, BaseModel)
        else {k: v for k, v in overrides.items() if v is not None}
    )
    for_model = given.pop("model", None)
    if for_model is not None and str(for_model).strip().lower() != model.strip().lower():
        get_logger("kodiai.learning.calibration").warning(
            "knowledge.retrieval.calibration is for another embedding model; using the built-in profile",
            calibration_model=for_model,
            model=model,
        )
        return base
    merged = {**base.model_dump(), **CalibrationProfile.model_validate(given).model_dump(exclude_unset=True)}
    return CalibrationProfile.model_validate(merged)


def resolve_cut(
    model: str,
    cut_strategy: str | None = None,
    calibration: Mapping[str, Any] | BaseModel | None = None,
) -> NamedCut:
    """The cut the review uses: ``knowledge.retrieval.cutStrategy`` → the profile's strategy."""
    profile = resolve_profile(model, calibration)
    if cut_strategy is not None and cut_strategy not in ("maxgap", "headgap"):
        raise ValueError(f"unknown cut strategy {cut_strategy!r}; expected maxgap or headgap")
    return profile.cut(cut_strategy)  # type: ignore[arg-type]


# ---- derivation from a labelled set ---------------------------------------------------------------


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
