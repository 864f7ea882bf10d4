"""The two inputs of one retrieval besides the store and the query vector, as typed values.

:class:`RetrievalOptions` is how the chain runs for a repository — the ``knowledge.retrieval`` keys of
``.kodiai.yml`` resolved once (the embedder's calibrated cut, the signals, the stages) — and
:class:`RetrievalQuery` is what one pull request asks (its repository, languages, files, earlier reviews).
The review handler, ``kodiai memory search`` and the offline evaluation all build these and call
:func:`kodiai.learning.pipeline.retrieve`, so each setting is read in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from kodiai.config.models import RetrievalConfig
from kodiai.learning.ambiguity import AmbiguityConfig
from kodiai.learning.confidence import ConfidenceConfig
from kodiai.learning.recency import RecencyConfig
from kodiai.learning.rerank import RerankConfig
from kodiai.learning.stages import StageSwitches
from kodiai.learning.threshold.max_gap import max_gap_cut
from kodiai.learning.threshold.profiles import resolve_cut
from kodiai.learning.threshold.same_pr import DEFAULT_SAME_PR_MODE, SamePrMode
from kodiai.learning.threshold.types import AdaptiveThresholdConfig, CutStrategy


def signal_configs(
    confidence_labels: bool | None, ambiguity_signal: bool | None
) -> tuple[ConfidenceConfig | None, AmbiguityConfig | None]:
    """``knowledge.retrieval.confidenceLabels`` (unset = on) and ``ambiguitySignal`` (unset = off) as the
    ``confidence``/``ambiguity`` options."""
    return (
        ConfidenceConfig() if confidence_labels is not False else None,
        AmbiguityConfig() if ambiguity_signal else None,
    )


@dataclass(frozen=True)
class RetrievalOptions:
    """How the chain runs, the same for every query of one repository (and of one evaluation run).

    ``cut``: the strategy (default: the original's max-gap); a cut whose ``owns_recency`` attribute is true
    receives the list before recency and weights it itself. ``confidence``/``ambiguity`` switch those
    signals on (None = off). ``stages`` (:mod:`kodiai.learning.stages`): the learned ranker and/or
    abstention after a cut that owns recency (``headgap``); None = off. ``same_pr_mode``: how the
    re-review scope combines with the cut (:mod:`kodiai.learning.threshold.same_pr`). ``recency=False``
    skips recency weighting (evaluation only; the original always applies it)."""

    top_k: int
    distance_threshold: float
    adaptive: bool = True
    sharing_enabled: bool = False
    cut: CutStrategy = max_gap_cut
    confidence: ConfidenceConfig | None = None
    ambiguity: AmbiguityConfig | None = None
    stages: StageSwitches | None = None
    same_pr_mode: SamePrMode = DEFAULT_SAME_PR_MODE
    recency: bool = True
    rerank_config: RerankConfig | None = None
    recency_config: RecencyConfig | None = None
    adaptive_config: AdaptiveThresholdConfig | None = None

    @classmethod
    def from_config(
        cls, retrieval: RetrievalConfig, *, sharing_enabled: bool, embedding_model: str
    ) -> RetrievalOptions:
        """The options a review runs with: ``knowledge.retrieval`` (+ ``knowledge.sharing.enabled``) and
        the embedder in use, whose calibration profile picks the cut unless ``cutStrategy`` names one."""
        confidence, ambiguity = signal_configs(retrieval.confidence_labels, retrieval.ambiguity_signal)
        stages = StageSwitches.of(retrieval.abstain, retrieval.second_stage)
        return cls(
            top_k=int(retrieval.top_k),
            distance_threshold=retrieval.distance_threshold,
            adaptive=retrieval.adaptive,
            sharing_enabled=sharing_enabled,
            cut=resolve_cut(embedding_model, retrieval.cut_strategy, retrieval.calibration),
            confidence=confidence,
            ambiguity=ambiguity,
            stages=stages if stages.active else None,
        )

    @property
    def cut_name(self) -> str:
        """The cut's ``name`` (``maxgap`` for the plain max-gap function)."""
        return str(getattr(self.cut, "name", "maxgap"))


@dataclass(frozen=True)
class RetrievalQuery:
    """What one pull request asks: ``text`` is the query text the lexical channel searches;
    ``same_pr_review_ids`` the ids of the PR's earlier reviews on a re-review (None: a first review);
    ``pr_files`` the changed files the stages read; ``now`` the clock recency weighs against."""

    repo: str
    owner: str
    pr_languages: Sequence[str] = ()
    now: datetime | None = None
    text: str | None = None
    same_pr_review_ids: frozenset[int] | None = None
    pr_files: Sequence[str] = ()
