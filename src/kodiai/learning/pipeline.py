"""The whole retrieval chain, as the review handler runs it (behaviour R1 step 32).

isolation (wide pool when adaptive) → [lexical channel] → one entry per finding → language rerank → recency
weighting → cut (adaptive max-gap threshold, then ``top_k``) → confidence labels; plus the ambiguity signal
on the untruncated pool and the ``retrieval_quality`` figures. Pure apart from the store reads that
isolation (and the lexical channel, when given) does.

One typed call, :func:`retrieve`: the query (:class:`RetrievalQuery`) and how the chain runs
(:class:`RetrievalOptions`, built once from ``.kodiai.yml``). :func:`retrieve_context` is the keyword form
with the original's parameters (the pinned parity API).

The cut is a plain function of ``(reranked results, CutContext)`` (:mod:`kodiai.learning.threshold`): set
another strategy in ``RetrievalOptions.cut`` to change how the list is cut without touching the rest of
the chain. A cut with ``uses_lexical`` set, given a :class:`LexicalSearcher` and the query text, also sees
the lexical channel's hits in the pool and their scores in ``CutContext.lexical`` (the original's
``maxgap`` never does).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.learning.ambiguity import AmbiguitySignal, ambiguity_signal
from kodiai.learning.confidence import ConfidenceLabel, confidence_labels, label_counts
from kodiai.learning.isolation import IsolationLayer, Provenance, internal_top_k
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.rerank import RerankConfig, rerank_by_language
from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery
from kodiai.learning.stages import apply_stages
from kodiai.learning.threshold.pool import candidates_of
from kodiai.learning.threshold.same_pr import SamePrMode, same_pr_decide, threshold_of
from kodiai.learning.threshold.types import AdaptiveThresholdResult, CutContext, CutDecision
from kodiai.learning.types import RerankedResult, RetrievalResult, ThresholdMethod
from kodiai.log import get_logger


class LexicalMatches(BaseModel):
    """What the lexical channel adds to one retrieval."""

    model_config = ConfigDict(frozen=True)

    scores: dict[int, float]
    """Score per memory id, for the vector channel's candidates and the lexical hits (absent = 0)."""
    extra: list[RetrievalResult]
    """The lexical hits the vector channel did not return, with their true vector distances."""


class LexicalSearcher(Protocol):
    """A lexical channel (:class:`kodiai.learning.lexical.LexicalChannel`)."""

    def match(
        self,
        query_text: str,
        query_embedding: Sequence[float] | np.ndarray,
        *,
        repo: str,
        limit: int,
        known: Sequence[int],
    ) -> LexicalMatches: ...


class RetrievalQuality(BaseModel):
    """The figures of one retrieval; the first six are the original's ``retrieval_quality`` columns."""

    model_config = ConfigDict(frozen=True)

    result_count: int
    avg_distance: float | None
    language_match_ratio: float | None
    threshold_method: ThresholdMethod
    distance_threshold: float
    top_k: int
    candidate_count: int
    ambiguity_cluster_size: int | None = None
    confidence_high: int | None = None
    confidence_medium: int | None = None
    confidence_low: int | None = None
    channels: str = "vector"
    """The channels that fed the pool: ``vector`` or ``vector+lexical``."""
    lexical_candidates: int | None = None
    """Pool members only the lexical channel found (None when it did not run)."""
    same_pr_memories: int | None = None
    """The PR's own earlier memories found by the re-review scope (None on a first review)."""
    second_stage: str | None = None
    """The learned ranker: ``used`` or ``skipped:<rule>`` (None when it is off or did not run)."""
    abstain_reason: str | None = None
    """Why a stage abstained (or, when the abstain stage ran and kept, its probability); None otherwise."""


class RetrievalOutcome(BaseModel):
    """Everything one retrieval decided, stage by stage."""

    model_config = ConfigDict(frozen=True)

    candidates: list[RetrievalResult]
    """What isolation returned (the pool, nearest first), plus the lexical channel's hits when it ran."""
    reranked: list[RerankedResult]
    """The pool after language rerank and recency weighting, before the cut."""
    results: list[RerankedResult]
    """The final, ordered results."""
    threshold: AdaptiveThresholdResult
    quality: RetrievalQuality
    provenance: Provenance
    confidence: list[ConfidenceLabel] | None = None
    """One label per result (same order) when labels are enabled."""
    ambiguity: AmbiguitySignal | None = None
    lexical: dict[int, float] | None = None
    """The lexical channel's scores per candidate memory id (None when it did not run)."""
    same_pr: list[RerankedResult] | None = None
    """The re-review scope's pool: the PR's own earlier memories after language rerank, before recency,
    nearest first (None on a first review)."""

    def prompt_findings(self) -> list[dict[str, object]]:
        """The final results as the review prompt's retrieval context (behaviour R1 step 32.8), with labels."""
        labels: Sequence[ConfidenceLabel | None] = self.confidence or [None] * len(self.results)
        return [
            {
                "finding_text": r.record.finding_text,
                "severity": r.record.severity,
                "category": r.record.category,
                "file_path": r.record.file_path,
                "outcome": r.record.outcome,
                "distance": r.adjusted_distance,
                "source_repo": r.source_repo,
                "confidence": label,
            }
            for r, label in zip(self.results, labels, strict=True)
        ]


def collapse_outcome_rows(results: Sequence[RetrievalResult]) -> list[RetrievalResult]:
    """One entry per finding: feedback sync stores a finding's 👍/👎 as extra outcome rows with the
    finding's own vector, so without this one finding would fill several slots. The nearest row wins
    (ties: the older row, i.e. the finding's own outcome). Memories without a finding id are kept."""
    seen: set[tuple[str, int]] = set()
    kept: list[RetrievalResult] = []
    for result in results:
        finding = result.record.finding_id
        if finding is not None:
            key = (result.source_repo, finding)
            if key in seen:
                continue
            seen.add(key)
        kept.append(result)
    return kept


def retrieve_context(
    isolation: IsolationLayer,
    query_embedding: Sequence[float] | np.ndarray,
    *,
    repo: str,
    owner: str,
    sharing_enabled: bool,
    pr_languages: Sequence[str],
    top_k: int,
    distance_threshold: float,
    adaptive: bool,
    now: datetime | None = None,
) -> RetrievalOutcome:
    """The original's chain with the original's cut (max-gap), in the keyword form the parity vectors call;
    everything else runs through :func:`retrieve`."""
    return retrieve(
        isolation,
        query_embedding,
        RetrievalQuery(repo=repo, owner=owner, pr_languages=tuple(pr_languages), now=now),
        RetrievalOptions(
            top_k=top_k,
            distance_threshold=distance_threshold,
            adaptive=adaptive,
            sharing_enabled=sharing_enabled,
        ),
    )


def retrieve(
    isolation: IsolationLayer,
    query_embedding: Sequence[float] | np.ndarray,
    query: RetrievalQuery,
    options: RetrievalOptions,
    *,
    lexical: LexicalSearcher | None = None,
) -> RetrievalOutcome:
    """Run the chain once for ``query`` as ``options`` say.

    ``lexical`` (with ``query.text``): the lexical channel, used only by an adaptive cut whose
    ``uses_lexical`` is true; a failure of the channel is logged and the retrieval goes on with the vector
    channel alone.

    ``query.same_pr_review_ids`` (a re-review): the ids of the PR's earlier reviews. Their memories are
    fetched by review id (not only from the vector pool) and, in the default mode ``only``, are the whole
    answer: the ``top_k`` most similar, nothing from other PRs, nothing at all when the PR has none
    (:mod:`kodiai.learning.threshold.same_pr`). None (a first review) leaves the chain exactly as it was.

    ``options.stages``: the learned ranker and/or abstention over the pool after a cut that owns recency
    (``headgap``), with ``query.pr_files`` the PR's changed files; never after ``maxgap`` or a
    non-adaptive cut, nor when the re-review scope answers alone (mode ``only``). None: unchanged.
    """
    repo, pr_languages, now = query.repo, query.pr_languages, query.now
    top_k, distance_threshold, adaptive = options.top_k, options.distance_threshold, options.adaptive
    cut, recency, rerank_config = options.cut, options.recency, options.rerank_config
    same_pr_review_ids, same_pr_mode, stages = query.same_pr_review_ids, options.same_pr_mode, options.stages
    confidence, ambiguity, query_text = options.confidence, options.ambiguity, query.text
    isolated = isolation.retrieve_with_isolation(
        query_embedding=query_embedding,
        repo=repo,
        owner=query.owner,
        sharing_enabled=options.sharing_enabled,
        top_k=top_k,
        distance_threshold=distance_threshold,
        adaptive=adaptive,
    )
    vector_candidates = collapse_outcome_rows(isolated.results)
    pool: list[RetrievalResult] = list(isolated.results)
    scores: dict[int, float] | None = None
    extra = 0
    if lexical is not None and query_text and adaptive and getattr(cut, "uses_lexical", False):
        known = [r.memory_id for r in pool]
        try:
            found = lexical.match(
                query_text, query_embedding, repo=repo, limit=internal_top_k(top_k, adaptive), known=known
            )
        except Exception as exc:  # fail-open: the vector channel alone still answers
            get_logger("kodiai.learning.pipeline").warning(
                "Lexical channel failed; vector channel only", gate="lexical-channel", err=str(exc)
            )
        else:
            seen = set(known)
            added = [r for r in found.extra if r.memory_id not in seen]
            pool = sorted([*pool, *added], key=lambda r: r.distance)
            scores = {r.memory_id: found.scores.get(r.memory_id, 0.0) for r in pool}
            extra = len(added)
    candidates = collapse_outcome_rows(pool)
    reranked: list[RerankedResult] = []
    if candidates:
        reranked = rerank_by_language(candidates, pr_languages, rerank_config)
    if reranked and recency and not getattr(cut, "owns_recency", False):
        reranked = apply_recency_weighting(reranked, now, options.recency_config)
    ctx = CutContext(
        top_k=top_k,
        distance_threshold=distance_threshold,
        adaptive=adaptive,
        adaptive_config=options.adaptive_config,
        now=now,
        recency=recency,
        recency_config=options.recency_config,
        lexical=scores,
    )
    decision = cut(reranked, ctx)
    stage_status: str | None = None
    abstain_reason: str | None = None
    if (
        stages is not None
        and stages.active
        and adaptive
        and getattr(cut, "owns_recency", False)
        and not (same_pr_review_ids is not None and same_pr_mode == "only")
    ):
        decision, staged = apply_stages(
            reranked, decision, ctx, pr_files=query.pr_files, pr_languages=pr_languages, switches=stages
        )
        stage_status, abstain_reason = staged.second_stage, staged.abstain_reason
    own: list[RerankedResult] | None = None
    if same_pr_review_ids is not None:
        own, decision = _same_pr_scope(
            isolation,
            query_embedding,
            pool,
            decision,
            ctx,
            repo=repo,
            review_ids=same_pr_review_ids,
            mode=same_pr_mode,
            pr_languages=pr_languages,
            rerank_config=rerank_config,
        )
    final = decision.results

    labels = confidence_labels([r.distance for r in final], confidence) if confidence is not None else None
    signal = (
        ambiguity_signal([c.distance for c in vector_candidates], top_k, ambiguity)
        if ambiguity is not None
        else None
    )
    counts = label_counts(labels) if labels is not None else None
    quality = RetrievalQuality(
        result_count=len(final),
        avg_distance=sum(r.adjusted_distance for r in final) / len(final) if final else None,
        language_match_ratio=sum(1 for r in final if r.language_match) / len(final) if final else None,
        threshold_method=decision.threshold.method,
        distance_threshold=decision.threshold.threshold,
        top_k=top_k,
        candidate_count=len(candidates),
        ambiguity_cluster_size=signal.cluster_size if signal is not None else None,
        confidence_high=counts["high"] if counts is not None else None,
        confidence_medium=counts["medium"] if counts is not None else None,
        confidence_low=counts["low"] if counts is not None else None,
        channels="vector" if scores is None else "vector+lexical",
        lexical_candidates=None if scores is None else extra,
        same_pr_memories=None if own is None else len(own),
        second_stage=stage_status,
        abstain_reason=abstain_reason,
    )
    return RetrievalOutcome(
        candidates=candidates,
        reranked=reranked,
        results=final,
        threshold=decision.threshold,
        quality=quality,
        provenance=isolated.provenance,
        confidence=labels,
        ambiguity=signal,
        lexical=scores,
        same_pr=own,
    )


def _same_pr_scope(
    isolation: IsolationLayer,
    query_embedding: Sequence[float] | np.ndarray,
    pool: Sequence[RetrievalResult],
    normal: CutDecision,
    ctx: CutContext,
    *,
    repo: str,
    review_ids: frozenset[int],
    mode: SamePrMode,
    pr_languages: Sequence[str],
    rerank_config: RerankConfig | None,
) -> tuple[list[RerankedResult], CutDecision]:
    """The re-review scope over the normal cut's decision: the PR's own earlier memories (fetched by
    review id, plus any already in the pool), language-reranked like the pool, then
    :func:`kodiai.learning.threshold.same_pr.same_pr_decide`."""

    fetched = isolation.retrieve_for_reviews(
        query_embedding=query_embedding,
        repo=repo,
        review_ids=review_ids,
        limit=internal_top_k(ctx.top_k, True),
    )
    seen = {r.memory_id for r in fetched}
    in_pool = [r for r in pool if r.record.review_id in review_ids and r.memory_id not in seen]
    found = collapse_outcome_rows(sorted([*fetched, *in_pool], key=lambda r: r.distance))
    own = rerank_by_language(found, pr_languages, rerank_config) if found else []
    ids, method = same_pr_decide(
        candidates_of(own, ctx), [r.memory_id for r in normal.results], ctx.top_k, mode
    )
    shown = apply_recency_weighting(own, ctx.now, ctx.recency_config) if own and ctx.recency else own
    by_id = {**{r.memory_id: r for r in normal.results}, **{r.memory_id: r for r in shown}}
    kept = [by_id[i] for i in ids]
    return own, CutDecision(results=kept, threshold=threshold_of(kept, method, len(own)))
