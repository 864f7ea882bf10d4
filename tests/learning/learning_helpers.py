"""Builders shared by the learning tests (parity rows → models, deterministic unit vectors)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.pipeline import LexicalSearcher, RetrievalOutcome, retrieve
from kodiai.learning.recency import parse_created_at
from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery
from kodiai.learning.types import LearningMemoryRecord, RerankedResult, RetrievalResult

VECTOR_RECORD_DEFAULTS: dict[str, Any] = {
    "repo": "o/r",
    "owner": "o",
    "reviewId": 1,
    "sourceRepo": "o/r",
    "findingText": "f",
    "outcome": "accepted",
    "embeddingModel": "m",
    "embeddingDim": 1024,
    "stale": False,
}


def vector_record(row_record: dict[str, Any]) -> LearningMemoryRecord:
    """A functions.jsonl record: the row's fields over the README's fixed defaults."""
    return LearningMemoryRecord.model_validate({**VECTOR_RECORD_DEFAULTS, **row_record})


def retrieval_result(row: dict[str, Any]) -> RetrievalResult:
    return RetrievalResult(
        memory_id=row["memoryId"],
        distance=row["distance"],
        record=vector_record(row["record"]),
        source_repo="o/r",
    )


def reranked_result(row: dict[str, Any]) -> RerankedResult:
    return RerankedResult(
        memory_id=row["memoryId"],
        distance=row["distance"],
        record=vector_record(row["record"]),
        source_repo="o/r",
        adjusted_distance=row["adjustedDistance"],
        language_match=row["languageMatch"],
    )


def iso(text: str) -> datetime:
    parsed = parse_created_at(text)
    assert parsed is not None
    return parsed


def make_record(
    repo: str = "acme/api",
    finding_id: int = 1,
    *,
    outcome: str = "accepted",
    file_path: str = "src/a.ts",
    severity: str = "major",
    category: str = "correctness",
    model: str = "voyage-code-3",
    dim: int = 1024,
    created_at: str | None = None,
    text: str | None = None,
) -> LearningMemoryRecord:
    return LearningMemoryRecord(
        repo=repo,
        owner=repo.split("/")[0],
        finding_id=finding_id,
        review_id=7,
        source_repo=repo,
        finding_text=text or f"finding {finding_id}",
        severity=severity,
        category=category,
        file_path=file_path,
        outcome=outcome,
        embedding_model=model,
        embedding_dim=dim,
        created_at=created_at,
    )


def unit(rng: np.random.Generator, dim: int = 1024) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def at_distance(base: np.ndarray, distance: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector exactly ``distance`` (Euclidean) from unit vector ``base``."""
    ortho = rng.standard_normal(base.shape[0])
    ortho -= ortho.dot(base) * base
    ortho /= np.linalg.norm(ortho)
    cos = 1 - distance**2 / 2
    sin = np.sqrt(max(0.0, 1 - cos**2))
    return (cos * base + sin * ortho).astype(np.float32)


_QUERY_FIELDS = {f.name for f in dataclasses.fields(RetrievalQuery)}


def retrieve_kw(
    isolation: IsolationLayer,
    query_embedding: Sequence[float] | np.ndarray,
    *,
    lexical: LexicalSearcher | None = None,
    query_text: str | None = None,
    **kw: Any,
) -> RetrievalOutcome:
    """The typed chain call from one flat set of keywords (the query's fields, the rest options), so a
    test states only what it varies."""
    query = {k: v for k, v in kw.items() if k in _QUERY_FIELDS}
    options = {k: v for k, v in kw.items() if k not in _QUERY_FIELDS}
    return retrieve(
        isolation,
        query_embedding,
        RetrievalQuery(text=query_text, **query),
        RetrievalOptions(**options),
        lexical=lexical,
    )

