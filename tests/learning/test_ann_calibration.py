"""The in-memory index measures its own recall when built and chooses its structure and breadth from it.

Recall is always checked on *fresh* queries drawn after the build (never the calibration's own), and a
distribution counts as hard only if the starting setting (IVF, 8 probes) demonstrably misses the floor on
them. Most tests set ``ann_max_cost`` high so that the timing rule (approximate ≤ 0.5× the exact scan),
which is noisy on a shared host, cannot change the structure under test; the rule itself is tested with a
cost of 0, where it always rejects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest
from learning_helpers import make_record

from kodiai.learning.ann_index import (
    CALIBRATION_FAMILIES,
    AnnIndex,
    HnswIndex,
    IndexReport,
    build_calibrated,
    exact_neighbours,
    recall_at,
)
from kodiai.learning.exact_search import ExactIndex
from kodiai.learning.memory_store import LanceMemoryStore, MemoryStoreOptions, open_memory_store
from kodiai.metrics import Metrics

DIM = 32
ROWS = 20_000
FLOOR = 0.95
Sampler = Callable[[int], np.ndarray]


@pytest.fixture(autouse=True, scope="module")
def one_faiss_thread() -> Iterator[None]:
    """faiss's OpenMP builds slow down several-fold when the cores are shared with other test workers."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def isotropic(rng: np.random.Generator) -> Sampler:
    """No structure at all: IVF needs most of its lists."""
    return lambda n: unit(rng.standard_normal((n, DIM)))


def low_rank(rng: np.random.Generator) -> Sampler:
    """Rank 12 plus a little noise, queries drawn fresh from it (the issue's 0.32 case, scaled down)."""
    basis = rng.standard_normal((12, DIM))
    return lambda n: unit(rng.standard_normal((n, 12)) @ basis + 0.05 * rng.standard_normal((n, DIM)))


def tight_clusters(rng: np.random.Generator) -> Sampler:
    centres = rng.standard_normal((32, DIM))
    return lambda n: unit(centres[rng.integers(0, 32, n)] + 0.15 * rng.standard_normal((n, DIM)))


def recall_on(
    index: ExactIndex | AnnIndex | HnswIndex, x: np.ndarray, ids: np.ndarray, q: np.ndarray
) -> float:
    """recall@20 through the index's real search path (re-ranked hits) against exact search."""
    truth = ids[exact_neighbours(x, q, 20)]
    found = np.array([[h.memory_id for h in index.search(v, 20)] for v in q])
    return recall_at(found, truth)


def ivf_at_start(x: np.ndarray, ids: np.ndarray, q: np.ndarray) -> float:
    return recall_on(AnnIndex(ids, x, nprobe=MemoryStoreOptions().ann_nprobe), x, ids, q)


def test_ivf_escalates_nprobe_until_fresh_queries_reach_the_floor() -> None:
    sample = low_rank(np.random.default_rng(11))
    x, fresh = sample(ROWS), sample(200)
    ids = np.arange(ROWS, dtype=np.int64) + 1
    assert ivf_at_start(x, ids, fresh) < FLOOR  # hard: the fixed setting would miss the floor

    index, report = build_calibrated(ids, x, MemoryStoreOptions(ann_max_cost=10.0, ann_structures=("ivf",)))

    assert isinstance(index, AnnIndex) and report.structure == "ivf"
    assert report.nprobe is not None and report.nprobe > 8  # escalated
    assert report.tried[0].startswith("ivf nprobe=8: recall ")
    assert report.recall is not None and report.recall >= 0.95  # the worst family's lower bound
    assert set(report.recall_by_family) == set(CALIBRATION_FAMILIES)
    assert recall_on(index, x, ids, fresh) >= FLOOR
    assert len(index) == ROWS  # the held-out calibration rows were added back


def test_ivf_probing_a_large_share_is_compared_with_hnsw_side_by_side() -> None:
    """Isotropic data needs most of IVF's lists: an HNSW graph is built too, both are timed side by
    side, the faster is kept, and either holds the floor on fresh queries."""
    sample = isotropic(np.random.default_rng(21))
    rows = 12_000
    x, fresh = sample(rows), sample(200)
    ids = np.arange(rows, dtype=np.int64) + 1
    assert ivf_at_start(x, ids, fresh) < FLOOR

    index, report = build_calibrated(ids, x, MemoryStoreOptions(ann_max_cost=10.0, ann_hnsw_m=16))

    assert any(t.startswith("hnsw efSearch=") for t in report.tried)
    assert report.tried[-1].startswith("side by side: ivf nprobe=") and ", hnsw efSearch=" in report.tried[-1]
    assert report.setting in report.tried[-1] and report.structure == index.kind
    assert recall_on(index, x, ids, fresh) >= FLOOR


def test_hnsw_escalates_ef_search_until_the_floor_holds() -> None:
    sample = low_rank(np.random.default_rng(12))
    rows = 10_000
    x, fresh = sample(rows), sample(200)
    ids = np.arange(rows, dtype=np.int64) + 1
    options = MemoryStoreOptions(ann_max_cost=10.0, ann_structures=("hnsw",), ann_ef_search=4, ann_hnsw_m=8)

    index, report = build_calibrated(ids, x, options)

    assert isinstance(index, HnswIndex) and report.structure == "hnsw"
    assert report.ef_search is not None and report.ef_search > 4
    assert report.tried[0].startswith("hnsw efSearch=4: recall ")
    assert float(report.tried[0].split()[3]) < 0.95  # the first step's bound missed the target
    assert report.recall is not None and report.recall >= 0.95
    assert recall_on(index, x, ids, fresh) >= FLOOR


def test_easy_distribution_keeps_the_cheapest_setting() -> None:
    """Tight clusters, queried between two stored rows: IVF at the starting nprobe already holds."""
    rng = np.random.default_rng(13)
    x = tight_clusters(rng)(ROWS)
    between = unit(x[rng.integers(0, ROWS, 200)] + x[rng.integers(0, ROWS, 200)])
    ids = np.arange(ROWS, dtype=np.int64) + 1

    index, report = build_calibrated(ids, x, MemoryStoreOptions(ann_max_cost=10.0))

    assert isinstance(index, AnnIndex) and (report.structure, report.nprobe) == ("ivf", 8)
    assert len(report.tried) == 1  # no needless escalation
    assert recall_on(index, x, ids, between) >= FLOOR


def test_ivf_scanning_more_rows_than_an_exact_search_is_compared_with_hnsw() -> None:
    """The same easy data, but IVF's 8 probes of ~141 lists scan ~1,100 rows per query, more than the
    store searches exactly here: an HNSW graph is built too and the faster kept (at 1M rows a small share
    of the lists is still tens of thousands of rows)."""
    rng = np.random.default_rng(13)
    x = tight_clusters(rng)(ROWS)
    ids = np.arange(ROWS, dtype=np.int64) + 1
    options = MemoryStoreOptions(ann_max_cost=10.0, ann_hnsw_m=16, exact_search_max_rows=500)

    index, report = build_calibrated(ids, x, options)

    assert report.tried[0].startswith("ivf nprobe=8: recall ")
    # The graph is built and calibrated too. How its search ends is not fixed: faiss builds HNSW on several
    # threads (not reproducible) and the speed rule is timed on a shared host, so it may be timed side by
    # side with IVF, rejected against the exact scan, or stopped at the cost limit; the one kept is named.
    assert any(t.startswith("hnsw efSearch=") for t in report.tried), report.tried
    assert report.structure == index.kind


def test_nothing_cheap_enough_falls_back_to_the_exact_scan() -> None:
    sample = low_rank(np.random.default_rng(14))
    x = sample(5_000)
    ids = np.arange(5_000, dtype=np.int64) + 1

    index, report = build_calibrated(ids, x, MemoryStoreOptions(ann_max_cost=0.0, ann_hnsw_m=8))

    assert isinstance(index, ExactIndex) and report.structure == "exact" and report.recall == 1.0
    assert report.exact_p50_ms is not None and report.exact_p50_ms > 0
    assert any(t.startswith("ivf") for t in report.tried) and any(t.startswith("hnsw") for t in report.tried)
    assert len(report.tried) == 2  # over the cost limit at the first step: no structure widened further


def test_hnsw_tombstones_hide_removed_ids_and_rebuild_past_the_dead_share() -> None:
    rng = np.random.default_rng(16)
    x = unit(rng.standard_normal((2_000, DIM)))
    ids = np.arange(2_000, dtype=np.int64) * 3 + 7
    index = HnswIndex(ids, x, ef_search=256, m=16, rebuild_dead_share=0.2)
    exact = ExactIndex(ids, x)

    gone = ids[:300]  # 15 %: tombstones only
    index.remove(gone)
    exact.remove(gone)
    assert (len(index), index.tombstones, index.rebuilds) == (1_700, 300, 0)
    for q in x[:50]:
        got = [h.memory_id for h in index.search(q, 20)]
        assert not set(got) & set(gone.tolist())
        assert len(set(got) & {h.memory_id for h in exact.search(q, 20)}) >= 18

    extra = unit(rng.standard_normal((10, DIM)))
    index.add(np.arange(10, dtype=np.int64) + 100_000, extra)  # added after tombstones: still masked right
    assert index.search(extra[3], 1)[0].memory_id == 100_003
    assert not {h.memory_id for h in index.search(x[0], 50)} & set(gone.tolist())

    index.remove(ids[300:500])  # 500 dead of 2,010 > 20 %: rebuilt from the live vectors
    assert (len(index), index.tombstones, index.rebuilds) == (1_510, 0, 1)
    assert index.search(x[600], 1)[0].memory_id == int(ids[600])
    assert index.search(x[0], 5)[0].memory_id not in set(ids[:500].tolist())


# ---- through the store ------------------------------------------------------------------------------


def open_store(tmp_path: Path, **options: object) -> LanceMemoryStore:
    opts = MemoryStoreOptions.model_validate({"exact_search_max_rows": 500, "ann_max_cost": 10.0, **options})
    return open_memory_store(str(tmp_path / "memory.lance"), dimensions=DIM, options=opts)


def write_all(store: LanceMemoryStore, x: np.ndarray, repo: str = "acme/big", start: int = 0) -> None:
    store.write_memories([make_record(repo, start + i, dim=DIM) for i in range(len(x))], x)


def test_chosen_setting_reaches_stats_the_log_and_the_metrics_observer(tmp_path: Path) -> None:
    x = tight_clusters(np.random.default_rng(17))(4_000)
    store = open_store(tmp_path, ann_structures=("ivf",))  # the reporting path, not the choice
    write_all(store, x)
    early: list[tuple[str, IndexReport]] = []
    store.observe_builds(lambda repo, report: early.append((repo, report)))

    assert store.warm() == ["acme/big"]

    report = store.stats().ann["acme/big"]
    assert report.structure == "ivf" and report.rows == 4_000 and report.nprobe is not None
    assert report.recall is not None and report.recall >= 0.95 and report.build_seconds > 0
    assert store.stats().model_dump()["ann"]["acme/big"]["nprobe"] == report.nprobe  # --json
    assert early == [("acme/big", report)]

    metrics = Metrics()
    store.observe_builds(metrics.memory_index.observe)  # attached after the build: replayed
    text = metrics.render()[0].decode()
    assert 'kodiai_memory_index_repos{structure="ivf"} 1.0' in text
    assert f'kodiai_memory_index_breadth_max{{structure="ivf"}} {float(report.nprobe)}' in text
    assert f'kodiai_memory_index_recall_min{{structure="ivf"}} {report.recall}' in text
    assert 'kodiai_memory_index_build_seconds_count{structure="ivf"} 1.0' in text
    assert "acme/big" not in text  # repo names never become labels


def test_metrics_follow_a_repo_whose_structure_changes() -> None:
    metrics = Metrics()
    observe = metrics.memory_index.observe
    observe(
        "a/one", IndexReport(structure="ivf", rows=10, nprobe=16, lists=100, recall=0.97, build_seconds=1)
    )
    observe(
        "a/two", IndexReport(structure="ivf", rows=10, nprobe=64, lists=100, recall=0.99, build_seconds=2)
    )
    observe("a/one", IndexReport(structure="hnsw", rows=10, ef_search=128, recall=0.98, build_seconds=9))
    text = metrics.render()[0].decode()
    assert 'kodiai_memory_index_repos{structure="ivf"} 1.0' in text
    assert 'kodiai_memory_index_repos{structure="hnsw"} 1.0' in text
    assert 'kodiai_memory_index_recall_min{structure="ivf"} 0.99' in text
    assert 'kodiai_memory_index_breadth_max{structure="hnsw"} 128.0' in text
    assert 'kodiai_memory_index_build_seconds_count{structure="ivf"} 2.0' in text


def test_writes_and_retirements_on_an_hnsw_backed_repo(tmp_path: Path) -> None:
    """Calibration restricted to HNSW; writes and retirements made while the build is held open are
    reconciled, later ones land in place, and a retired id is never returned (through a rebuild too)."""
    sample = low_rank(np.random.default_rng(18))
    x, extra = sample(3_000), sample(40)
    store = open_store(tmp_path, ann_structures=("hnsw",), ann_hnsw_m=8, ann_rebuild_dead_share=0.02)
    write_all(store, x)
    built, release = threading.Event(), threading.Event()

    def hold(repo: str) -> None:
        built.set()
        release.wait(timeout=120)

    store.warm_built_hook = hold
    worker = threading.Thread(target=store.warm, daemon=True)
    worker.start()
    try:
        assert built.wait(timeout=120)
        write_all(store, extra[:20], start=10_000)  # during the build
        store.retire("acme/big", 7)
    finally:
        release.set()
        worker.join(timeout=120)
    index = store._vectors.peek("acme/big")
    assert isinstance(index, HnswIndex) and len(index) == 3_000 + 20 - 1
    assert store.stats().ann["acme/big"].structure == "hnsw"

    write_all(store, extra[20:], start=20_000)  # after the build: added in place
    assert store._vectors.peek("acme/big") is index and len(index) == 3_000 + 40 - 1
    for j in range(40):
        assert store.retrieve_memories(extra[j], "acme/big", 1)[0].memory_id == 3_000 + j + 1
    assert 8 not in [h.memory_id for h in store.retrieve_memories(x[7], "acme/big", 20)]

    retired = list(range(100, 160))  # 60 more retirements: over 2 % dead, the graph is rebuilt
    for finding in retired:
        store.retire("acme/big", finding)
    assert index.rebuilds >= 1 and len(index) == 3_000 + 40 - 61
    for finding in [7, *retired]:
        hits = [h.memory_id for h in store.retrieve_memories(x[finding], "acme/big", 20)]
        assert finding + 1 not in hits
        assert len(hits) == 20


def test_an_exact_fallback_above_the_limit_is_kept_across_writes(tmp_path: Path) -> None:
    """When nothing approximate is cheap enough the repo is scanned exactly; its next write must not
    throw that away and rebuild (an exact index below the limit still does, when it outgrows it)."""
    x = low_rank(np.random.default_rng(19))(1_000)
    store = open_store(tmp_path, ann_max_cost=0.0, ann_hnsw_m=8)
    write_all(store, x[:900])
    store.retrieve_memories(x[0], "acme/big", 5)
    index = store._vectors.peek("acme/big")
    assert isinstance(index, ExactIndex) and store.stats().ann["acme/big"].structure == "exact"
    write_all(store, x[900:], start=900)
    assert store._vectors.peek("acme/big") is index and len(index) == 1_000
    assert store.retrieve_memories(x[950], "acme/big", 1)[0].memory_id == 951


def test_a_repo_grown_past_the_growth_factor_is_calibrated_again(tmp_path: Path) -> None:
    """Recall at a fixed breadth falls as the lists fill: once the live rows reach
    ``ann_recalibrate_growth`` × the calibrated rows the cached index is dropped and the next query
    measures the grown table (smaller growth keeps the index and adds in place)."""
    sample = tight_clusters(np.random.default_rng(20))
    x = sample(2_400)
    store = open_store(tmp_path, ann_structures=("ivf",), ann_recalibrate_growth=2.0)
    write_all(store, x[:1_000])
    assert store.warm() == ["acme/big"]
    first = store._vectors.peek("acme/big")
    assert first is not None and store.stats().ann["acme/big"].rows == 1_000

    write_all(store, x[1_000:1_900], start=1_000)  # 1.9x: kept, added in place
    assert store._vectors.peek("acme/big") is first and len(first) == 1_900

    write_all(store, x[1_900:], start=1_900)  # 2.4x: dropped, calibrated again on the next query
    assert store._vectors.peek("acme/big") is None
    assert store.retrieve_memories(x[2_300], "acme/big", 1)[0].memory_id == 2_301
    again = store._vectors.peek("acme/big")
    assert again is not None and again is not first and len(again) == 2_400
    assert store.stats().ann["acme/big"].rows == 2_400
