"""Abstention: a per-query decision that no memory in the pool is relevant (pure; no I/O).

The cut decides *how many* memories to keep and always keeps the best one; nothing in it can say "none".
This module reads the first stage's pool before truncation and scores how much evidence its head carries:

- ``head_distance``: the best adjusted distance (absolute evidence of the vector channel);
- ``head_prominence``: how far the best stands below the pool's median distance (relative evidence);
- ``head_lexical``: ``log(1 + best BM25)`` (absolute evidence of the lexical channel; 0 when it did not
  run or matched nothing);
- ``agreement``: the overlap of the two channels' top 5 (Jaccard; 0 without the lexical channel);
- ``lexical_prominence``: how far the best BM25 stands above the pool's median BM25, as a share of the
  best (the lexical channel's relative evidence; 0 when it matched nothing);
- ``file_evidence``: the best path evidence any candidate has against the PR's changed files (its file is
  changed: 1; same directory: 0.5 + half its segment overlap; else half its segment overlap).

None of them is true by construction: each is a number measured on the pool, and the decision
(:class:`AbstainModel`: a logistic regression over them, fitted leave-one-repository-out by
``kodiai eval stages``, and a probability threshold) abstains only when the probability that the pool
holds a relevant memory falls below the threshold. The evaluation reports its firing rate on queries
with and without relevant memories; a property test checks it fires on some but not all real and
synthetic pools and moves monotonically with each signal.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kodiai.learning.logistic import LogisticModel
from kodiai.learning.second_stage import PairInput, PrFiles, file_evidence

SIGNALS: tuple[str, ...] = (
    "head_distance",
    "head_prominence",
    "head_lexical",
    "agreement",
    "lexical_prominence",
    "file_evidence",
)
HEAD = 5


def pool_signals(pool: Sequence[PairInput], pr_files: Sequence[str] | PrFiles) -> np.ndarray:
    """The :data:`SIGNALS` of one pool (all zeros, distance 2, for an empty pool)."""
    pr = pr_files if isinstance(pr_files, PrFiles) else PrFiles.of(pr_files)
    if not pool:
        return np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    d = [c.distance for c in pool]
    d1 = min(d)
    median = statistics.median(d)
    prominence = (median - d1) / median if median > 1e-12 else 0.0
    best_lexical = max(c.lexical for c in pool)
    by_vector = sorted(range(len(pool)), key=lambda i: (d[i], i))[:HEAD]
    matched = [i for i in range(len(pool)) if pool[i].lexical > 0]
    by_lexical = sorted(matched, key=lambda i: (-pool[i].lexical, i))[:HEAD]
    union = set(by_vector) | set(by_lexical)
    agreement = len(set(by_vector) & set(by_lexical)) / len(union) if by_lexical else 0.0
    evidence = 0.0
    for c in pool:
        same_file, same_dir, overlap, _ = file_evidence(c.file_path, pr)
        evidence = max(evidence, 1.0 if same_file else (0.5 + overlap / 2 if same_dir else overlap / 2))
    return np.array(
        [
            d1,
            prominence,
            math.log1p(max(best_lexical, 0.0)),
            agreement,
            (best_lexical - statistics.median(c.lexical for c in pool)) / best_lexical
            if best_lexical > 0
            else 0.0,
            evidence,
        ]
    )


class AbstainModel(LogisticModel):
    """A logistic regression over :data:`SIGNALS` giving P(the pool holds a relevant memory); abstain below
    ``threshold``."""

    signals: tuple[str, ...] = SIGNALS

    def probability(self, signals: np.ndarray) -> float:
        if tuple(self.signals) != SIGNALS:
            raise ValueError("the abstain model was trained on other signals; retrain it")
        return float(self.predict(signals))

    def weakest(self, signals: np.ndarray) -> str:
        """The signal that pulls the probability down the most (the reason written to telemetry)."""
        contributions = self.standardised(signals) * np.asarray(self.weights)
        return SIGNALS[int(np.argmin(contributions))]


@dataclass(frozen=True)
class AbstainDecision:
    abstain: bool
    probability: float
    reason: str
    """``p=0.12<0.30 weakest=file_evidence`` when abstaining, else ``p=0.80``."""


def decide(
    pool: Sequence[PairInput], pr_files: Sequence[str] | PrFiles, model: AbstainModel
) -> AbstainDecision:
    """Abstain or not, with the probability and the reason."""
    signals = pool_signals(pool, pr_files)
    p = model.probability(signals)
    if not pool:
        return AbstainDecision(True, p, "empty-pool")
    if p < model.threshold:
        return AbstainDecision(True, p, f"p={p:.2f}<{model.threshold:.2f} weakest={model.weakest(signals)}")
    return AbstainDecision(False, p, f"p={p:.2f}")
