"""Run the real retrieval chain over a labelled track, once per query and cut strategy.

The memories go into a real LanceDB store (a temporary directory) with its full-text indexes (the lexical
channel). Queries are processed per repo in time order and, before each query, the findings created
strictly before it are written, so every query sees exactly the memories older than itself
(``created_at <`` the query's). Each query's vector search runs once: a memoising reader hands the same
candidate pool to the chain for every strategy, and the rest of the chain (lexical channel for the cuts
that use it, language rerank, recency, cut, top_k) runs for real per strategy. Alongside, each query's
uncut pool is captured (with and without the lexical channel) so calibration and leave-one-out can
replay a cut without the chain.

The re-review scope (:mod:`kodiai.learning.same_pr`): the data has no reviews, so each PR stands for one
synthetic review whose id is the PR number (:func:`synthetic_review_id`); a finding made on a PR's branch
(track B's ``source.pr``) is stored with that ``review_id``, and a re-review query (every track B query)
passes its own PR's id as ``same_pr_review_ids`` to the strategies that are :class:`SamePrStrategy`.
PR numbers of different repositories never mix: the scope's store query is filtered by repository.
Track A queries are first reviews: no scope, those strategies run as their inner cut.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kodiai.evaluation.calibration import LabelledPool
from kodiai.evaluation.data import EvalDataset, EvalFinding, EvalQuery
from kodiai.evaluation.metrics import QueryJudgement
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.lexical import LexicalChannel
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import LexicalMatches, retrieve
from kodiai.learning.rerank import RerankConfig
from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery
from kodiai.learning.second_stage import PairInput, language_match
from kodiai.learning.stages import StagedCut, StageSwitches
from kodiai.learning.threshold.pool import candidates_of
from kodiai.learning.threshold.same_pr import SamePrStrategy
from kodiai.learning.threshold.types import (
    AdaptiveThresholdResult,
    Candidate,
    CutContext,
    CutDecision,
    NamedCut,
)
from kodiai.learning.types import LearningMemoryRecord, MemoryHit, RerankedResult

NO_RERANK = RerankConfig(same_language_boost=1.0, cross_language_penalty=1.0)
UNKNOWN_SEVERITY = "unknown"


class ChainOptions(BaseModel):
    """How the chain is run for every query."""

    model_config = ConfigDict(frozen=True)

    top_k: int = Field(5, ge=1, le=20)
    distance_threshold: float = 0.3
    language_rerank: bool = True
    recency: bool = True
    lexical: bool = True
    """Give the chain the lexical channel (used by the cuts whose ``uses_lexical`` is set)."""

    def retrieval_options(self, cut: NamedCut, stages: StageSwitches | None) -> RetrievalOptions:
        """The chain's options for one strategy: adaptive, no sharing, the strategy's re-review mode."""
        return RetrievalOptions(
            top_k=self.top_k,
            distance_threshold=self.distance_threshold,
            adaptive=True,
            sharing_enabled=False,
            cut=cut,
            rerank_config=None if self.language_rerank else NO_RERANK,
            recency=self.recency,
            same_pr_mode=cut.mode if isinstance(cut, SamePrStrategy) else "only",
            stages=stages,
        )


class _MemoReader:
    """A store reader that answers a repeated search from memory (one query's searches per instance)."""

    def __init__(self, store: LanceMemoryStore) -> None:
        self._store = store
        self._hits: dict[tuple[str, str, str, int], list[MemoryHit]] = {}
        self._records: dict[tuple[int, ...], dict[int, LearningMemoryRecord]] = {}

    @staticmethod
    def _key(vector: Sequence[float] | np.ndarray) -> str:
        return hashlib.sha1(np.asarray(vector, dtype=np.float32).tobytes()).hexdigest()

    def retrieve_memories(
        self, query_embedding: Sequence[float] | np.ndarray, repo: str, top_k: int
    ) -> list[MemoryHit]:
        key = ("repo", self._key(query_embedding), repo, top_k)
        if key not in self._hits:
            self._hits[key] = self._store.retrieve_memories(query_embedding, repo, top_k)
        return self._hits[key]

    def retrieve_memories_for_owner(
        self, query_embedding: Sequence[float] | np.ndarray, owner: str, exclude_repo: str, top_k: int
    ) -> list[MemoryHit]:
        key = ("owner", self._key(query_embedding), f"{owner}\0{exclude_repo}", top_k)
        if key not in self._hits:
            self._hits[key] = self._store.retrieve_memories_for_owner(
                query_embedding, owner, exclude_repo, top_k
            )
        return self._hits[key]

    def retrieve_review_memories(
        self,
        query_embedding: Sequence[float] | np.ndarray,
        repo: str,
        review_ids: Sequence[int],
        top_k: int,
    ) -> list[MemoryHit]:
        key = ("review", self._key(query_embedding), f"{repo}\0{sorted(review_ids)}", top_k)
        if key not in self._hits:
            self._hits[key] = self._store.retrieve_review_memories(query_embedding, repo, review_ids, top_k)
        return self._hits[key]

    def get_memory_records(self, memory_ids: Sequence[int]) -> dict[int, LearningMemoryRecord]:
        key = tuple(memory_ids)
        if key not in self._records:
            self._records[key] = self._store.get_memory_records(memory_ids)
        return self._records[key]


class _MemoLexical:
    """The lexical channel, answering a repeated match from memory (one query's matches per instance)."""

    def __init__(self, channel: LexicalChannel) -> None:
        self._channel = channel
        self._found: dict[tuple[str, str, int, tuple[int, ...]], LexicalMatches] = {}

    def match(
        self,
        query_text: str,
        query_embedding: Sequence[float] | np.ndarray,
        *,
        repo: str,
        limit: int,
        known: Sequence[int],
    ) -> LexicalMatches:
        key = (query_text, repo, limit, tuple(known))
        if key not in self._found:
            self._found[key] = self._channel.match(
                query_text, query_embedding, repo=repo, limit=limit, known=known
            )
        return self._found[key]


def synthetic_review_id(pr_number: int | None) -> int | None:
    """The review a finding made on PR ``pr_number`` belongs to: one synthetic review per PR, whose id
    is the PR number (None for a finding not made on a PR)."""
    return pr_number


def same_pr_scope(dataset: EvalDataset, query: EvalQuery) -> frozenset[int] | None:
    """The ``same_pr_review_ids`` the review would pass for ``query``: its PR's earlier review on the
    re-review track (every query there re-reviews its PR), None on a first review (track A)."""
    if not dataset.rereview:
        return None
    review = synthetic_review_id(query.pr_number)
    if review is None:
        raise ValueError(f"re-review query {query.id} has no pr_number")
    return frozenset({review})


@dataclass(frozen=True)
class ScopedPool(LabelledPool):
    """A labelled pool plus the re-review scope's pool: the PR's own earlier memories (ascending adjusted
    distance, recency multipliers set; None on a first review)."""

    same_pr: list[Candidate[str]] | None = None
    pairs: list[PairInput] | None = None
    """The stages' view of ``pool(True)`` (files, language matches), in the same order."""
    pr_files: tuple[str, ...] = ()
    """The PR's changed files as the review passes them to the stages."""


def switches_of(cut: NamedCut, default: StageSwitches | None) -> StageSwitches | None:
    """The stages a strategy runs: a :class:`StagedCut`'s (also inside the re-review scope), else
    ``default``."""
    inner = cut.inner if isinstance(cut, SamePrStrategy) else cut
    return inner.switches if isinstance(inner, StagedCut) else default


def memory_record(finding: EvalFinding, index: int, model: str, dimensions: int) -> LearningMemoryRecord:
    """The learned-memory row of a labelled finding (``finding_id`` = its position in the corpus,
    ``review_id`` = the synthetic review of the PR it was made on)."""
    return LearningMemoryRecord(
        repo=finding.repo,
        owner=finding.owner,
        finding_id=index,
        review_id=synthetic_review_id(finding.source.pr if finding.source is not None else None),
        source_repo=finding.repo,
        finding_text=finding.finding_text,
        severity=finding.severity or UNKNOWN_SEVERITY,
        category=finding.category,
        file_path=finding.file_path,
        outcome="accepted",
        embedding_model=model,
        embedding_dim=dimensions,
        created_at=finding.created_at.isoformat(),
    )


class _Capture:
    """A cut that records the pool it is given (before recency) and keeps nothing."""

    owns_recency = True

    def __init__(self, lexical: bool) -> None:
        self.name = "capture+lexical" if lexical else "capture"
        self.uses_lexical = lexical
        self.pool: list[Candidate[int]] = []
        self.reranked: list[RerankedResult] = []
        self.lexical_ran = False

    def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        self.pool = candidates_of(reranked, ctx)
        self.reranked = list(reranked)
        self.lexical_ran = ctx.lexical is not None
        none = AdaptiveThresholdResult(threshold=-1.0, method="topk", candidate_count=len(reranked))
        return CutDecision(results=[], threshold=none)


def run_chain(
    dataset: EvalDataset,
    query_vectors: np.ndarray,
    finding_vectors: np.ndarray,
    strategies: Mapping[str, NamedCut],
    *,
    model: str,
    options: ChainOptions | None = None,
    workdir: str | Path | None = None,
    on_query: Callable[[int, int], None] | None = None,
    stages: StageSwitches | None = None,
) -> tuple[dict[str, list[QueryJudgement]], list[LabelledPool]]:
    """Judgements per strategy name (in query order), and each query's uncut pool (for replays).

    ``query_vectors[i]`` embeds ``dataset.queries[i].query_text``; ``finding_vectors[j]`` embeds
    ``dataset.findings[j].memory_text()``. ``stages``: run the stages after every strategy's cut (the
    query's ``file_paths`` as the PR's files), as the review does with them switched on; the pools are
    captured before them.
    """
    opts = options or ChainOptions()
    if len(query_vectors) != len(dataset.queries) or len(finding_vectors) != len(dataset.findings):
        raise ValueError("one vector per query and per finding is required")
    dims = int(finding_vectors.shape[1]) if len(finding_vectors) else int(query_vectors.shape[1])
    by_repo_findings: dict[str, list[int]] = defaultdict(list)
    for j, finding in enumerate(dataset.findings):
        by_repo_findings[finding.repo].append(j)
    by_repo_queries: dict[str, list[int]] = defaultdict(list)
    for i, query in enumerate(dataset.queries):
        by_repo_queries[query.repo].append(i)

    judgements: dict[str, list[QueryJudgement | None]] = {
        name: [None] * len(dataset.queries) for name in strategies
    }
    pools: list[ScopedPool | None] = [None] * len(dataset.queries)
    needs_scope = any(isinstance(cut, SamePrStrategy) for cut in strategies.values())
    strategy_options = {
        name: opts.retrieval_options(cut, switches_of(cut, stages)) for name, cut in strategies.items()
    }
    file_of = {f.id: f.file_path for f in dataset.findings}
    done = 0
    with tempfile.TemporaryDirectory(prefix="kodiai-eval-", dir=workdir) as tmp:
        store = open_memory_store(str(Path(tmp) / "memory.lance"), dims)
        channel = LexicalChannel(store) if opts.lexical else None
        if channel is not None:
            channel.ensure_index()
        for repo, query_idx in by_repo_queries.items():
            findings = sorted(by_repo_findings.get(repo, []), key=lambda j: dataset.findings[j].created_at)
            written = 0
            for i in sorted(query_idx, key=lambda i: dataset.queries[i].created_at):
                query = dataset.queries[i]
                batch: list[int] = []
                while (
                    written < len(findings)
                    and dataset.findings[findings[written]].created_at < query.created_at
                ):
                    batch.append(findings[written])
                    written += 1
                if batch:
                    store.write_memories(
                        [memory_record(dataset.findings[j], j, model, dims) for j in batch],
                        finding_vectors[batch],
                    )
                isolation = IsolationLayer(_MemoReader(store))
                lexical = _MemoLexical(channel) if channel is not None else None
                grades = query.grades()
                relevant = frozenset(query.relevant_ids)
                scope = same_pr_scope(dataset, query) if needs_scope else None
                own: list[Candidate[str]] | None = None
                captures = [_Capture(lexical=False)]
                if channel is not None:
                    captures.append(_Capture(lexical=True))
                cuts: list[tuple[str | None, NamedCut]] = [
                    *strategies.items(),
                    *((None, c) for c in captures),
                ]
                for name, cut in cuts:
                    scoped = scope is not None and isinstance(cut, SamePrStrategy)
                    outcome = retrieve(
                        isolation,
                        query_vectors[i],
                        RetrievalQuery(
                            repo=query.repo,
                            owner=query.owner,
                            pr_languages=query.languages,
                            now=query.created_at,
                            text=query.query_text,
                            same_pr_review_ids=scope if scoped else None,
                            pr_files=query.file_paths,
                        ),
                        strategy_options[name] if name is not None else opts.retrieval_options(cut, None),
                        lexical=lexical,
                    )
                    if scoped and own is None and outcome.same_pr is not None:
                        ctx = CutContext(
                            top_k=opts.top_k,
                            distance_threshold=opts.distance_threshold,
                            adaptive=True,
                            now=query.created_at,
                            recency=opts.recency,
                        )
                        own = [
                            Candidate(_finding_id(dataset, r), c.distance, c.multiplier, c.lexical)
                            for r, c in zip(outcome.same_pr, candidates_of(outcome.same_pr, ctx), strict=True)
                        ]
                    if name is None:
                        continue
                    judgements[name][i] = QueryJudgement(
                        query_id=query.id,
                        kept=[_finding_id(dataset, r) for r in outcome.results],
                        relevant=relevant,
                        graded=grades,
                        method=outcome.quality.threshold_method,
                        repo=query.repo,
                    )
                vector = _labelled(dataset, captures[0])
                fused = (
                    _labelled(dataset, captures[1]) if len(captures) > 1 and captures[1].lexical_ran else None
                )
                pools[i] = ScopedPool(
                    query_id=query.id,
                    repo=query.repo,
                    relevant=relevant,
                    graded=grades,
                    vector=vector,
                    fused=fused,
                    recency=opts.recency,
                    same_pr=own if scope is not None else None,
                    pairs=[
                        PairInput(
                            c.distance,
                            c.multiplier,
                            c.lexical,
                            file_of[c.id],
                            language_match(file_of[c.id], query.languages),
                        )
                        for c in (fused if fused is not None else vector)
                    ],
                    pr_files=tuple(query.file_paths),
                )
                done += 1
                if on_query is not None:
                    on_query(done, len(dataset.queries))
    return (
        {name: [j for j in js if j is not None] for name, js in judgements.items()},
        [p for p in pools if p is not None],
    )


def _labelled(dataset: EvalDataset, capture: _Capture) -> list[Candidate[str]]:
    """The captured pool with corpus ids in place of memory ids."""
    return [
        Candidate(_finding_id(dataset, r), c.distance, c.multiplier, c.lexical)
        for r, c in zip(capture.reranked, capture.pool, strict=True)
    ]


def _finding_id(dataset: EvalDataset, result: RerankedResult) -> str:
    index = result.record.finding_id
    if index is None or not 0 <= index < len(dataset.findings):
        raise ValueError(f"memory {result.memory_id} does not map back to a corpus finding")
    return dataset.findings[index].id
