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

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig
from kodiai.learning.cut_strategy import HeadGapCut, HeadGapParams, MaxGapCut, NamedCut, StrategyName
from kodiai.learning.embeddings import LOCAL_MODEL, VOYAGE_MODEL


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
    head_min_relative_gap=0.15,
    head_band=0.10,
    head_ceiling=0.82,
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
    """The model's profile with ``knowledge.retrieval.calibration`` keys (camelCase or snake_case) on top."""
    base = profile_for_model(model)
    if overrides is None:
        return base
    given = (
        overrides.model_dump(exclude_none=True, by_alias=False)
        if isinstance(overrides, BaseModel)
        else {k: v for k, v in overrides.items() if v is not None}
    )
    return CalibrationProfile.model_validate({**base.model_dump(), **given})


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
