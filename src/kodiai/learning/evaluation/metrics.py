"""Retrieval-quality metrics over labelled queries (pure; no I/O).

Per query ``q`` with kept list ``K`` (the final, ordered results, at most ``top_k``), relevant set ``R``
(grade 2, ``relevant_ids``) and graded labels ``g`` (id → 1 or 2):

- ``precision``: macro mean of ``|K ∩ R| / |K|`` over the queries whose kept set is non-empty (all
  queries, with or without relevant history: a memory shown on a PR with no relevant history counts 0).
  None when no query kept anything.
- ``recall@5``: macro mean of ``|K[:5] ∩ R| / min(|R|, 5)`` over the queries with relevant history
  (``R`` non-empty); an empty kept set counts 0. Normalised by ``min(|R|, 5)`` so a perfect top 5 scores 1.
- ``f1`` / ``f0_5``: macro mean over the queries with relevant history of the per-query F-beta
  ``(1+β²)·P·R / (β²·P + R)`` with ``P = |K ∩ R| / |K|`` (0 for an empty kept set) and ``R`` the query's
  recall@5; 0 when both are 0. F0.5 weighs precision more than recall: a wrong memory in the prompt
  costs more than a missed one. (Queries without relevant history are judged by ``abstain`` instead.)
- ``ndcg@5``: macro mean over the queries with relevant history of ``DCG/IDCG`` with gain = grade and
  discount ``1/log2(rank+1)`` (rank from 1); IDCG sorts all graded labels of the query; empty kept → 0.
- ``kept_per_query``: mean ``|K|`` over all queries.
- ``empty``: share of the queries with relevant history whose kept set is empty.
- ``abstain``: share of the queries without relevant history whose kept set is empty (None if there are none).
- ``methods``: share of all queries per ``threshold_method``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

CUTOFF = 5


class QueryJudgement(BaseModel):
    """What one strategy kept for one query, with that query's labels."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    kept: list[str]
    relevant: frozenset[str]
    graded: dict[str, int]
    method: str


class StrategyMetrics(BaseModel):
    """The aggregate figures of one strategy over one track (definitions in the module docstring)."""

    model_config = ConfigDict(frozen=True)

    queries: int
    with_relevant: int
    without_relevant: int
    precision: float | None
    recall_at_5: float
    f1: float
    f0_5: float
    ndcg_at_5: float
    kept_per_query: float
    empty: float | None
    abstain: float | None
    methods: dict[str, float]


def query_precision(kept: Sequence[str], relevant: frozenset[str]) -> float | None:
    """``|K ∩ R| / |K|``; None for an empty kept set (it does not enter the precision mean)."""
    if not kept:
        return None
    return sum(1 for k in kept if k in relevant) / len(kept)


def query_recall(kept: Sequence[str], relevant: frozenset[str], cutoff: int = CUTOFF) -> float | None:
    """``|K[:cutoff] ∩ R| / min(|R|, cutoff)``; None without relevant history."""
    if not relevant:
        return None
    return sum(1 for k in kept[:cutoff] if k in relevant) / min(len(relevant), cutoff)


def query_ndcg(kept: Sequence[str], graded: Mapping[str, int], cutoff: int = CUTOFF) -> float | None:
    """``DCG@cutoff / IDCG@cutoff`` with gain = grade; None when nothing is graded."""
    ideal = sorted((g for g in graded.values() if g > 0), reverse=True)[:cutoff]
    if not ideal:
        return None
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    dcg = sum(graded.get(k, 0) / math.log2(i + 2) for i, k in enumerate(kept[:cutoff]))
    return dcg / idcg


def f_beta(precision: float, recall: float, beta: float) -> float:
    """``(1+β²)PR / (β²P + R)``; 0 when ``P = R = 0``."""
    b2 = beta * beta
    denom = b2 * precision + recall
    return 0.0 if denom == 0 else (1 + b2) * precision * recall / denom


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(judgements: Sequence[QueryJudgement]) -> StrategyMetrics:
    """The figures of one strategy over a set of queries."""
    positives = [j for j in judgements if j.relevant]
    negatives = [j for j in judgements if not j.relevant]
    precisions = [p for j in judgements if (p := query_precision(j.kept, j.relevant)) is not None]
    recalls = [query_recall(j.kept, j.relevant) or 0.0 for j in positives]
    f1s = [
        f_beta(query_precision(j.kept, j.relevant) or 0.0, r, 1.0)
        for j, r in zip(positives, recalls, strict=True)
    ]
    f05s = [
        f_beta(query_precision(j.kept, j.relevant) or 0.0, r, 0.5)
        for j, r in zip(positives, recalls, strict=True)
    ]
    ndcgs = [query_ndcg(j.kept, j.graded) or 0.0 for j in positives]
    precision = _mean(precisions)
    recall = _mean(recalls) or 0.0
    methods = Counter(j.method for j in judgements)
    total = len(judgements)
    return StrategyMetrics(
        queries=total,
        with_relevant=len(positives),
        without_relevant=len(negatives),
        precision=precision,
        recall_at_5=recall,
        f1=_mean(f1s) or 0.0,
        f0_5=_mean(f05s) or 0.0,
        ndcg_at_5=_mean(ndcgs) or 0.0,
        kept_per_query=(sum(len(j.kept) for j in judgements) / total) if total else 0.0,
        empty=_mean([0.0 if j.kept else 1.0 for j in positives]),
        abstain=_mean([0.0 if j.kept else 1.0 for j in negatives]),
        methods={m: c / total for m, c in sorted(methods.items())},
    )
