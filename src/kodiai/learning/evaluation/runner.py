"""Run the real retrieval chain over a labelled track, once per query and cut strategy.

The memories go into a real LanceDB store (a temporary directory). Queries are processed per repo in
time order and, before each query, the findings created strictly before it are written, so every
query sees exactly the memories older than itself (``created_at <`` the query's). Each query's vector
search runs once: a memoising reader hands the same candidate pool to the chain for every strategy,
and the rest of the chain (language rerank, recency, cut, top_k) runs for real per strategy.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kodiai.learning.calibration import LabelledPool
from kodiai.learning.cut_strategy import NamedCut
from kodiai.learning.evaluation.data import EvalDataset, EvalFinding
from kodiai.learning.evaluation.metrics import QueryJudgement
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import retrieve_context
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.rerank import RerankConfig
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


class _MemoReader:
    """A store reader that answers a repeated search from memory (one query's searches per instance)."""

    def __init__(self, store: LanceMemoryStore) -> None:
        self._store = store
        self._hits: dict[tuple[str, str, str, int], list[MemoryHit]] = {}

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

    def get_memory_records(self, memory_ids: Sequence[int]) -> dict[int, LearningMemoryRecord]:
        return self._store.get_memory_records(memory_ids)


def memory_record(finding: EvalFinding, index: int, model: str, dimensions: int) -> LearningMemoryRecord:
    """The learned-memory row of a labelled finding (``finding_id`` = its position in the corpus)."""
    return LearningMemoryRecord(
        repo=finding.repo,
        owner=finding.owner,
        finding_id=index,
        review_id=None,
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
) -> tuple[dict[str, list[QueryJudgement]], list[LabelledPool]]:
    """Judgements per strategy name (in query order), and each query's uncut pool for calibration
    (taken from the first strategy that owns recency, or from any when recency is off; else none).

    ``query_vectors[i]`` embeds ``dataset.queries[i].query_text``; ``finding_vectors[j]`` embeds
    ``dataset.findings[j].memory_text()``.
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
    pools: list[LabelledPool | None] = [None] * len(dataset.queries)
    done = 0
    with tempfile.TemporaryDirectory(prefix="kodiai-eval-", dir=workdir) as tmp:
        store = open_memory_store(str(Path(tmp) / "memory.lance"), dims)
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
                grades = query.grades()
                relevant = frozenset(query.relevant_ids)
                for name, cut in strategies.items():
                    outcome = retrieve_context(
                        isolation,
                        query_vectors[i],
                        repo=query.repo,
                        owner=query.owner,
                        sharing_enabled=False,
                        pr_languages=query.languages,
                        top_k=opts.top_k,
                        distance_threshold=opts.distance_threshold,
                        adaptive=True,
                        now=query.created_at,
                        rerank_config=None if opts.language_rerank else NO_RERANK,
                        cut=cut,
                        recency=opts.recency,
                    )
                    kept = [_finding_id(dataset, r) for r in outcome.results]
                    judgements[name][i] = QueryJudgement(
                        query_id=query.id,
                        kept=kept,
                        relevant=relevant,
                        graded=grades,
                        method=outcome.quality.threshold_method,
                    )
                    # The pool a recency-owning strategy saw is the reranked list without recency.
                    if pools[i] is None and (cut.owns_recency or not opts.recency):
                        pools[i] = _labelled_pool(
                            dataset, query.id, relevant, grades, outcome.reranked, query.created_at
                        )
                done += 1
                if on_query is not None:
                    on_query(done, len(dataset.queries))
    return (
        {name: [j for j in js if j is not None] for name, js in judgements.items()},
        [p for p in pools if p is not None],
    )


def _labelled_pool(
    dataset: EvalDataset,
    query_id: str,
    relevant: frozenset[str],
    graded: dict[str, int],
    reranked: list[RerankedResult],
    now: datetime,
) -> LabelledPool:
    weighted = apply_recency_weighting(reranked, now)
    return LabelledPool(
        query_id=query_id,
        relevant=relevant,
        graded=graded,
        plain=[(_finding_id(dataset, r), r.adjusted_distance) for r in reranked],
        weighted=[(_finding_id(dataset, r), r.adjusted_distance) for r in weighted],
    )


def _finding_id(dataset: EvalDataset, result: RerankedResult) -> str:
    index = result.record.finding_id
    if index is None or not 0 <= index < len(dataset.findings):
        raise ValueError(f"memory {result.memory_id} does not map back to a corpus finding")
    return dataset.findings[index].id
