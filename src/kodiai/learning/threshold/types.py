"""The shapes every cut shares: what a cut is given (:class:`CutContext`), what it answers
(:class:`CutDecision` with its :class:`AdaptiveThresholdResult`), the strategy protocol (:class:`NamedCut`)
and one pool member as a cut sees it (:class:`Candidate`).

They live apart from the strategies so that the chain (:mod:`kodiai.learning.pipeline`), the stages after
the cut (:mod:`kodiai.learning.stages`) and every strategy import them from one place, one way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kodiai.learning.recency import RecencyConfig
from kodiai.learning.types import RerankedResult, ThresholdMethod

_Id = TypeVar("_Id", bound=Hashable)

StrategyName = Literal["maxgap", "headgap"]
"""The strategies a repository can choose (``knowledge.retrieval.cutStrategy``)."""
STRATEGY_NAMES: tuple[StrategyName, ...] = ("maxgap", "headgap")


class AdaptiveThresholdConfig(BaseModel):
    """Tuning of the max-gap threshold; the defaults are the original's."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    min_candidates_for_gap: int = 8
    fallback_percentile: float = 0.75
    min_gap_size: float = 0.05
    floor: float = 0.15
    ceiling: float = 0.65


class AdaptiveThresholdResult(BaseModel):
    """The threshold chosen, how, over how many candidates, and the gap that decided it (if any). Every
    cut reports its decision in this shape (the ``retrieval_quality`` telemetry reads it)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    threshold: float
    method: ThresholdMethod
    candidate_count: int
    gap_size: float | None = None
    gap_index: int | None = None


def threshold_result(
    threshold: float, method: str, n: int, gap: float | None = None, at: int | None = None
) -> AdaptiveThresholdResult:
    """An :class:`AdaptiveThresholdResult` from a method name computed at run time (validated)."""
    return AdaptiveThresholdResult.model_validate(
        {"threshold": threshold, "method": method, "candidate_count": n, "gap_size": gap, "gap_index": at}
    )


class CutContext(BaseModel):
    """What a cut strategy may look at besides the results."""

    model_config = ConfigDict(frozen=True)

    top_k: int
    distance_threshold: float
    adaptive: bool
    adaptive_config: AdaptiveThresholdConfig | None = None
    now: datetime | None = None
    recency: bool = True
    """Whether the chain weights by recency; a strategy with ``owns_recency = True`` gets the unweighted
    list and applies ``recency_config`` itself (when ``recency`` is on)."""
    recency_config: RecencyConfig | None = None
    lexical: dict[int, float] | None = None
    """The lexical channel's score (BM25) per pool member, 0 for no match; None when it did not run."""


class CutDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    results: list[RerankedResult]
    threshold: AdaptiveThresholdResult


CutStrategy = Callable[[Sequence[RerankedResult], CutContext], CutDecision]


class NamedCut(Protocol):
    """A cut strategy the chain can run, with its name, where recency goes and whether it fuses lexical."""

    name: str
    owns_recency: bool
    uses_lexical: bool

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision: ...


@dataclass(frozen=True, slots=True)
class Candidate(Generic[_Id]):
    """One pool member as a cut sees it: ``distance`` on the adjusted scale (before recency),
    ``multiplier`` the recency multiplier (1 without recency), ``lexical`` the BM25 score (0 = no match)."""

    id: _Id
    distance: float
    multiplier: float = 1.0
    lexical: float = 0.0

    @property
    def weighted(self) -> float:
        """The recency-adjusted distance (what ``apply_recency_weighting`` computes)."""
        return self.distance * self.multiplier
