"""Repos above the exact-search limit: the in-memory faiss IVF-Flat index (calibration off), kept in step with writes,
retirements and staleness, warmed in the background, and LanceDB answering when it cannot be used.
All on real LanceDB directories."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from learning_helpers import make_record

from kodiai.learning.ann_index import AnnIndex
from kodiai.learning.exact_search import ExactIndex
from kodiai.learning.memory_store import LanceMemoryStore, MemoryStoreOptions, open_memory_store

DIM = 32
LIMIT = 500


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    x = centers[rng.integers(0, len(centers), n)] + rng.standard_normal((n, DIM)) * 0.5
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(17)
    centers = rng.standard_normal((12, DIM))
    return clustered(rng, 4000, centers), centers


def open_store(tmp_path: Path, **options: object) -> LanceMemoryStore:
    """IVF-Flat pinned (``ann_calibrate`` off): these tests are about keeping a faiss index in step with
    the table; choosing the structure is tested in ``test_ann_calibration.py``."""
    opts = MemoryStoreOptions.model_validate(
        {"exact_search_max_rows": LIMIT, "ann_calibrate": False, **options}
    )
    return open_memory_store(str(tmp_path / "memory.lance"), dimensions=DIM, options=opts)


def exact_ids(x: np.ndarray, q: np.ndarray, k: int, first_id: int = 1) -> list[int]:
    d = np.linalg.norm(x.astype(np.float64) - q.astype(np.float64), axis=1)
    return [int(i) + first_id for i in np.lexsort((np.arange(len(x)), d))[:k]]


def write_all(store: LanceMemoryStore, x: np.ndarray, repo: str = "acme/big", start: int = 0) -> None:
    store.write_memories([make_record(repo, start + i, dim=DIM) for i in range(len(x))], x)


@pytest.fixture
def big(tmp_path: Path, data: tuple[np.ndarray, np.ndarray]) -> tuple[LanceMemoryStore, np.ndarray]:
    """A store (default options) holding the 4,000 clustered vectors in ``acme/big``."""
    x, _ = data
    store = open_store(tmp_path)
    write_all(store, x)
    return store, x


def test_large_repo_is_answered_by_the_faiss_index_with_exact_distances(
    big: tuple[LanceMemoryStore, np.ndarray],
) -> None:
    store, x = big
    recalls = []
    for i in range(30):
        q = x[i * 97]
        hits = store.retrieve_memories(q, "acme/big", 20)
        truth = exact_ids(x, q, 20)
        recalls.append(len(set(truth) & {h.memory_id for h in hits}) / 20)
        for h in hits:  # distances are the float64 Euclidean ones, not faiss's float32 squared values
            assert h.distance == pytest.approx(
                float(np.linalg.norm(x[h.memory_id - 1].astype(np.float64) - q)), abs=1e-12
            )
        assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    assert isinstance(store._vectors.peek("acme/big"), AnnIndex)
    assert np.mean(recalls) >= 0.95


def test_small_repo_next_to_a_large_one_stays_exact(big: tuple[LanceMemoryStore, np.ndarray]) -> None:
    store, x = big
    write_all(store, x[:100], repo="acme/small", start=10_000)
    q = x[5]
    hits = store.retrieve_memories(q, "acme/small", 10)
    assert [h.memory_id for h in hits] == exact_ids(x[:100], q, 10, first_id=len(x) + 1)
    assert isinstance(store._vectors.peek("acme/small"), ExactIndex)


def test_writes_after_the_index_is_built_are_found_without_a_rebuild(
    big: tuple[LanceMemoryStore, np.ndarray],
) -> None:
    store, x = big
    q = x[0]
    store.retrieve_memories(q, "acme/big", 5)
    index = store._vectors.peek("acme/big")
    near = (q + 1e-3 * np.ones(DIM, dtype=np.float32)) / np.linalg.norm(q + 1e-3)
    new_id = store.write_memory(make_record("acme/big", 99_999, dim=DIM), near.astype(np.float32))
    hits = store.retrieve_memories(q, "acme/big", 3)
    assert new_id in [h.memory_id for h in hits[:2]]
    assert store._vectors.peek("acme/big") is index  # updated in place
    assert len(index) == len(x) + 1  # type: ignore[arg-type]


def test_retired_memory_is_never_returned_by_the_index(big: tuple[LanceMemoryStore, np.ndarray]) -> None:
    store, x = big
    q = x[42]
    assert store.retrieve_memories(q, "acme/big", 1)[0].memory_id == 43
    assert store.retire("acme/big", 42) == 1
    hits = store.retrieve_memories(q, "acme/big", 20)
    assert 43 not in [h.memory_id for h in hits]
    assert [h.memory_id for h in hits] == [i for i in exact_ids(x, q, 21) if i != 43][:20]


def test_mark_stale_drops_the_cached_index(big: tuple[LanceMemoryStore, np.ndarray]) -> None:
    store, x = big
    store.retrieve_memories(x[0], "acme/big", 5)
    assert store.mark_stale("another-model") == len(x)
    assert store.retrieve_memories(x[0], "acme/big", 5) == []


def test_lance_engine_and_a_too_small_cache_fall_back_to_lancedb(
    tmp_path: Path, data: tuple[np.ndarray, np.ndarray]
) -> None:
    x, _ = data
    for name, options in (
        ("lance", {"ann_engine": "lance", "nprobes": 20}),
        ("tiny", {"vector_cache_bytes": 1024, "nprobes": 20}),
    ):
        store = open_store(tmp_path / name, **options)
        write_all(store, x)
        store.ensure_index()
        recalls = []
        for i in range(10):
            q = x[i * 31]
            got = {h.memory_id for h in store.retrieve_memories(q, "acme/big", 10)}
            recalls.append(len(got & set(exact_ids(x, q, 10))) / 10)
        assert store._vectors.peek("acme/big") is None
        assert np.mean(recalls) >= 0.9, name


def test_warm_builds_large_repos_only(big: tuple[LanceMemoryStore, np.ndarray]) -> None:
    store, x = big
    write_all(store, x[:50], repo="acme/small", start=10_000)
    assert store.warm() == ["acme/big"]
    assert isinstance(store._vectors.peek("acme/big"), AnnIndex)
    assert store._vectors.peek("acme/small") is None
    assert store.warm() == []  # already built


def test_writes_and_retirements_during_a_background_warm_are_reconciled(
    tmp_path: Path, data: tuple[np.ndarray, np.ndarray]
) -> None:
    """The build is held open (``warm_built_hook``) after its snapshot is read, so every write and the
    retirement below land during it, whatever the threads' timing; the index must then include them."""
    x, centers = data
    store = open_store(tmp_path)
    write_all(store, x)
    extra = clustered(np.random.default_rng(5), 40, centers)
    snapshot_built, release = threading.Event(), threading.Event()

    def hold(repo: str) -> None:
        snapshot_built.set()
        release.wait(timeout=120)

    store.warm_built_hook = hold
    built: list[list[str]] = []
    worker = threading.Thread(target=lambda: built.append(store.warm()), daemon=True)
    worker.start()
    try:
        assert snapshot_built.wait(timeout=120), "warm() never built the index"
        for j in range(0, 40, 4):
            assert "acme/big" in store._building and store._vectors.peek("acme/big") is None
            write_all(store, extra[j : j + 4], start=50_000 + j)
            # queries during the build are answered (by LanceDB) and see the new rows
            hit = store.retrieve_memories(extra[j], "acme/big", 1)[0]
            assert hit.distance == pytest.approx(0.0, abs=1e-6)
        store.retire("acme/big", 7)
        assert "acme/big" in store._building and store._vectors.peek("acme/big") is None
    finally:
        release.set()
        worker.join(timeout=120)
    assert built == [["acme/big"]]
    index = store._vectors.peek("acme/big")
    assert isinstance(index, AnnIndex) and len(index) == len(x) + 40 - 1
    for j in range(40):
        hit = store.retrieve_memories(extra[j], "acme/big", 1)[0]
        assert hit.memory_id == len(x) + j + 1
    assert 8 not in [h.memory_id for h in store.retrieve_memories(x[7], "acme/big", 10)]


def test_exact_repo_growing_past_the_limit_switches_to_the_ann_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    centers = rng.standard_normal((6, DIM))
    x = clustered(rng, LIMIT + 200, centers)
    store = open_store(tmp_path)
    write_all(store, x[:LIMIT])
    store.retrieve_memories(x[0], "acme/big", 5)
    assert isinstance(store._vectors.peek("acme/big"), ExactIndex)
    write_all(store, x[LIMIT:], start=LIMIT)
    hits = store.retrieve_memories(x[-1], "acme/big", 5)
    assert hits[0].memory_id == len(x)
    assert isinstance(store._vectors.peek("acme/big"), AnnIndex)


def test_ann_index_unit_behaviour() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 8)).astype(np.float32)
    index = AnnIndex(np.arange(300) + 1000, x, nprobe=64)
    assert index.lists == 17 and len(index) == 300 and index.nbytes > x.nbytes
    assert [h.memory_id for h in index.search(x[3], 1)] == [1003]
    assert index.search(x[3], 0) == []
    index.remove(np.array([1003]))
    assert 1003 not in [h.memory_id for h in index.search(x[3], 5)]
    with pytest.raises(ValueError):
        AnnIndex(np.arange(0), np.empty((0, 8), dtype=np.float32), nprobe=4)


def test_warm_in_background_builds_on_a_daemon_thread(
    tmp_path: Path, data: tuple[np.ndarray, np.ndarray]
) -> None:
    from kodiai.learning.setup import warm_in_background

    x, _ = data
    store = open_store(tmp_path)
    write_all(store, x)
    thread = warm_in_background(store)
    assert thread.daemon
    thread.join(timeout=60)
    assert isinstance(store._vectors.peek("acme/big"), AnnIndex)
