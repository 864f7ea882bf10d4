"""Retrieval from learned memory (behaviour R1 step 32): the query, its embedding, the isolated and
re-ranked candidates (with the lexical channel's hits when the cut uses it), the embedder's calibrated cut
and the confidence and ambiguity signals, and (a port addition) how the team reacted to each result, so
the prompt never offers a rejected finding as precedent."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kodiai.config import RepoConfig
from kodiai.handler_kit.deps import LearnedMemory
from kodiai.learning.pipeline import RetrievalOutcome, retrieve
from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from kodiai.log import Logger
from kodiai.review.diff_analysis import DiffAnalysis
from kodiai.review.pr_intent import ParsedPRIntent
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.sources import FeedbackLookup, GatherSources
from kodiai.storage.feedback_tally import FeedbackTally

TOP_FILE_PATHS = 15


RetrievalStatus = Literal["used", "disabled", "no-store", "no-embedding", "failed"]


class RetrievalStep(BaseModel):
    """What step 32 did: the outcome when it ran, else why it did not."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    status: RetrievalStatus
    query: str | None = None
    outcome: RetrievalOutcome | None = None
    detail: str | None = None
    feedback: list[FeedbackTally | None] | None = None
    """The team's reactions to each final result (same order); None when no result has a finding."""

    def feedback_counts(self) -> dict[str, int]:
        """``retrieval_quality``'s feedback columns: results with any 👍, any 👎, and net-negative ones."""
        tallies = [t for t in self.feedback or [] if t is not None]
        return {
            "feedback_positive": sum(1 for t in tallies if t.thumbs_up),
            "feedback_negative": sum(1 for t in tallies if t.thumbs_down),
            "feedback_rejected": sum(1 for t in tallies if t.rejected),
        }


def result_feedback(
    outcome: RetrievalOutcome, lookup: FeedbackLookup | None, memory: LearnedMemory
) -> list[FeedbackTally | None]:
    """Each final result's feedback: the kept reactions' tally, or (no knowledge store) one vote per
    👍/👎 outcome row the memory holds for the finding."""
    keys = [
        (r.source_repo, r.record.finding_id) if r.record.finding_id is not None else None
        for r in outcome.results
    ]
    if lookup is not None:
        tallies = lookup([k for k in keys if k is not None])
        return [tallies.get(k) if k is not None else None for k in keys]
    out: list[FeedbackTally | None] = []
    for key in keys:
        if key is None:
            out.append(None)
            continue
        tally = FeedbackTally(
            thumbs_up=int(memory.store.has_memory(*key, "thumbs_up")),
            thumbs_down=int(memory.store.has_memory(*key, "thumbs_down")),
        )
        out.append(None if tally.empty else tally)
    return out


def re_review_scope(cut_name: str, sources: GatherSources, log: Logger) -> frozenset[int] | None:
    """On a re-review the PR's own earlier findings are the precedent (a port addition; see
    docs/retrieval-quality.md): the ids of its earlier reviews, or None for a first review. The original's
    ``maxgap`` path keeps its behaviour. A failed read is a first review (fail-open)."""
    if cut_name == "maxgap" or sources.re_review_scope is None:
        return None
    try:
        return sources.re_review_scope()
    except Exception as exc:
        log.warning("Re-review scope read failed (fail-open)", gate="retrieval-same-pr", err=str(exc))
        return None


async def gather_retrieval(
    facts: PullRequestFacts,
    config: RepoConfig,
    analysis: DiffAnalysis,
    intent: ParsedPRIntent,
    author_tier: str,
    review_files: Sequence[str],
    sources: GatherSources,
    log: Logger,
) -> RetrievalStep:
    """Step 32 (fail-open): query → embed → isolation [+ lexical channel] → rerank → recency → calibrated
    cut → labels. The lexical channel (``memory.lexical``, BM25 over the query text) runs only for a cut
    that uses it; when it fails the vector channel alone answers (logged by the chain)."""
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
    options = RetrievalOptions.from_config(
        settings, sharing_enabled=config.knowledge.sharing.enabled, embedding_model=memory.embeddings.model
    )

    def run() -> RetrievalOutcome:
        # In a worker thread: the lexical channel may build its full-text indexes (first use) and fold new
        # rows into them (``table.optimize()``, first read after writes), both blocking LanceDB calls.
        return retrieve(
            memory.isolation,
            vector,
            RetrievalQuery(
                repo=facts.full_name,
                owner=facts.owner,
                pr_languages=list(analysis.files_by_language),
                now=sources.now,
                text=query,
                same_pr_review_ids=re_review_scope(options.cut_name, sources, log),
                pr_files=list(review_files[:TOP_FILE_PATHS]),
            ),
            options,
            lexical=memory.lexical,
        )

    outcome = await asyncio.to_thread(run)
    try:
        feedback: list[FeedbackTally | None] | None = await asyncio.to_thread(
            result_feedback, outcome, sources.feedback, memory
        )
    except Exception as exc:  # the original shows results without feedback; so does a failed read
        log.warning("Retrieval feedback read failed (fail-open)", gate="retrieval-feedback", err=str(exc))
        feedback = None
    log.info(
        "Retrieval completed",
        gate="adaptive-threshold",
        thresholdMethod=outcome.threshold.method,
        threshold=outcome.threshold.threshold,
        channels=outcome.quality.channels,
        candidates=outcome.quality.candidate_count,
        lexicalCandidates=outcome.quality.lexical_candidates,
        samePrMemories=outcome.quality.same_pr_memories,
        secondStage=outcome.quality.second_stage,
        abstainReason=outcome.quality.abstain_reason,
        results=outcome.quality.result_count,
        rejected=sum(1 for t in feedback or [] if t is not None and t.rejected),
    )
    return RetrievalStep(status="used", query=query, outcome=outcome, feedback=feedback)
