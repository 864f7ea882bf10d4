"""Search/index tuning of the memory store, and the LanceDB indexes it builds when a repo outgrows
exact search (defaults measured with ``benchmarks/retrieval.py``)."""

from __future__ import annotations

import math
from typing import Any, Literal

from lancedb.index import Bitmap, BTree, IvfHnswSq, IvfPq
from pydantic import BaseModel, ConfigDict

from kodiai.learning.memory_schema import VECTOR_COLUMN


class MemoryStoreOptions(BaseModel):
    """Search and index tuning."""

    model_config = ConfigDict(frozen=True)

    exact_search_max_rows: int = 20_000
    """A repo with at most this many live memories is searched exactly."""
    index_type: Literal["IVF_PQ", "IVF_HNSW_SQ"] = "IVF_HNSW_SQ"
    nprobes: int = 12
    refine_factor: int | None = None
    """Re-rank ``limit * refine_factor`` ANN candidates with exact distances; None = 2 for IVF_HNSW_SQ,
    10 for IVF_PQ (recall@20 ≥ 0.95 in ``benchmarks/retrieval.py``)."""
    index_check_every: int = 1_000
    """Single writes between index/compaction checks."""
    exact_cache_bytes: int = 512 * 2**20
    """Vectors of small repos kept in memory for the exact scan (LRU, bytes); 0 scans LanceDB instead."""
    reindex_unindexed_share: float = 0.1

    def effective_refine_factor(self) -> int:
        if self.refine_factor is not None:
            return self.refine_factor
        return 10 if self.index_type == "IVF_PQ" else 2


def vector_index_config(dimensions: int, total_rows: int, options: MemoryStoreOptions) -> Any:
    """IVF_HNSW_SQ with ~sqrt(N)/4 partitions, or IVF_PQ with ~sqrt(N) partitions and 16 dims per
    sub-vector at 1024 dims (fewer for small vectors)."""
    partitions = max(1, min(4096, round(math.sqrt(total_rows))))
    if options.index_type == "IVF_HNSW_SQ":
        return IvfHnswSq(distance_type="l2", num_partitions=max(1, partitions // 4))
    per_sub = 16 if dimensions >= 768 else 8 if dimensions >= 128 else 4
    sub_vectors = dimensions // per_sub if dimensions % per_sub == 0 else 1
    return IvfPq(distance_type="l2", num_partitions=partitions, num_sub_vectors=sub_vectors)


def build_indexes(table: Any, dimensions: int, total_rows: int, options: MemoryStoreOptions) -> None:
    """The vector index plus scalar indexes for the pre-filter (repo, owner, stale) and id lookups."""
    table.create_index(VECTOR_COLUMN, config=vector_index_config(dimensions, total_rows, options))
    for column, scalar in (("repo", Bitmap()), ("owner", Bitmap()), ("stale", Bitmap()), ("id", BTree())):
        table.create_index(column, config=scalar)


def has_vector_index(table: Any) -> bool:
    return any(VECTOR_COLUMN in idx.columns for idx in table.list_indices())


def unindexed_rows(table: Any) -> int:
    """Rows written after the vector index was built (searched exactly next to it)."""
    for idx in table.list_indices():
        if VECTOR_COLUMN in idx.columns:
            stats = table.index_stats(idx.name)
            return int(stats.num_unindexed_rows) if stats is not None else 0
    return 0
