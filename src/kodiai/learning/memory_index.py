"""Search/index tuning of the memory store, the LanceDB indexes it builds when a repo outgrows exact
search, and its LanceDB queries (defaults measured with ``benchmarks/retrieval.py``)."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from kodiai.learning.exact_search import rank_exact
from kodiai.learning.memory_schema import VECTOR_COLUMN
from kodiai.learning.types import MemoryHit


class MemoryStoreOptions(BaseModel):
    """Search and index tuning."""

    model_config = ConfigDict(frozen=True)

    exact_search_max_rows: int = 20_000
    """A repo with at most this many live memories is searched exactly."""
    ann_engine: Literal["faiss", "lance"] = "faiss"
    """Above the exact limit: an in-memory faiss index per repo (``faiss``, built from the table on
    first use or by :meth:`~kodiai.learning.memory_store.LanceMemoryStore.warm`, its structure chosen by
    measuring recall: :mod:`kodiai.learning.ann_index`), or LanceDB's own index only (``lance``).
    LanceDB's index also answers while a repo's faiss index is being built or when it does not fit
    ``vector_cache_bytes``."""
    ann_calibrate: bool = True
    """Choose each repo's structure and search breadth by measuring recall@20 at build time; False
    builds IVF-Flat probing ``ann_nprobe`` lists, unmeasured (the earlier behaviour)."""
    ann_recall_target: float = 0.95
    """Calibration target for recall@20: the lower confidence bound (``ann_recall_confidence``) of every
    family of calibration queries must reach it."""
    ann_recall_confidence: float = 0.95
    """One-sided confidence of each family's recall lower bound."""
    ann_recalibrate_growth: float = 2.0
    """A repo's in-memory index (approximate, or the exact scan chosen above the limit) is dropped and
    calibrated again on its next query once its live rows reach this multiple of the rows it was
    calibrated on; 0 = never."""
    ann_max_cost: float = 0.5
    """An approximate setting is taken only when its median query time is at most this share of the
    exact scan's, timed in the same build; otherwise the next structure, and finally the exact scan."""
    ann_structures: tuple[Literal["ivf", "hnsw"], ...] = ("ivf", "hnsw")
    """Approximate structures the calibration tries, in order, before the exact scan (leave HNSW out
    where its slower build or extra memory matters more than latency)."""
    ann_ivf_share: float = 0.1
    """IVF meeting the target while probing at most this share of its lists (and at most
    ``exact_search_max_rows`` rows per query) is taken without trying the next structure; beyond it an HNSW
    graph (slower to build, faster to search when IVF must scan much of the data) is built too and the
    faster of the two kept."""
    ann_calibration_queries: int = 480
    """Calibration queries (eight families; none is a stored row)."""
    ann_nprobe: int = 8
    """Inverted lists probed per faiss IVF query: the first step of the calibration (doubled until the
    target is met), or the fixed value without it."""
    ann_lists: int | None = None
    """faiss inverted lists; None = about sqrt(rows)."""
    ann_ef_search: int = 16
    """First HNSW ``efSearch`` step of the calibration (doubled until the target is met)."""
    ann_hnsw_m: int = 32
    """HNSW links per node."""
    ann_rebuild_dead_share: float = 0.2
    """An HNSW graph (which cannot drop nodes) is rebuilt once retired memories exceed this share."""
    index_type: Literal["IVF_PQ", "IVF_HNSW_SQ"] = "IVF_HNSW_SQ"
    """LanceDB's on-disk ANN index."""
    nprobes: int = 12
    refine_factor: int | None = None
    """Re-rank ``limit * refine_factor`` ANN candidates with exact distances; None = 2 for IVF_HNSW_SQ,
    10 for IVF_PQ (recall@20 ≥ 0.95 in ``benchmarks/retrieval.py``)."""
    index_check_every: int = 1_000
    """Single writes between index/compaction checks."""
    vector_cache_bytes: int = 4 * 2**30
    """In-memory vectors (exact scans and faiss indexes, LRU by repo, bytes); 0 leaves every search to
    LanceDB."""
    reindex_unindexed_share: float = 0.1
    multi_writer: bool = False
    """Several processes write this table (an object-store URI): ids are derived from each memory's content
    key and written with ``merge_insert`` instead of counted up in-process, caches follow other writers'
    commits every ``refresh_seconds``, and writers never compact (one periodic job does:
    :func:`kodiai.learning.memory_compaction.compact_memory`)."""
    refresh_seconds: float = 30.0
    """With ``multi_writer``: the longest a process serves its caches before looking for other writers'
    commits (``LEARNING_MEMORY_REFRESH_SECONDS``)."""

    def effective_refine_factor(self) -> int:
        if self.refine_factor is not None:
            return self.refine_factor
        return 10 if self.index_type == "IVF_PQ" else 2


def vector_index_config(dimensions: int, total_rows: int, options: MemoryStoreOptions) -> Any:
    """IVF_HNSW_SQ with ~sqrt(N)/4 partitions, or IVF_PQ with ~sqrt(N) partitions and 16 dims per
    sub-vector at 1024 dims (fewer for small vectors)."""
    from lancedb.index import IvfHnswSq, IvfPq  # here: importing LanceDB costs seconds (memory_store)

    partitions = max(1, min(4096, round(math.sqrt(total_rows))))
    if options.index_type == "IVF_HNSW_SQ":
        return IvfHnswSq(distance_type="l2", num_partitions=max(1, partitions // 4))
    per_sub = 16 if dimensions >= 768 else 8 if dimensions >= 128 else 4
    sub_vectors = dimensions // per_sub if dimensions % per_sub == 0 else 1
    return IvfPq(distance_type="l2", num_partitions=partitions, num_sub_vectors=sub_vectors)


def scalar_index_configs() -> dict[str, Any]:
    """The scalar indexes beside the vector index: the pre-filter's columns (repo, owner, stale), id
    lookups, and review_id for the re-review scope's filter (``benchmarks/re_review_scope.py``)."""
    from lancedb.index import Bitmap, BTree

    return {"repo": Bitmap(), "owner": Bitmap(), "stale": Bitmap(), "id": BTree(), "review_id": BTree()}


def build_indexes(table: Any, dimensions: int, total_rows: int, options: MemoryStoreOptions) -> None:
    """The vector index plus the scalar indexes (:func:`scalar_index_configs`)."""
    table.create_index(VECTOR_COLUMN, config=vector_index_config(dimensions, total_rows, options))
    add_missing_scalar_indexes(table)


def add_missing_scalar_indexes(table: Any) -> list[str]:
    """Create the scalar indexes the table lacks (one indexed by an older version); returns their columns."""
    configs = scalar_index_configs()
    present = {column for idx in table.list_indices() for column in idx.columns}
    missing = [column for column in configs if column not in present]
    for column in missing:
        table.create_index(column, config=configs[column])
    return missing


def has_vector_index(table: Any) -> bool:
    return any(VECTOR_COLUMN in idx.columns for idx in table.list_indices())


def unindexed_rows(table: Any) -> int:
    """Rows written after the vector index was built (searched exactly next to it)."""
    for idx in table.list_indices():
        if VECTOR_COLUMN in idx.columns:
            stats = table.index_stats(idx.name)
            return int(stats.num_unindexed_rows) if stats is not None else 0
    return 0


def load_vectors(table: Any, where: str, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, float32 matrix)`` of the rows matching ``where``."""
    rows = table.search().where(where).select(["id", VECTOR_COLUMN]).to_arrow()
    ids = rows.column("id").to_numpy().astype(np.int64)
    if rows.num_rows == 0:
        return ids, np.empty((0, dimensions), dtype=np.float32)
    matrix = np.empty((rows.num_rows, dimensions), dtype=np.float32)
    start = 0
    for chunk in rows.column(VECTOR_COLUMN).chunks:  # copied chunk by chunk: no second full-size buffer
        matrix[start : start + len(chunk)] = chunk.flatten().to_numpy().reshape(-1, dimensions)
        start += len(chunk)
    del rows
    pa.default_memory_pool().release_unused()  # hand the Arrow buffers back instead of keeping them pooled
    return ids, matrix


def load_ids(table: Any, where: str) -> np.ndarray:
    return table.search().where(where).select(["id"]).to_arrow().column("id").to_numpy().astype(np.int64)


def lance_search(
    table: Any,
    query: np.ndarray,
    where: str,
    k: int,
    options: MemoryStoreOptions,
    *,
    use_index: bool,
) -> list[MemoryHit]:
    """LanceDB's own k-NN, pre-filtered on ``where``: flat, or through its ANN index with a refine step;
    distances recomputed exactly from the returned vectors."""
    builder = (
        table.search(query, vector_column_name=VECTOR_COLUMN)
        .distance_type("l2")
        .where(where, prefilter=True)
        .select(["id", VECTOR_COLUMN, "_distance"])
        .limit(k)
    )
    if not use_index:
        builder = builder.bypass_vector_index()
    else:
        builder = builder.nprobes(options.nprobes)
        refine = options.effective_refine_factor()
        if refine:
            builder = builder.refine_factor(refine)
    result = builder.to_arrow()
    if result.num_rows == 0:
        return []
    ids = result.column("id").to_numpy()
    stored = result.column(VECTOR_COLUMN).combine_chunks().flatten().to_numpy().reshape(-1, len(query))
    return rank_exact(ids, stored, query, k)
