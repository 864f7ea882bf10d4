"""Retrieval from learned memory (spec/review.md §1 step 32): the query, its embedding, the isolated and
re-ranked candidates, the embedder's calibrated cut and the confidence and ambiguity signals."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.config import RepoConfig
from kodiai.handlers.review.sources import GatherSources
from kodiai.learning.calibration import resolve_cut
from kodiai.learning.pipeline import RetrievalOutcome, retrieve_context, signal_configs
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from kodiai.review.diff_analysis import DiffAnalysis
from kodiai.review.pr_intent import ParsedPRIntent
from kodiai.review.pull_request import PullRequestFacts

TOP_FILE_PATHS = 15


RetrievalStatus = Literal["used", "disabled", "no-store", "no-embedding", "failed"]


class RetrievalStep(BaseModel):
    """What step 32 did: the outcome when it ran, else why it did not."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    status: RetrievalStatus
    query: str | None = None
    outcome: RetrievalOutcome | None = None
    detail: str | None = None


async def gather_retrieval(
    facts: PullRequestFacts,
    config: RepoConfig,
    analysis: DiffAnalysis,
    intent: ParsedPRIntent,
    author_tier: str,
    review_files: Sequence[str],
    sources: GatherSources,
    log: Any,
) -> RetrievalStep:
    """Step 32 (fail-open): query → embed → isolation → rerank → recency → calibrated cut → labels."""
    settings = config.knowledge.retrieval
    if not settings.enabled:
        return RetrievalStep(status="disabled", detail="knowledge.retrieval.enabled is false")
    memory = sources.memory
    if memory is None:
        return RetrievalStep(status="no-store", detail="no learned-memory store")
    query = build_retrieval_query(
        RetrievalQuerySignals(
            pr_title=facts.title,
            pr_body=facts.body,
            conventional_type=intent.conventional_type.type if intent.conventional_type else None,
            detected_languages=list(analysis.files_by_language),
            risk_signals=analysis.risk_signals,
            author_tier=author_tier,
            top_file_paths=list(review_files[:TOP_FILE_PATHS]),
        )
    )
    vector = await asyncio.to_thread(memory.embeddings.generate, query, "query")
    if vector is None:
        return RetrievalStep(status="no-embedding", query=query)
    confidence, ambiguity = signal_configs(settings.confidence_labels, settings.ambiguity_signal)

    def run() -> RetrievalOutcome:
        return retrieve_context(
            memory.isolation,
            vector,
            repo=facts.full_name,
            owner=facts.owner,
            sharing_enabled=config.knowledge.sharing.enabled,
            pr_languages=list(analysis.files_by_language),
            top_k=int(settings.top_k),
            distance_threshold=settings.distance_threshold,
            adaptive=settings.adaptive,
            now=sources.now,
            cut=resolve_cut(memory.embeddings.model, settings.cut_strategy, settings.calibration),
            confidence=confidence,
            ambiguity=ambiguity,
        )

    outcome = await asyncio.to_thread(run)
    log.info(
        "Retrieval completed",
        gate="adaptive-threshold",
        thresholdMethod=outcome.threshold.method,
        threshold=outcome.threshold.threshold,
        candidates=outcome.quality.candidate_count,
        results=outcome.quality.result_count,
    )
    return RetrievalStep(status="used", query=query, outcome=outcome)
