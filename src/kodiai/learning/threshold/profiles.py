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

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.learning.embeddings import LOCAL_MODEL, VOYAGE_MODEL
from kodiai.learning.threshold.head_gap import HeadGapCut, HeadGapParams
from kodiai.learning.threshold.max_gap import MaxGapCut
from kodiai.learning.threshold.types import AdaptiveThresholdConfig, NamedCut, StrategyName
from kodiai.log import get_logger


class CalibrationProfile(BaseModel):
    """The cut constants for one embedding model (YAML/JSON keys in camelCase, as in ``.kodiai.yml``).

    ``floor``/``ceiling``/``min_gap``/``fallback`` are the max-gap constants (absolute distances;
    ``fallback`` None = the configured ``distanceThreshold``); the ``head_*`` keys tune ``headgap``
    (:class:`~kodiai.learning.threshold.head_gap.HeadGapParams`): ``head_band`` / ``head_lexical_band`` are the
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
        get_logger("kodiai.learning.threshold.profiles").warning(
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
