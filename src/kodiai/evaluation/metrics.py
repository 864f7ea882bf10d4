"""Retrieval-quality metrics over labelled queries (pure; no I/O). One definition, applied to every strategy.

Per query ``q`` with kept list ``K`` (the final, ordered results, at most ``top_k``), relevant set ``R``
(grade 2, ``relevant_ids``) and graded labels ``g`` (id → 1 or 2). *Positives* are the queries with
relevant history (``R`` non-empty), *negatives* the others.

- ``precision``: macro mean over the positives of ``|K ∩ R| / |K|``, where an empty ``K`` counts **0**.
  Every strategy is averaged over the same queries, so one that answers only when it is sure cannot
  raise its precision by keeping nothing; the negatives are judged by ``abstain`` instead.
- ``recall@5``: macro mean over the positives of ``|K[:5] ∩ R| / min(|R|, 5)``; an empty ``K`` counts 0.
- ``f1`` / ``f0_5``: macro mean over the positives of the per-query F-beta
  ``(1+β²)·P·R / (β²·P + R)`` of that query's precision and recall@5 (0 when both are 0). F0.5 weighs
  precision more than recall: a wrong memory in the prompt costs more than a missed one.
- ``ndcg@5``: macro mean over the positives of ``DCG/IDCG`` with gain = grade and discount
  ``1/log2(rank+1)``; IDCG sorts all graded labels of the query; empty ``K`` → 0.
- ``kept_per_query``: mean ``|K|`` over all queries.
- ``empty``: share of the positives whose ``K`` is empty.
- ``abstain``: share of the negatives whose ``K`` is empty (None when there are none).
- ``methods``: share of all queries per ``threshold_method``.

:func:`bootstrap` gives percentile intervals by resampling queries within each repository, positives and
negatives apart (the data draws a fixed number of each per repository).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from kodiai.evaluation.defaults import BOOTSTRAP_REPS

CUTOFF = 5
INTERVAL_METRICS = ("f0_5", "precision", "recall_at_5", "empty", "abstain")


class QueryJudgement(BaseModel):
    """What one strategy kept for one query, with that query's labels."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    kept: list[str]
    relevant: frozenset[str]
    graded: dict[str, int]
    method: str
    repo: str = ""


class StrategyMetrics(BaseModel):
    """The aggregate figures of one strategy over one set of queries (definitions in the module docstring)."""

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
    ci: dict[str, tuple[float, float]] | None = None
    """95% bootstrap intervals of :data:`INTERVAL_METRICS` (None when not computed)."""


def query_precision(kept: Sequence[str], relevant: frozenset[str]) -> float:
    """``|K ∩ R| / |K|``; 0 for an empty kept set."""
    if not kept:
        return 0.0
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


def query_scores(kept: Sequence[str], relevant: frozenset[str]) -> tuple[float, float, float]:
    """``(precision, recall@5, F0.5)`` of one positive query."""
    p = query_precision(kept, relevant)
    r = query_recall(kept, relevant) or 0.0
    return p, r, f_beta(p, r, 0.5)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(judgements: Sequence[QueryJudgement]) -> StrategyMetrics:
    """The figures of one strategy over a set of queries."""
    positives = [j for j in judgements if j.relevant]
    negatives = [j for j in judgements if not j.relevant]
    precisions = [query_precision(j.kept, j.relevant) for j in positives]
    recalls = [query_recall(j.kept, j.relevant) or 0.0 for j in positives]
    f1s = [f_beta(p, r, 1.0) for p, r in zip(precisions, recalls, strict=True)]
    f05s = [f_beta(p, r, 0.5) for p, r in zip(precisions, recalls, strict=True)]
    ndcgs = [query_ndcg(j.kept, j.graded) or 0.0 for j in positives]
    methods = Counter(j.method for j in judgements)
    total = len(judgements)
    return StrategyMetrics(
        queries=total,
        with_relevant=len(positives),
        without_relevant=len(negatives),
        precision=_mean(precisions),
        recall_at_5=_mean(recalls) or 0.0,
        f1=_mean(f1s) or 0.0,
        f0_5=_mean(f05s) or 0.0,
        ndcg_at_5=_mean(ndcgs) or 0.0,
        kept_per_query=(sum(len(j.kept) for j in judgements) / total) if total else 0.0,
        empty=_mean([0.0 if j.kept else 1.0 for j in positives]),
        abstain=_mean([0.0 if j.kept else 1.0 for j in negatives]),
        methods={m: c / total for m, c in sorted(methods.items())},
    )


def bootstrap(
    judgements: Sequence[QueryJudgement],
    *,
    reps: int = BOOTSTRAP_REPS,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Percentile intervals of F0.5, precision, recall@5, empty (positives) and abstain (negatives).

    Each replicate resamples, with replacement, the positives and the negatives of every repository
    (``QueryJudgement.repo``) separately, keeping their counts. Seeded, so a report is reproducible.
    """
    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, bool], list[tuple[float, float, float, float]]] = defaultdict(list)
    for j in judgements:
        if j.relevant:
            p, r, f = query_scores(j.kept, j.relevant)
            strata[(j.repo, True)].append((f, p, r, 0.0 if j.kept else 1.0))
        else:
            strata[(j.repo, False)].append((0.0, 0.0, 0.0, 0.0 if j.kept else 1.0))
    pos_sum, neg_sum = np.zeros((reps, 4)), np.zeros(reps)
    n_pos = n_neg = 0
    for (_, positive), rows in sorted(strata.items()):
        values = np.asarray(rows, dtype=np.float64)
        picks = rng.integers(0, len(rows), size=(reps, len(rows)))
        if positive:
            pos_sum += values[picks].sum(axis=1)
            n_pos += len(rows)
        else:
            neg_sum += values[picks, 3].sum(axis=1)
            n_neg += len(rows)
    tail = (1 - level) / 2 * 100
    out: dict[str, tuple[float, float]] = {}

    def interval(samples: np.ndarray) -> tuple[float, float]:
        lo, hi = np.percentile(samples, [tail, 100 - tail])
        return float(lo), float(hi)

    if n_pos:
        means = pos_sum / n_pos
        for k, name in enumerate(("f0_5", "precision", "recall_at_5", "empty")):
            out[name] = interval(means[:, k])
    if n_neg:
        out["abstain"] = interval(neg_sum / n_neg)
    return out


def with_intervals(judgements: Sequence[QueryJudgement], *, reps: int = BOOTSTRAP_REPS) -> StrategyMetrics:
    """:func:`aggregate` plus :func:`bootstrap` intervals."""
    metrics = aggregate(judgements)
    return metrics.model_copy(update={"ci": bootstrap(judgements, reps=reps)}) if reps > 0 else metrics
