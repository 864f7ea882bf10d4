"""The LanceDB table layout of learned memory, and safe construction of its filter strings.

The columns are the original's `learning_memories` fields (behaviour P6.3) plus the vector.
Filter strings are SQL: every value that reaches one is validated (repo/owner names against GitHub's
charset) or quoted, so no name can inject a predicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kodiai.learning.types import LearningMemoryRecord

TABLE_NAME = "learning_memories"
VECTOR_COLUMN = "vector"

# GitHub: owner = alphanumerics and single hyphens, ≤ 39; repo = alphanumerics, '-', '_', '.', ≤ 100.
_OWNER_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_REPO_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")

RECORD_COLUMNS: tuple[str, ...] = (
    "id",
    "repo",
    "owner",
    "finding_id",
    "review_id",
    "source_repo",
    "finding_text",
    "severity",
    "category",
    "file_path",
    "outcome",
    "embedding_model",
    "embedding_dim",
    "stale",
    "created_at",
)


class InvalidNameError(ValueError):
    """A repo or owner name outside GitHub's charset (it never reaches a filter string)."""


def validate_owner(owner: str) -> str:
    if not isinstance(owner, str) or not _OWNER_RE.fullmatch(owner):
        raise InvalidNameError(f"invalid GitHub owner name: {owner!r}")
    return owner


def validate_repo(repo: str) -> str:
    """``owner/name`` with GitHub's charset; anything else raises :class:`InvalidNameError`."""
    if not isinstance(repo, str) or repo.count("/") != 1:
        raise InvalidNameError(f"invalid repository name (expected owner/name): {repo!r}")
    owner, name = repo.split("/")
    if not _OWNER_RE.fullmatch(owner) or not _REPO_RE.fullmatch(name) or name in {".", ".."}:
        raise InvalidNameError(f"invalid repository name (expected owner/name): {repo!r}")
    return repo


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_int_list(values: Iterable[int]) -> str:
    return ", ".join(str(int(v)) for v in values)


def memory_schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("repo", pa.string(), nullable=False),
            pa.field("owner", pa.string(), nullable=False),
            pa.field("finding_id", pa.int64()),
            pa.field("review_id", pa.int64()),
            pa.field("source_repo", pa.string(), nullable=False),
            pa.field("finding_text", pa.string(), nullable=False),
            pa.field("severity", pa.string(), nullable=False),
            pa.field("category", pa.string(), nullable=False),
            pa.field("file_path", pa.string(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),
            pa.field("embedding_model", pa.string(), nullable=False),
            pa.field("embedding_dim", pa.int32(), nullable=False),
            pa.field("stale", pa.bool_(), nullable=False),
            pa.field("created_at", pa.string(), nullable=False),
            pa.field(VECTOR_COLUMN, pa.list_(pa.float32(), dimensions), nullable=False),
        ]
    )


def vector_dimensions(schema: pa.Schema) -> int:
    """The fixed vector size of an existing table."""
    field_type = schema.field(VECTOR_COLUMN).type
    return int(field_type.list_size)


def as_vector(embedding: Any, dimensions: int) -> np.ndarray:
    """A float32 vector of exactly ``dimensions`` finite values, or a clear ``ValueError``."""
    vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
    if vector.shape[0] != dimensions:
        raise ValueError(
            f"embedding has {vector.shape[0]} dimensions but this memory store holds {dimensions}-dimension "
            "vectors (one store per embedding model; see `kodiai memory purge-stale`)"
        )
    if not np.all(np.isfinite(vector)):
        raise ValueError("embedding contains NaN or infinite values")
    return vector


def rows_table(
    records: Sequence[LearningMemoryRecord], ids: Sequence[int], vectors: np.ndarray, dimensions: int
) -> pa.Table:
    """Arrow rows for ``records`` (``created_at`` already filled in)."""
    columns: dict[str, Any] = {
        "id": pa.array(ids, pa.int64()),
        "repo": [r.repo for r in records],
        "owner": [r.owner for r in records],
        "finding_id": pa.array([r.finding_id for r in records], pa.int64()),
        "review_id": pa.array([r.review_id for r in records], pa.int64()),
        "source_repo": [r.source_repo for r in records],
        "finding_text": [r.finding_text for r in records],
        "severity": [r.severity for r in records],
        "category": [r.category for r in records],
        "file_path": [r.file_path for r in records],
        "outcome": [r.outcome for r in records],
        "embedding_model": [r.embedding_model for r in records],
        "embedding_dim": pa.array([r.embedding_dim for r in records], pa.int32()),
        "stale": pa.array([r.stale for r in records], pa.bool_()),
        "created_at": [r.created_at for r in records],
        VECTOR_COLUMN: pa.FixedSizeListArray.from_arrays(
            pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)), dimensions
        ),
    }
    return pa.table(columns, schema=memory_schema(dimensions))


def record_from_row(row: dict[str, Any]) -> LearningMemoryRecord:
    return LearningMemoryRecord.model_validate({name: row[name] for name in RECORD_COLUMNS})
