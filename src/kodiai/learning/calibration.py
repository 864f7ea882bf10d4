"""Per-embedder calibration profiles: which cut strategy, and its constants, on that model's distance scale.

Distances between unit vectors live on 0..2 for every model, but where relevant memories fall on that
scale depends on the model: voyage-code-3 puts them around 0.2–0.5, all-MiniLM-L6-v2 around 0.8–1.1.
A profile holds the constants of both strategies for one model; the strategy actually used is
``knowledge.retrieval.cutStrategy`` when set, else the profile's ``strategy``, and the keys of
``knowledge.retrieval.calibration`` override single constants.

- ``voyage-code-3``: the original's constants exactly (floor 0.15, ceiling 0.65, minimum gap 0.05, the
  configured threshold as fallback, strategy ``maxgap``), so the original's default configuration keeps
  parity.
- ``all-MiniLM-L6-v2``: derived on ``shared/eval-dev`` (dev split) with ``kodiai memory calibrate``.
- any other model: :data:`SCALE_FREE_DEFAULT`, ``headgap`` with relative rules only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig
from kodiai.learning.cut_strategy import (
    HeadGapCut,
    HeadGapParams,
    MaxGapCut,
    NamedCut,
    StrategyName,
    head_gap_select,
)
from kodiai.learning.embeddings import LOCAL_MODEL, VOYAGE_MODEL
from kodiai.learning.evaluation.metrics import QueryJudgement, StrategyMetrics, aggregate
from kodiai.log import get_logger


class CalibrationProfile(BaseModel):
    """The cut constants for one embedding model (YAML/JSON keys in camelCase, as in ``.kodiai.yml``).

    ``floor``/``ceiling``/``min_gap``/``fallback`` are the max-gap constants (absolute distances;
    ``fallback`` None = the configured ``distanceThreshold``); the ``head_*`` keys tune ``headgap``
    (``head_ceiling`` is the absolute abstain gate on the best result, None = off; the rest relative).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")

    strategy: StrategyName = "headgap"
    floor: float = Field(0.15, ge=0, le=2)
    ceiling: float = Field(0.65, ge=0, le=2)
    min_gap: float = Field(0.05, ge=0, le=2)
    fallback: float | None = Field(None, ge=0, le=2)
    head: int = Field(5, ge=1, le=20)
    head_min_relative_gap: float = Field(0.06, ge=0, le=10)
    head_band: float = Field(0.08, ge=0, le=10)
    head_ceiling: float | None = Field(None, gt=0, le=2)
    head_floor: float = Field(0.0, ge=0, le=2)
    head_min_prominence: float = Field(0.0, ge=0, lt=1)

    def max_gap_config(self) -> AdaptiveThresholdConfig:
        return AdaptiveThresholdConfig(floor=self.floor, ceiling=self.ceiling, min_gap_size=self.min_gap)

    def head_gap_params(self) -> HeadGapParams:
        return HeadGapParams(
            head=self.head,
            min_relative_gap=self.head_min_relative_gap,
            band=self.head_band,
            ceiling=self.head_ceiling,
            floor=self.head_floor,
            min_prominence=self.head_min_prominence,
        )

    def cut(self, strategy: StrategyName | None = None) -> NamedCut:
        """The cut strategy object (``strategy`` overrides the profile's own)."""
        if (strategy or self.strategy) == "maxgap":
            return MaxGapCut(self.max_gap_config(), self.fallback)
        return HeadGapCut(self.head_gap_params())


# The original's constants: the configured threshold (default 0.3) is the fallback.
VOYAGE_PROFILE = CalibrationProfile(strategy="maxgap", floor=0.15, ceiling=0.65, min_gap=0.05, fallback=None)

# Relative rules only: works on any scale, abstains when the best match does not stand out of its pool.
SCALE_FREE_DEFAULT = CalibrationProfile(
    strategy="headgap",
    head=5,
    head_min_relative_gap=0.06,
    head_band=0.08,
    head_ceiling=None,
    head_min_prominence=0.05,
)

# Derived on shared/eval-dev (dev split, both tracks) by ``kodiai memory calibrate``; the max-gap
# constants stay the original's (maxgap is not recommended on this model's scale).
MINILM_PROFILE = CalibrationProfile(
    strategy="headgap",
    head=3,
    head_min_relative_gap=0.12,
    head_band=0.08,
    head_ceiling=0.829,
    head_min_prominence=0.0,
)

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


class LabelledPool(BaseModel):
    """One labelled query's candidate pool, as the cut sees it: (id, distance) ascending, without and
    with recency weighting."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    relevant: frozenset[str]
    graded: dict[str, int]
    plain: list[tuple[str, float]]
    weighted: list[tuple[str, float]]


class CalibrationTargets(BaseModel):
    """Constraints a derived profile must meet (with recency on and off): ``max_empty`` on every track,
    ``min_abstain`` on the tracks in ``abstain_tracks`` (the issue's targets: re-review only)."""

    model_config = ConfigDict(frozen=True)

    max_empty: float = 0.10
    min_abstain: float = 0.70
    abstain_tracks: frozenset[str] = frozenset({"rereview"})


class CalibrationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: CalibrationProfile
    metrics: dict[str, StrategyMetrics]
    """Per ``<track>/recency-on`` and ``<track>/recency-off``."""
    meets_targets: bool
    candidates_tried: int


HEAD_GRID = (1, 2, 3, 4, 5)
GAP_GRID = tuple(round(0.04 + 0.02 * i, 2) for i in range(14))  # 0.04 … 0.30
BAND_GRID = tuple(round(0.02 * i, 2) for i in range(11))  # 0 … 0.20


def _ceiling_grid(tracks: Mapping[str, Sequence[LabelledPool]]) -> list[float | None]:
    best = sorted(p.plain[0][1] for pools in tracks.values() for p in pools if p.plain)
    if not best:
        return [None]
    quantiles = np.quantile(np.asarray(best), np.linspace(0.5, 1.0, 21))
    return [None, *sorted({round(float(q), 3) for q in quantiles})]


def _judge(
    pools: Sequence[LabelledPool], params: HeadGapParams, top_k: int, recency: bool
) -> StrategyMetrics:
    judgements = []
    for pool in pools:
        kept, decision = head_gap_select(pool.plain, pool.weighted if recency else None, top_k, params)
        judgements.append(
            QueryJudgement(
                query_id=pool.query_id,
                kept=kept,
                relevant=pool.relevant,
                graded=pool.graded,
                method=decision.method,
            )
        )
    return aggregate(judgements)


def derive_profile(
    tracks: Mapping[str, Sequence[LabelledPool]],
    *,
    model: str,
    top_k: int = 5,
    targets: CalibrationTargets | None = None,
) -> CalibrationResult:
    """Grid-search the ``headgap`` constants on labelled pools.

    Objective: the mean F0.5 over every track with recency on and off. A candidate is feasible when on
    every track and both recency settings ``empty ≤ max_empty`` and, on the ``abstain_tracks`` that have
    queries without relevant history, ``abstain ≥ min_abstain``; the best feasible one wins, else the one with the
    smallest total violation (ties by F0.5). The abstain gate (``head_ceiling``) is searched among the
    quantiles 50…100% of the best-candidate distances, and "off".
    """
    goal = targets or CalibrationTargets()
    if not any(tracks.values()):
        raise ValueError("no labelled queries to calibrate on")
    best_key: tuple[float, float] | None = None
    best: tuple[HeadGapParams, dict[str, StrategyMetrics]] | None = None
    tried = 0
    for ceiling, head, gap, band in itertools.product(_ceiling_grid(tracks), HEAD_GRID, GAP_GRID, BAND_GRID):
        params = HeadGapParams(head=head, min_relative_gap=gap, band=band, ceiling=ceiling)
        metrics: dict[str, StrategyMetrics] = {}
        for name, pools in tracks.items():
            if not pools:
                continue
            for recency in (True, False):
                metrics[f"{name}/recency-{'on' if recency else 'off'}"] = _judge(
                    pools, params, top_k, recency
                )
        tried += 1
        violation = sum(
            max(0.0, (m.empty or 0.0) - goal.max_empty)
            + (
                max(0.0, goal.min_abstain - m.abstain)
                if m.abstain is not None and key.split("/")[0] in goal.abstain_tracks
                else 0.0
            )
            for key, m in metrics.items()
        )
        score = sum(m.f0_5 for m in metrics.values()) / len(metrics)
        rank = (-violation, score)
        if best_key is None or rank > best_key:
            best_key, best = rank, (params, metrics)
    assert best is not None and best_key is not None
    params, metrics = best
    profile = profile_for_model(model).model_copy(
        update={
            "strategy": "headgap",
            "head": params.head,
            "head_min_relative_gap": params.min_relative_gap,
            "head_band": params.band,
            "head_ceiling": params.ceiling,
            "head_min_prominence": 0.0,
        }
    )
    return CalibrationResult(
        profile=profile, metrics=metrics, meets_targets=best_key[0] == 0.0, candidates_tried=tried
    )


def calibration_yaml_keys(profile: CalibrationProfile, model: str) -> dict[str, Any]:
    """The ``knowledge.retrieval`` keys that select ``profile`` for ``model`` in ``.kodiai.yml``."""
    calibration: dict[str, Any] = {
        "model": model,
        "head": profile.head,
        "headMinRelativeGap": profile.head_min_relative_gap,
        "headBand": profile.head_band,
    }
    if profile.head_ceiling is not None:
        calibration["headCeiling"] = profile.head_ceiling
    return {"knowledge": {"retrieval": {"cutStrategy": profile.strategy, "calibration": calibration}}}
