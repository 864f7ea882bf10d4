"""The stages after the cut: the learned ranker (second stage) and abstention, as the review runs them.

Order, per retrieval (both run on the first stage's pool before truncation, after ``headgap`` decided):

1. the second stage (``knowledge.retrieval.secondStage``): unless a skip rule fires, the ranker's answer
   replaces the cut's — the candidates whose probability reaches its threshold (``rank:kept``), or
   nothing when none does (``rank:abstain``);
2. abstention (``knowledge.retrieval.abstain``), when the ranker is off or skipped the pool: nothing when
   the pool's evidence is too weak (``abstain``), else the cut's answer stands.

The models (weights, standardisation, thresholds) ship as ``stages_model.json`` in this package, trained
leave-one-repository-out and then on the whole dev set by ``kodiai eval stages --write-model``. Telemetry
records ``second_stage`` (``used`` / ``skipped:<rule>``) and ``abstain_reason``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

from kodiai.learning.abstain import AbstainModel, decide
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.second_stage import PairInput, PrFiles, RankerModel, language_match, rank_pool
from kodiai.learning.threshold.pool import candidates_of
from kodiai.learning.threshold.types import AdaptiveThresholdResult, CutContext, CutDecision, NamedCut
from kodiai.learning.types import RerankedResult

MODEL_RESOURCE = "stages_model.json"


class StagesModel(BaseModel):
    """Both stages' fitted models."""

    model_config = ConfigDict(frozen=True)

    ranker: RankerModel
    abstain: AbstainModel
    trained_on: str = ""


@lru_cache(maxsize=1)
def shipped_model() -> StagesModel:
    """The model shipped in the package (read once per process)."""
    text = resources.files("kodiai.learning").joinpath(MODEL_RESOURCE).read_text(encoding="utf-8")
    return StagesModel.model_validate(json.loads(text))


class StageSwitches(BaseModel):
    """Which stages run (``.kodiai.yml``: ``knowledge.retrieval.abstain`` / ``secondStage``)."""

    model_config = ConfigDict(frozen=True)

    abstain: bool = False
    second_stage: bool = False
    model: StagesModel | None = None
    """None: the shipped model."""

    @classmethod
    def of(cls, abstain: bool | None, second_stage: bool | None) -> StageSwitches:
        """The ``.kodiai.yml`` keys: unset (None) is on, only an explicit ``false`` turns a stage off."""
        return cls(abstain=abstain is not False, second_stage=second_stage is not False)

    @property
    def active(self) -> bool:
        return self.abstain or self.second_stage

    def resolved(self) -> StagesModel:
        return self.model if self.model is not None else shipped_model()


class StagedCut:
    """An evaluation handle: ``inner`` (the cut) with the stages ``switches`` after it, as the review runs
    them by default. As a cut it behaves exactly as ``inner``; the evaluation harness passes ``switches``
    to ``retrieve_context``, which runs the stages after it."""

    def __init__(self, inner: NamedCut, switches: StageSwitches, name: str | None = None) -> None:
        self.inner = inner
        self.switches = switches
        self.name = name or staged_name(inner.name, switches)
        self.owns_recency = inner.owns_recency
        self.uses_lexical = inner.uses_lexical

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        return self.inner(reranked, ctx)


def staged_name(inner: str, switches: StageSwitches) -> str:
    """The evaluation's row name: ``headgap+stages`` (both), ``headgap+rank`` or ``headgap+abstain``."""
    both = switches.abstain and switches.second_stage
    return f"{inner}+{'stages' if both else 'rank' if switches.second_stage else 'abstain'}"


@dataclass(frozen=True)
class StagesOutcome:
    """``kept``: pool indices in final order, or None when the cut's answer stands; ``method`` the
    ``threshold_method`` when a stage decided; ``second_stage`` / ``abstain_reason`` for telemetry."""

    kept: list[int] | None
    method: str | None
    second_stage: str | None
    abstain_reason: str | None


def run_stages(
    pool: Sequence[PairInput],
    pr: PrFiles,
    model: StagesModel,
    *,
    abstain: bool,
    second_stage: bool,
    top_k: int,
) -> StagesOutcome:
    """The stages over one pool (pure)."""
    status: str | None = None
    if not pool:  # the cut already answered "empty"; there is nothing to rank or abstain from
        return StagesOutcome(None, None, None, None)
    if second_stage:
        ranked = rank_pool(pool, pr, model.ranker, top_k)
        status = ranked.status
        if status == "used":
            if ranked.kept:
                return StagesOutcome(ranked.kept, "rank:kept", status, None)
            best = max(ranked.probabilities, default=0.0)
            reason = f"ranker: best p={best:.2f}<{model.ranker.threshold:.2f}"
            return StagesOutcome([], "rank:abstain", status, reason)
    if abstain:
        verdict = decide(pool, pr, model.abstain)
        if verdict.abstain:
            return StagesOutcome([], "abstain", status, verdict.reason)
        return StagesOutcome(None, None, status, verdict.reason)
    return StagesOutcome(None, None, status, None)


def stage_pool(
    reranked: Sequence[RerankedResult], ctx: CutContext, pr_languages: Sequence[str]
) -> list[PairInput]:
    """The chain's pool (ascending adjusted distance, before recency) as the stages see it."""
    return [
        PairInput(
            c.distance,
            c.multiplier,
            c.lexical,
            r.record.file_path,
            language_match(r.record.file_path, pr_languages),
        )
        for r, c in zip(reranked, candidates_of(reranked, ctx), strict=True)
    ]


def apply_stages(
    reranked: Sequence[RerankedResult],
    decision: CutDecision,
    ctx: CutContext,
    *,
    pr_files: Sequence[str],
    pr_languages: Sequence[str],
    switches: StageSwitches,
) -> tuple[CutDecision, StagesOutcome]:
    """The stages over the chain's pool; the cut's ``decision`` when neither decides. Kept memories carry
    their recency-adjusted distance, as the cut's results do."""
    outcome = run_stages(
        stage_pool(reranked, ctx, pr_languages),
        PrFiles.of(pr_files),
        switches.resolved(),
        abstain=switches.abstain,
        second_stage=switches.second_stage,
        top_k=ctx.top_k,
    )
    if outcome.kept is None or outcome.method is None:
        return decision, outcome
    shown = (
        apply_recency_weighting(reranked, ctx.now, ctx.recency_config)
        if ctx.recency and reranked
        else reranked
    )
    by_id = {r.memory_id: r for r in shown}
    results = [by_id[reranked[i].memory_id] for i in outcome.kept]
    threshold = AdaptiveThresholdResult.model_validate(
        {
            "threshold": max((reranked[i].adjusted_distance for i in outcome.kept), default=-1.0),
            "method": outcome.method,
            "candidate_count": len(reranked),
        }
    )
    return CutDecision(results=results, threshold=threshold), outcome
