"""Data shapes of the learned-memory layer (the original's `learning_memories` row and retrieval results).

Every model accepts both snake_case and the original's camelCase names, so rows written for the
TypeScript original (and the parity vectors) validate unchanged.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

MemoryOutcome = Literal["accepted", "suppressed", "thumbs_up", "thumbs_down"]
ThresholdMethod = Literal[
    # The original's max-gap strategy (kept exactly, parity):
    "adaptive",
    "percentile",
    "configured",
    # kodiai.learning.threshold (head_gap, baselines): the scale-free head-gap strategy and the evaluation's fixed cut.
    "headgap:empty",
    "headgap:abstain",
    "headgap:gap",
    "headgap:band",
    # headgap with the lexical channel contributing to what was kept (kodiai.learning.lexical):
    "headgap:gap+lexical",
    "headgap:band+lexical",
    # evaluation baselines: fixed thresholds and "top-k, no cut".
    "fixed",
    "topk",
    # kodiai.learning.threshold.same_pr: the re-review scope (the PR's own earlier memories).
    "same-pr:kept",
    "same-pr:first",
    "same-pr:fallback",
    "same-pr:abstain",
    # kodiai.learning.stages: the abstain stage and the second stage (learned ranker) after headgap.
    "abstain",
    "rank:kept",
    "rank:abstain",
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class LearningMemoryRecord(_Model):
    """One learned memory: a past finding and its outcome (behaviour P6.3 `learning_memories`).

    ``created_at`` keeps the text it was given: the SQLite form ``YYYY-MM-DD HH:MM:SS`` (UTC) or ISO 8601.
    ``id`` is the store's integer id once written.
    """

    repo: str
    owner: str
    finding_id: int | None
    review_id: int | None
    source_repo: str
    finding_text: str
    severity: str
    category: str
    file_path: str
    outcome: str
    embedding_model: str
    embedding_dim: int
    stale: bool = False
    created_at: str | None = None
    id: int | None = None


class RetrievalResult(_Model):
    """A memory found by vector search; ``distance`` is Euclidean L2 between unit vectors (0..2)."""

    memory_id: int
    distance: float
    record: LearningMemoryRecord
    source_repo: str


class RerankedResult(RetrievalResult):
    """A result after language rerank (and recency): ``adjusted_distance`` orders the final list."""

    adjusted_distance: float
    language_match: bool


class MemoryHit(_Model):
    """A raw store hit before the record is resolved: id and Euclidean distance."""

    memory_id: int
    distance: float
