"""In-memory approximate search over one repo's live vectors, with a structure chosen by measuring it.

No fixed setting keeps recall on every distribution: real MiniLM vectors need ~32 IVF probes where
clustered vectors queried between clusters need ~128 and a low-rank distribution more. So
:func:`build_calibrated` measures recall@20 when the index is built, against an exact numpy scan, on
queries that are *not* stored rows (a PR's query is a new text that lies near, between or far from stored
findings), in eight families: held-out rows, rows moved by noise at three scales (two local, one
global), interpolated pairs, fresh draws with the data's covariance, random directions and cluster
centres. A setting's recall estimate is a **lower confidence bound** (:func:`recall_lcb`), and the
setting qualifies only when the bound of its *worst* family meets the target: one family's mean would
over-promise on the families it did not sample. Each structure's search breadth is doubled until that
holds (IVF-Flat's ``nprobe``, then, when IVF must probe much of its lists, an HNSW graph's
``efSearch``); a setting counts only when its median query time is at most ``ann_max_cost`` × the exact
scan's, timed side by side twice (the second time on other queries, so one lucky timing cannot choose
it); the fastest such setting is kept, else the exact scan. A repo's index is calibrated again when its
live rows have grown by ``ann_recalibrate_growth`` (:func:`needs_recalibration`).

Both approximate structures hold the float32 vectors themselves; the best ``k`` + 16 candidates are
re-ranked by float64 distances recomputed from the stored vectors (ties by id), exactly as the exact path
does, so distances never depend on the structure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Literal

import faiss
import numpy as np
from pydantic import BaseModel

from kodiai.learning.exact_search import ExactIndex, rank_exact
from kodiai.learning.memory_index import MemoryStoreOptions
from kodiai.learning.types import MemoryHit

_MARGIN = 16
_TRAIN_POINTS_PER_LIST = 64
"""k-means training sample per list (faiss warns under 39)."""
CALIBRATION_K = 20
"""Recall is measured at the top 20 (the floor is recall@20 ≥ 0.95)."""
_TIMING_QUERIES = 32
_SPREAD_SAMPLE = 1024
"""Stored rows whose covariance shapes the perturbations and the fresh draws."""
_HNSW_EF_MAX = 4096
_EXACT_CHUNK = 32_768
_ADD_BATCH = 65_536

Structure = Literal["ivf", "hnsw", "exact"]


def list_count(rows: int) -> int:
    """About sqrt(rows) inverted lists, between 16 and 8192."""
    return max(16, min(8192, round(math.sqrt(rows))))


class _FaissIndex:
    """Shared search path: faiss proposes ``k`` + margin candidates, re-ranked exactly."""

    def __len__(self) -> int:
        raise NotImplementedError

    def candidate_ids(self, queries: np.ndarray, pool: int) -> np.ndarray:
        """``(queries, pool)`` memory ids, -1 where fewer were found."""
        raise NotImplementedError

    def _candidates(self, query: np.ndarray, pool: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def search(self, query: np.ndarray, k: int) -> list[MemoryHit]:
        rows = len(self)
        if rows == 0 or k <= 0:
            return []
        ids, vectors = self._candidates(_row(query), min(rows, k + _MARGIN))
        if len(ids) == 0:
            return []
        return rank_exact(ids, vectors, query, min(k, rows))


class AnnIndex(_FaissIndex):
    """faiss ``IndexIVFFlat`` keyed by memory id (removal is native)."""

    kind: Structure = "ivf"

    def __init__(
        self,
        ids: np.ndarray,
        matrix: np.ndarray,
        *,
        nprobe: int,
        lists: int | None = None,
        seed: int = 0,
        skip: np.ndarray | None = None,
    ) -> None:
        """``skip``: row positions left out for now (the calibration's held-out rows, added later)."""
        vectors = np.ascontiguousarray(matrix, dtype=np.float32)
        rows, dimensions = vectors.shape
        if rows == 0:
            raise ValueError("an ANN index needs at least one vector")
        nlist = min(lists or list_count(rows), rows)
        quantizer = faiss.IndexFlatL2(dimensions)
        index = faiss.IndexIVFFlat(quantizer, dimensions, nlist, faiss.METRIC_L2)
        index.cp.seed = seed
        sample = min(rows, nlist * _TRAIN_POINTS_PER_LIST)
        if sample < rows:
            picked = np.sort(np.random.default_rng(seed).choice(rows, sample, replace=False))
            index.train(vectors[picked])
        else:
            index.train(vectors)
        index.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]
        self._index = index
        self._ids = np.empty(0, dtype=np.int64)
        for part in _batches(rows, skip):
            self.add(ids[part], vectors[part])
        self.dimensions = dimensions
        self.lists = nlist
        self.set_breadth(nprobe)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def nbytes(self) -> int:
        """Vectors and ids in the lists, the centroids, and the id hash table (approximate)."""
        rows = len(self)
        return rows * (self.dimensions * 4 + 8 + 16) + self.lists * self.dimensions * 4

    @property
    def nprobe(self) -> int:
        return int(self._index.nprobe)

    @property
    def breadth(self) -> int:
        return self.nprobe

    def set_breadth(self, nprobe: int) -> None:
        self._index.nprobe = max(1, min(nprobe, self.lists))

    def candidate_ids(self, queries: np.ndarray, pool: int) -> np.ndarray:
        return self._index.search(np.ascontiguousarray(queries, dtype=np.float32), pool)[1]

    def _candidates(self, query: np.ndarray, pool: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.candidate_ids(query, pool)[0]
        ids = found[found >= 0]
        return ids, self._index.reconstruct_batch(ids) if len(ids) else np.empty((0, self.dimensions))

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        self._index.add_with_ids(
            np.ascontiguousarray(matrix, dtype=np.float32), np.asarray(ids, dtype=np.int64)
        )
        self._ids = np.concatenate([self._ids, np.asarray(ids, dtype=np.int64)])

    def remove(self, ids: np.ndarray) -> None:
        self._index.remove_ids(np.asarray(ids, dtype=np.int64))  # type: ignore[arg-type]
        self._ids = self._ids[~np.isin(self._ids, np.asarray(ids, dtype=np.int64))]

    def live_ids(self) -> np.ndarray:
        """The ids searched (to reconcile with another writer's commits)."""
        return self._ids.copy()


class HnswIndex(_FaissIndex):
    """faiss ``IndexHNSWFlat`` over positions, with a position → memory id table.

    An HNSW graph cannot drop a node, so a removed memory becomes a tombstone: its position is masked out
    of every search by a bitmap selector (the graph still routes through it, so recall holds), and once
    tombstones exceed ``rebuild_dead_share`` of the nodes the graph is rebuilt from the live vectors.
    """

    kind: Structure = "hnsw"

    def __init__(
        self,
        ids: np.ndarray,
        matrix: np.ndarray,
        *,
        ef_search: int,
        m: int = 32,
        rebuild_dead_share: float = 0.2,
        skip: np.ndarray | None = None,
    ) -> None:
        """``skip``: row positions left out for now (the calibration's held-out rows, added later)."""
        vectors = np.ascontiguousarray(matrix, dtype=np.float32)
        if len(vectors) == 0:
            raise ValueError("an ANN index needs at least one vector")
        self.dimensions = vectors.shape[1]
        self.m = m
        self.rebuild_dead_share = rebuild_dead_share
        self.rebuilds = 0
        self._params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
        self.set_breadth(ef_search)
        self._build(np.asarray(ids, dtype=np.int64), vectors, skip)

    def _build(self, ids: np.ndarray, vectors: np.ndarray, skip: np.ndarray | None = None) -> None:
        self._index = faiss.IndexHNSWFlat(self.dimensions, self.m)
        parts = _batches(len(ids), skip)
        for part in parts:
            self._index.add(vectors[part])
        self._ids = np.concatenate([ids[part] for part in parts]) if parts else ids[:0].copy()
        self._live = np.ones(len(self._ids), dtype=bool)
        self._dead = 0
        self._params.sel = None
        self._selector: faiss.IDSelectorBitmap | None = None
        self._bitmap: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._ids) - self._dead

    @property
    def nbytes(self) -> int:
        """Vectors, ids and the graph's links (4 bytes each)."""
        nodes = len(self._ids)
        links = int(self._index.hnsw.neighbors.size())  # type: ignore[attr-defined]
        return nodes * (self.dimensions * 4 + 9) + links * 4

    @property
    def ef_search(self) -> int:
        return int(self._params.efSearch)

    @property
    def breadth(self) -> int:
        return self.ef_search

    @property
    def tombstones(self) -> int:
        return self._dead

    def set_breadth(self, ef_search: int) -> None:
        self._params.efSearch = max(1, ef_search)

    def candidate_ids(self, queries: np.ndarray, pool: int) -> np.ndarray:
        positions = self._positions(np.ascontiguousarray(queries, dtype=np.float32), pool)
        return np.where(positions >= 0, self._ids[np.maximum(positions, 0)], -1)

    def _positions(self, queries: np.ndarray, pool: int) -> np.ndarray:
        return self._index.search(queries, pool, params=self._params)[1]

    def _candidates(self, query: np.ndarray, pool: int) -> tuple[np.ndarray, np.ndarray]:
        found = self._positions(query, pool)[0]
        found = found[found >= 0]
        if len(found) == 0:
            return found, np.empty((0, self.dimensions))
        return self._ids[found], self._index.reconstruct_batch(found)

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        self._index.add(np.ascontiguousarray(matrix, dtype=np.float32))
        self._ids = np.concatenate([self._ids, np.asarray(ids, dtype=np.int64)])
        self._live = np.concatenate([self._live, np.ones(len(ids), dtype=bool)])
        if self._dead:
            self._mask()

    def remove(self, ids: np.ndarray) -> None:
        gone = np.flatnonzero(self._live & np.isin(self._ids, np.asarray(ids, dtype=np.int64)))
        if len(gone) == 0:
            return
        self._live[gone] = False
        self._dead += len(gone)
        if self._dead > self.rebuild_dead_share * len(self._ids):
            live = np.flatnonzero(self._live)
            self._build(self._ids[live], self._index.reconstruct_batch(live))
            self.rebuilds += 1
        else:
            self._mask()

    def live_ids(self) -> np.ndarray:
        """The ids searched (to reconcile with another writer's commits)."""
        return self._ids[self._live].copy()

    def _mask(self) -> None:
        """Search only live positions (the bitmap and selector are kept alive on the instance)."""
        self._bitmap = np.packbits(self._live, bitorder="little")
        self._selector = faiss.IDSelectorBitmap(len(self._live), faiss.swig_ptr(self._bitmap))
        self._params.sel = self._selector


class IndexReport(BaseModel):
    """How a repo's in-memory index was chosen: logged, in ``kodiai memory stats``, in ``/metrics``."""

    structure: Structure
    rows: int
    nprobe: int | None = None
    lists: int | None = None
    ef_search: int | None = None
    recall: float | None = None
    """Estimated recall@20 at the chosen setting: the lowest over the calibration query families of the
    family's lower confidence bound (:func:`recall_lcb`; 1.0 for the exact scan; None when not
    calibrated)."""
    recall_mean: float | None = None
    """The lowest family mean recall@20 (the estimate without the margin)."""
    recall_by_family: dict[str, float] = {}
    """Mean recall@20 per calibration family."""
    recall_lcb_by_family: dict[str, float] = {}
    """Lower confidence bound per calibration family."""
    p50_ms: float | None = None
    """Median query time of the chosen index during the build."""
    exact_p50_ms: float | None = None
    """Median time of the exact scan of the same rows, same build."""
    build_seconds: float
    """Whole build, calibration included."""
    tried: list[str] = []
    """Every setting measured, in order, e.g. ``ivf nprobe=8: recall 0.81``."""

    @property
    def setting(self) -> str:
        if self.structure == "ivf":
            return f"ivf nprobe={self.nprobe}/{self.lists}"
        if self.structure == "hnsw":
            return f"hnsw efSearch={self.ef_search}"
        return "exact"

    @property
    def breadth(self) -> int | None:
        """The structure's search breadth (nprobe or efSearch)."""
        return self.nprobe if self.structure == "ivf" else self.ef_search


def _batches(rows: int, skip: np.ndarray | None) -> list[slice] | list[np.ndarray]:
    """``range(rows)`` without the ``skip`` positions, in a few batches: one slice (a view) when nothing
    is skipped, else position arrays of at most ``_ADD_BATCH`` rows (each gathers a bounded copy; faiss
    adds are slow in many small calls)."""
    if skip is None or len(skip) == 0:
        return [slice(0, rows)] if rows else []
    keep = np.setdiff1d(np.arange(rows), skip)
    return [keep[i : i + _ADD_BATCH] for i in range(0, len(keep), _ADD_BATCH)]


def _row(query: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


CALIBRATION_FAMILIES = (
    "heldout",
    "near-local-0.3",
    "near-local-1",
    "near-global-0.5",
    "between",
    "fresh",
    "random",
    "centre",
)
"""The calibration's query families. Benchmarks that check the estimate must query with *other* families
(``benchmarks/ann_recall.py``)."""


def calibration_queries(
    matrix: np.ndarray, count: int, seed: int = 0
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """About ``count`` queries in the :data:`CALIBRATION_FAMILIES`, none of them a row of the index being
    measured: ``heldout``, stored rows withheld from the index while it is measured (real draws from the
    data, like a new finding's text); ``near-local-S``, a row moved in a random direction by S × its
    distance to its 20th nearest row (a rewording of a stored finding: the issue's failing case);
    ``near-global-0.5``, a row moved by half the data's spread; ``between``, a random pair of rows
    interpolated at 25-75 %; ``fresh``, a new draw with the data's mean and covariance (near no stored row
    when the data is clustered); ``random``, an isotropic direction as long as the rows (no structure at
    all); ``centre``, a k-means centre of a sample of rows (equidistant from many rows: the most ties).
    Unit-length data gets unit queries. Returns the families and the held-out row positions."""
    rng = np.random.default_rng(seed)
    rows, dimensions = matrix.shape
    per = max(1, count // len(CALIBRATION_FAMILIES))
    held = np.sort(rng.choice(rows, min(per, max(1, rows // 10)), replace=False))
    sample = matrix[rng.choice(rows, min(rows, _SPREAD_SAMPLE), replace=False)].astype(np.float64)
    mean = sample.mean(axis=0)

    def shaped(n: int) -> np.ndarray:
        """Zero-mean draws whose covariance is the sample's."""
        return rng.standard_normal((n, len(sample))) @ (sample - mean) / math.sqrt(len(sample))

    def pick(n: int) -> np.ndarray:
        return matrix[rng.integers(0, rows, n)].astype(np.float64)

    def local(scale: float) -> np.ndarray:
        """Rows moved isotropically by ``scale`` × their distance to their 20th nearest row."""
        base = rng.integers(0, rows, per)
        nearest = exact_neighbours(matrix, matrix[base], min(CALIBRATION_K + 1, rows))
        offsets = matrix[nearest].astype(np.float64) - matrix[base][:, None, :]
        reach = np.linalg.norm(offsets, axis=2).max(axis=1)
        step = _unit_rows(rng.standard_normal((per, dimensions)))
        return matrix[base].astype(np.float64) + scale * reach[:, None] * step

    t = rng.uniform(0.25, 0.75, (per, 1))
    length = float(np.median(np.linalg.norm(sample, axis=1)))
    made = {
        "near-local-0.3": local(0.3),
        "near-local-1": local(1.0),
        "near-global-0.5": pick(per) + 0.5 * shaped(per),
        "between": (1 - t) * pick(per) + t * pick(per),
        "fresh": mean + shaped(per),
        "random": length * _unit_rows(rng.standard_normal((per, dimensions))),
        "centre": _centres(sample, per, seed),
    }
    if np.allclose(np.linalg.norm(sample, axis=1), 1.0, atol=1e-3):
        made = {name: _unit_rows(q) for name, q in made.items()}
    families = {"heldout": matrix[held].astype(np.float32)}
    families.update({name: q.astype(np.float32) for name, q in made.items()})
    return families, held


def _centres(sample: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` k-means centres of ``sample`` (a few iterations: a centre need only sit among rows)."""
    k = max(1, min(count, len(sample) // 8))
    kmeans = faiss.Kmeans(sample.shape[1], k, niter=8, seed=seed, min_points_per_centroid=1)
    kmeans.train(np.ascontiguousarray(sample, dtype=np.float32))
    centres = np.asarray(kmeans.centroids, dtype=np.float64)
    return centres[np.arange(count) % k]


def recall_lcb(per_query: np.ndarray, k: int = CALIBRATION_K, confidence: float = 0.95) -> float:
    """One-sided lower confidence bound of the mean recall@k behind ``per_query`` (each query's share of
    its ``k`` true neighbours found).

    A Wilson score bound on the pooled share, with the effective number of trials set by the spread of
    the per-query recalls: the ``k`` neighbours of one query are not independent trials (a query in a
    missed cell loses most of them at once), so ``n·k`` trials would be far too sure of itself, while
    ``n`` (one trial per query) ignores that most queries miss one neighbour or none. The design-effect
    estimate ``p(1-p)/s²`` per query, clamped to ``[1, k]``, sits between the two. Deterministic, in
    ``[0, mean]``.
    """
    values = np.asarray(per_query, dtype=np.float64)
    n = len(values)
    if n == 0:
        return 0.0
    p = float(np.clip(values.mean(), 0.0, 1.0))
    spread = float(values.var(ddof=1)) if n > 1 else 0.0
    per = float(k) if spread <= 0.0 else min(float(k), max(1.0, p * (1 - p) / spread))
    trials = n * per
    z = NormalDist().inv_cdf(confidence)
    centre = p + z * z / (2 * trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, min(p, (centre - half) / (1 + z * z / trials)))


def clearly_faster(rounds: Sequence[tuple[float, float]], max_cost: float) -> bool:
    """Whether an index is kept over the exact scan: in *every* side-by-side timing round ``(index p50,
    exact p50)`` its median is at most ``max_cost`` × the exact scan's (no rounds: no). One round alone
    chose an HNSW graph that then ran at 1.02x the exact scan's time; a setting whose advantage is
    within the timing noise is not worth an approximate answer."""
    return bool(rounds) and all(ann <= max_cost * exact for ann, exact in rounds)


def needs_recalibration(calibrated_rows: int, live_rows: int, growth: float) -> bool:
    """A repo's index is measured again once its live rows reach ``growth`` × the rows it was calibrated
    on (0 or less: never): recall at a fixed breadth falls as lists fill and graphs grow, and the exact
    scan the speed rule compares against gets slower too, so both halves of the choice go stale."""
    return growth > 0 and calibrated_rows > 0 and live_rows >= growth * calibrated_rows


def exact_neighbours(
    matrix: np.ndarray, queries: np.ndarray, k: int, exclude: np.ndarray | None = None
) -> np.ndarray:
    """``(queries, k)`` row positions of the exact nearest rows, ``exclude`` positions left out (numpy,
    in chunks of rows)."""
    k = min(k, len(matrix) - (0 if exclude is None else len(exclude)))
    left_out = np.zeros(len(matrix), dtype=bool)
    if exclude is not None:
        left_out[exclude] = True
    best_d = np.empty((len(queries), 0), dtype=np.float32)
    best_i = np.empty((len(queries), 0), dtype=np.int64)
    for start in range(0, len(matrix), _EXACT_CHUNK):
        block = matrix[start : start + _EXACT_CHUNK]
        d2 = np.einsum("ij,ij->i", block, block)[None, :] - 2.0 * (queries @ block.T)
        d2[:, left_out[start : start + len(block)]] = np.inf
        cand_d = np.concatenate([best_d, d2], axis=1)
        cand_i = np.concatenate(
            [best_i, np.broadcast_to(np.arange(start, start + len(block)), d2.shape)], axis=1
        )
        if cand_d.shape[1] > k:
            keep = np.argpartition(cand_d, k - 1, axis=1)[:, :k]
            cand_d = np.take_along_axis(cand_d, keep, axis=1)
            cand_i = np.take_along_axis(cand_i, keep, axis=1)
        best_d, best_i = cand_d, cand_i
    return best_i


def per_query_recall(found: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each query's share of its true ids among its found ids (re-ranking the found ids exactly then
    keeps every true one, so this is the recall after re-ranking)."""
    hits = (found[:, :, None] == truth[:, None, :]).any(axis=1).sum(axis=1)
    return np.asarray(hits / truth.shape[1], dtype=np.float64)


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean :func:`per_query_recall`."""
    return float(np.mean(per_query_recall(found, truth)))


def _median_ms(searches: Sequence[Callable[[np.ndarray, int], object]], queries: np.ndarray) -> list[float]:
    """Median single-query time of each search, interleaved query by query so load hits all alike."""
    for search in searches:
        search(queries[0], CALIBRATION_K)
    times: list[list[float]] = [[] for _ in searches]
    for query in queries:
        for i, search in enumerate(searches):
            start = time.perf_counter()
            search(query, CALIBRATION_K)
            times[i].append((time.perf_counter() - start) * 1000)
    return [float(np.median(t)) for t in times]


def _ladder(start: int, stop: int) -> list[int]:
    """``start``, doubled, up to ``stop`` (always ending at ``stop``)."""
    steps = []
    value = max(1, start)
    while value < stop:
        steps.append(value)
        value *= 2
    return [*steps, stop]


class _Calibration:
    """The measuring half of :func:`build_calibrated`: the calibration queries, their exact answers
    (the held-out rows left out), the exact scan to time against, and the log of settings tried."""

    def __init__(self, ids: np.ndarray, matrix: np.ndarray, options: MemoryStoreOptions, seed: int) -> None:
        self.ids, self.matrix, self.options, self.seed = ids, matrix, options, seed
        self.exact = ExactIndex(ids, matrix)
        self.families, self.held = calibration_queries(matrix, options.ann_calibration_queries, seed)
        self.truth = {
            name: ids[exact_neighbours(matrix, q, CALIBRATION_K, exclude=self.held)]
            for name, q in self.families.items()
        }
        mixed = np.concatenate(list(self.families.values()))
        order = np.random.default_rng(seed).permutation(len(mixed))
        self.timing = mixed[order[:_TIMING_QUERIES]]
        self.confirm = mixed[order[_TIMING_QUERIES : 2 * _TIMING_QUERIES]]
        """Other queries, timed again before a setting is kept (one lucky timing must not choose it)."""
        self.pool = min(len(ids) - len(self.held), CALIBRATION_K + _MARGIN)
        self.tried: list[str] = []
        self.exact_times: list[float] = []

    def ivf(self) -> tuple[AnnIndex, list[int]]:
        """The IVF index without the held-out rows, and its nprobe steps: doubled from ``ann_nprobe``
        up to ``ann_max_cost`` of the lists (more probes scan more than that share of the rows)."""
        o = self.options
        index = AnnIndex(
            self.ids, self.matrix, nprobe=o.ann_nprobe, lists=o.ann_lists, seed=self.seed, skip=self.held
        )
        return index, _ladder(o.ann_nprobe, max(1, min(index.lists, int(o.ann_max_cost * index.lists))))

    def hnsw(self) -> tuple[HnswIndex, list[int]]:
        """The HNSW graph without the held-out rows, and its efSearch steps doubled from ``ann_ef_search``."""
        o = self.options
        index = HnswIndex(
            self.ids,
            self.matrix,
            ef_search=o.ann_ef_search,
            m=o.ann_hnsw_m,
            rebuild_dead_share=o.ann_rebuild_dead_share,
            skip=self.held,
        )
        return index, _ladder(o.ann_ef_search, min(_HNSW_EF_MAX, max(o.ann_ef_search, len(self.ids))))

    def settle(self, index: AnnIndex | HnswIndex, steps: list[int]) -> IndexReport | None:
        """Widen the search step by step; at the first step whose worst family's lower bound meets the
        target, the index (held-out rows added back) and its report if it is clearly faster than the exact
        scan, else None."""
        o = self.options
        label = "ivf nprobe" if isinstance(index, AnnIndex) else "hnsw efSearch"
        for step in steps:
            index.set_breadth(step)
            started = time.perf_counter()
            per_query = {
                name: per_query_recall(index.candidate_ids(q, self.pool), self.truth[name])
                for name, q in self.families.items()
            }
            batch_ms = (time.perf_counter() - started) * 1000 / sum(map(len, self.families.values()))
            bounds = {
                name: recall_lcb(r, CALIBRATION_K, o.ann_recall_confidence) for name, r in per_query.items()
            }
            worst = min(bounds, key=lambda name: bounds[name])
            self.tried.append(
                f"{label}={index.breadth}: recall {bounds[worst]:.3f}"
                f" (lower bound; worst family {worst}, mean {per_query[worst].mean():.3f})"
            )
            if bounds[worst] < o.ann_recall_target:
                # batched queries share the cores, so this is if anything faster than one query alone
                if batch_ms > o.ann_max_cost * self.exact_estimate_ms():
                    self.tried[-1] += " (already over the cost limit: stopped)"
                    return None
                continue
            timed = self.timed_if_faster(index)
            if timed is None:
                return None  # a wider search only costs more
            ann_ms, exact_ms = timed
            index.add(self.ids[self.held], self.matrix[self.held])
            breadth = (
                {"nprobe": index.nprobe, "lists": index.lists}
                if isinstance(index, AnnIndex)
                else {"ef_search": index.ef_search}
            )
            return IndexReport(
                structure=index.kind,
                rows=len(self.ids),
                recall=round(bounds[worst], 4),
                recall_mean=round(min(float(r.mean()) for r in per_query.values()), 4),
                recall_by_family={n: round(float(r.mean()), 4) for n, r in per_query.items()},
                recall_lcb_by_family={n: round(b, 4) for n, b in bounds.items()},
                p50_ms=round(ann_ms, 3),
                exact_p50_ms=round(exact_ms, 3),
                build_seconds=0.0,
                **breadth,
            )
        return None

    def timed_if_faster(self, index: AnnIndex | HnswIndex) -> tuple[float, float] | None:
        """``(index p50, exact p50)`` of the slower-looking of two side-by-side timings (the timing
        queries, then the confirming ones) if :func:`clearly_faster` holds for both, else None (logged in
        ``tried``)."""
        limit = self.options.ann_max_cost
        rounds: list[tuple[float, float]] = []
        for queries in (self.timing, self.confirm):
            if len(queries) == 0:
                continue
            ann_ms, exact_ms = _median_ms([index.search, self.exact.search], queries)
            self.exact_times.append(exact_ms)
            rounds.append((ann_ms, exact_ms))
            self.tried[-1] += f", {ann_ms:.2f} ms vs exact {exact_ms:.2f} ms"
            if not clearly_faster(rounds, limit):
                self.tried[-1] += f" (not {1 / limit:g}x faster: rejected)" if limit > 0 else " (rejected)"
                return None
        return max(rounds, key=lambda r: r[0] / max(r[1], 1e-9))

    def exact_estimate_ms(self) -> float:
        """The exact scan's median time (measured once, when first needed)."""
        if not self.exact_times:
            self.exact_times.extend(_median_ms([self.exact.search], self.timing))
        return float(np.median(self.exact_times))

    def exact_report(self) -> IndexReport:
        times = self.exact_times or _median_ms([self.exact.search], self.timing)
        exact_ms = round(float(np.median(times)), 3)
        return IndexReport(
            structure="exact",
            rows=len(self.ids),
            recall=1.0,
            recall_mean=1.0,
            p50_ms=exact_ms,
            exact_p50_ms=exact_ms,
            build_seconds=0.0,
        )


def _ivf_is_enough(index: AnnIndex, options: MemoryStoreOptions) -> bool:
    """IVF that meets the target probing at most ``ann_ivf_share`` of its lists, and so scanning about as
    many rows as the store would search exactly (``exact_search_max_rows``), is kept without building an
    HNSW graph; beyond either, a graph's search may well be several times faster (a low-rank 1M table:
    IVF 64 of 1000 lists, 64k rows per query) and is worth its slower build."""
    share = index.nprobe / index.lists
    return share <= options.ann_ivf_share and share * len(index) <= options.exact_search_max_rows


def build_calibrated(
    ids: np.ndarray, matrix: np.ndarray, options: MemoryStoreOptions, *, seed: int = 0
) -> tuple[ExactIndex | AnnIndex | HnswIndex, IndexReport]:
    """The index to search one repo with, chosen by measurement, and its report.

    In ``ann_structures`` order (IVF, then HNSW by default), each structure's breadth is doubled until
    recall@20 meets ``ann_recall_target`` on every calibration family; a setting is a candidate if its
    median query time is then at most ``ann_max_cost`` × the exact scan's. IVF that meets the target
    cheaply (:func:`_ivf_is_enough`) is taken at once (an HNSW graph builds far slower and would save
    little); otherwise the next structure is built too and the faster candidate kept, timed
    side by side. With no candidate, the exact scan.
    """
    started = time.perf_counter()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) <= 2 * CALIBRATION_K:
        exact = ExactIndex(ids, matrix)
        return exact, IndexReport(
            structure="exact", rows=len(ids), recall=1.0, build_seconds=time.perf_counter() - started
        )
    cal = _Calibration(ids, matrix, options, seed)
    candidates: list[tuple[AnnIndex | HnswIndex, IndexReport]] = []
    for structure in options.ann_structures:
        index, steps = cal.ivf() if structure == "ivf" else cal.hnsw()
        report = cal.settle(index, steps)
        if report is None:
            del index
            continue
        candidates.append((index, report))
        if isinstance(index, AnnIndex) and _ivf_is_enough(index, options):
            break
    chosen: ExactIndex | AnnIndex | HnswIndex
    if not candidates:
        chosen, report = cal.exact, cal.exact_report()
    elif len(candidates) == 1:
        chosen, report = candidates[0]
    else:
        times = _median_ms([index.search for index, _ in candidates], cal.timing)
        cal.tried.append(
            "side by side: "
            + ", ".join(f"{r.setting} {t:.2f} ms" for (_, r), t in zip(candidates, times, strict=True))
        )
        chosen, report = candidates[int(np.argmin(times))]
    seconds = round(time.perf_counter() - started, 2)
    return chosen, report.model_copy(update={"build_seconds": seconds, "tried": cal.tried})
