"""The LanceDB memory store (R4.26 MS-01…08 and behaviour P8.6, plus the port's guarantees), on real
LanceDB directories."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from learning_helpers import at_distance, make_record, unit

from kodiai.learning.memory_schema import InvalidNameError, validate_repo
from kodiai.learning.memory_store import MemoryStoreOptions, open_memory_store

DIM = 64


def connect(uri: str, **kwargs: object) -> Any:
    """A LanceDB connection; imported here, not at module level: importing LanceDB costs seconds of every
    test run's collection, on every worker."""
    import lancedb

    return lancedb.connect(uri, **kwargs)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(42)


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return str(tmp_path / "memory.lance")


def test_ms_01_table_created(uri: str) -> None:
    """R4.26 MS-01: opening creates the learning_memories table."""
    open_memory_store(uri, dimensions=DIM)
    assert "learning_memories" in connect(uri).list_tables().tables


def test_ms_02_write_then_get_round_trips_every_field(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    rec = make_record("acme/api", 101, created_at="2025-01-02 03:04:05", dim=DIM)
    memory_id = store.write_memory(rec, unit(rng, DIM))
    assert memory_id == 1
    got = store.get_memory_record(1)
    assert got is not None
    assert got == rec.model_copy(update={"id": 1})
    assert got.stale is False


def test_ms_03_same_repo_sorted_by_distance(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    far = store.write_memory(make_record(finding_id=1), at_distance(q, 0.9, rng))
    near = store.write_memory(make_record(finding_id=2), at_distance(q, 0.2, rng))
    hits = store.retrieve_memories(q, "acme/api", 10)
    assert [h.memory_id for h in hits] == [near, far]
    assert hits[0].distance == pytest.approx(0.2, rel=1e-5)
    assert hits[1].distance == pytest.approx(0.9, rel=1e-5)


def test_ms_04_repo_isolation(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    store.write_memory(make_record("acme/repo-a", 1), q)
    assert store.retrieve_memories(q, "acme/repo-b", 5) == []
    assert len(store.retrieve_memories(q, "acme/repo-a", 5)) == 1


def test_ms_05_duplicate_skipped_not_raised(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    v = unit(rng, DIM)
    assert store.write_memory(make_record(finding_id=5), v) == 1
    assert store.write_memory(make_record(finding_id=5, text="other"), v) is None
    assert store.count() == 1
    # another outcome of the same finding is a different memory
    assert store.write_memory(make_record(finding_id=5, outcome="suppressed"), v) == 2


def test_ms_06_mark_stale_flags_only_other_models(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record(finding_id=1, model="voyage-code-2"), unit(rng, DIM))
    store.write_memory(make_record(finding_id=2, model="voyage-code-3"), unit(rng, DIM))
    assert store.mark_stale("voyage-code-3") == 1
    assert store.mark_stale("voyage-code-3") == 0
    stale = store.get_memory_record(1)
    assert stale is not None and stale.stale is True


def test_ms_07_purge_removes_stale_rows(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record(finding_id=1, model="old"), unit(rng, DIM))
    store.write_memory(make_record(finding_id=2, model="new"), unit(rng, DIM))
    store.mark_stale("new")
    assert store.purge_stale_embeddings() == 1
    assert store.count() == 1
    assert store.get_memory_record(1) is None
    # a purged key can be written again
    assert store.write_memory(make_record(finding_id=1, model="new"), unit(rng, DIM)) == 3


def test_ms_08_missing_id_is_none(uri: str) -> None:
    assert open_memory_store(uri, dimensions=DIM).get_memory_record(999) is None


def test_stale_rows_never_retrieved(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    store.write_memory(make_record(finding_id=1, model="old"), q)
    store.write_memory(make_record(finding_id=2, model="new"), at_distance(q, 0.5, rng))
    store.mark_stale("new")
    assert [h.memory_id for h in store.retrieve_memories(q, "acme/api", 5)] == [2]


def test_lancedb_l2_is_squared_and_store_returns_euclidean(uri: str, rng: np.random.Generator) -> None:
    """LanceDB's ``l2`` distance is the squared Euclidean distance; the store reports the Euclidean one."""
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    store.write_memory(make_record(finding_id=1), at_distance(q, 0.6, rng))
    raw = connect(uri).open_table("learning_memories").search(q).distance_type("l2").limit(1).to_list()
    assert raw[0]["_distance"] == pytest.approx(0.36, rel=1e-4)
    assert store.retrieve_memories(q, "acme/api", 1)[0].distance == pytest.approx(0.6, rel=1e-5)


def test_created_at_honoured_or_defaulted_to_sqlite_utc(uri: str, rng: np.random.Generator) -> None:
    fixed = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    store = open_memory_store(uri, dimensions=DIM, clock=lambda: fixed)
    store.write_memory(make_record(finding_id=1, created_at="2024-08-31T07:41:10.000Z"), unit(rng, DIM))
    store.write_memory(make_record(finding_id=2), unit(rng, DIM))
    first, second = store.get_memory_record(1), store.get_memory_record(2)
    assert first is not None and first.created_at == "2024-08-31T07:41:10.000Z"
    assert second is not None and second.created_at == "2026-03-04 05:06:07"


def test_wrong_dimension_is_a_clear_error_and_writes_nothing(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    with pytest.raises(ValueError, match="dimensions"):
        store.write_memories(
            [make_record(finding_id=1), make_record(finding_id=2)], [unit(rng, DIM), unit(rng, 32)]
        )
    assert store.count() == 0
    with pytest.raises(ValueError, match="dimensions"):
        store.retrieve_memories(unit(rng, 32), "acme/api", 5)


def test_reopen_with_other_dimension_is_rejected(uri: str) -> None:
    open_memory_store(uri, dimensions=DIM)
    with pytest.raises(ValueError, match="64-dimension"):
        open_memory_store(uri, dimensions=128)


@pytest.mark.parametrize(
    "repo",
    [
        "acme/api' OR '1'='1",
        "acme",
        "a/b/c",
        "acme/ap i",
        "-acme/api",
        "acme/..",
        "",
        "acme/api;--",
        "ac\x00me/x",
    ],
)
def test_repo_names_validated_before_any_filter(uri: str, rng: np.random.Generator, repo: str) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record("acme/api", 1), unit(rng, DIM))
    with pytest.raises(InvalidNameError):
        store.retrieve_memories(unit(rng, DIM), repo, 5)
    with pytest.raises(InvalidNameError):
        store.write_memory(make_record(finding_id=2).model_copy(update={"repo": repo}), unit(rng, DIM))
    assert store.count() == 1


def test_valid_github_names_pass() -> None:
    for repo in ("acme/api", "a-b/c.d_e", "A1/x", "o/r", "x/.github"):
        assert validate_repo(repo) == repo


def test_batch_write_returns_ids_and_skips_duplicates(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    recs = [make_record(finding_id=1), make_record(finding_id=2), make_record(finding_id=1)]
    assert store.write_memories(recs, [unit(rng, DIM) for _ in recs]) == [1, 2, None]
    assert store.write_memories(
        [make_record(finding_id=2), make_record(finding_id=3)], [unit(rng, DIM)] * 2
    ) == [
        None,
        3,
    ]


def test_null_finding_id_never_conflicts(uri: str, rng: np.random.Generator) -> None:
    """As the original: NULL finding ids never violate uniqueness."""
    store = open_memory_store(uri, dimensions=DIM)
    rec = make_record(finding_id=1).model_copy(update={"finding_id": None})
    assert store.write_memory(rec, unit(rng, DIM)) == 1
    assert store.write_memory(rec, unit(rng, DIM)) == 2


def test_ids_continue_after_reopen_and_duplicates_still_detected(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record(finding_id=1), unit(rng, DIM))
    store.write_memory(make_record(finding_id=2), unit(rng, DIM))
    again = open_memory_store(uri, dimensions=DIM)
    assert again.write_memory(make_record(finding_id=2), unit(rng, DIM)) is None
    assert again.write_memory(make_record(finding_id=3), unit(rng, DIM)) == 3


def test_owner_pool_top5_repos_ceil_split_and_name_tiebreak(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    counts = {"acme/a": 3, "acme/b": 3, "acme/c": 2, "acme/d": 2, "acme/e": 2, "acme/f": 2, "acme/self": 9}
    fid = 0
    for repo, n in counts.items():
        for _ in range(n):
            fid += 1
            store.write_memory(make_record(repo, fid), at_distance(q, 0.1 + 0.01 * fid, rng))
    store.write_memory(make_record("other/x", 999), q)
    hits = store.retrieve_memories_for_owner(q, "acme", "acme/self", 5)
    records = store.get_memory_records([h.memory_id for h in hits])
    repos = {records[h.memory_id].repo for h in hits}
    # a and b (3 each) then c, d, e by name; f ties with them but loses on name; self excluded
    assert repos <= {"acme/a", "acme/b", "acme/c", "acme/d", "acme/e"}
    assert "acme/f" not in repos and "acme/self" not in repos and "other/x" not in repos
    # ceil(5/5) = 1 per repo, merged, sorted, cut at 5
    assert len(hits) == 5
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)


def test_owner_pool_empty_when_no_other_repo(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record("acme/self", 1), unit(rng, DIM))
    assert store.retrieve_memories_for_owner(unit(rng, DIM), "acme", "acme/self", 5) == []


def test_retire_removes_one_findings_memory(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    store.write_memory(make_record(finding_id=1), q)
    store.write_memory(make_record(finding_id=2), at_distance(q, 0.3, rng))
    assert store.retire("acme/api", 1) == 1
    assert [h.memory_id for h in store.retrieve_memories(q, "acme/api", 5)] == [2]
    assert store.retire("acme/api", 1) == 0


def test_ties_broken_by_id(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    v = at_distance(q, 0.4, rng)
    for fid in (3, 1, 2):
        store.write_memory(make_record(finding_id=fid), v)
    assert [h.memory_id for h in store.retrieve_memories(q, "acme/api", 3)] == [1, 2, 3]


@pytest.mark.parametrize("index_type", ["IVF_HNSW_SQ", "IVF_PQ"])
def test_ann_index_above_exact_limit_keeps_recall(uri: str, index_type: str) -> None:
    """Above ``exact_search_max_rows`` the store builds an ANN index and still finds the true neighbours."""
    rng = np.random.default_rng(3)
    dim, n = 32, 3000
    centers = rng.standard_normal((16, dim))
    x = centers[rng.integers(0, 16, n)] + rng.standard_normal((n, dim)) * 0.6
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    options = MemoryStoreOptions.model_validate(
        {"exact_search_max_rows": 1000, "nprobes": 20, "index_type": index_type}
    )
    store = open_memory_store(uri, dimensions=dim, options=options)
    store.write_memories([make_record(finding_id=i, dim=dim) for i in range(n)], x)
    assert store.stats().indexed is True
    recalls = []
    for i in range(20):
        q = x[i * 7]
        exact = {int(j) + 1 for j in np.argsort(np.linalg.norm(x - q, axis=1))[:10]}
        got = {h.memory_id for h in store.retrieve_memories(q, "acme/api", 10)}
        recalls.append(len(exact & got) / 10)
    assert np.mean(recalls) >= 0.95


def test_stats_counts(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    store.write_memory(make_record("acme/a", 1, model="m1"), unit(rng, DIM))
    store.write_memory(make_record("acme/a", 2, model="m2"), unit(rng, DIM))
    store.write_memory(make_record("acme/b", 3, model="m2"), unit(rng, DIM))
    store.mark_stale("m2")
    s = store.stats()
    assert (s.total, s.stale, s.dimensions) == (3, 1, DIM)
    assert s.by_repo == {"acme/a": 2, "acme/b": 1}
    assert s.by_model == {"m1": 1, "m2": 2}


def test_in_memory_exact_scan_matches_lancedb_flat_search(tmp_path: Path) -> None:
    """The exact path over cached vectors gives the same ids and distances as LanceDB's own flat search."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((500, DIM)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    recs = [make_record("acme/api" if i % 3 else "acme/web", i, dim=DIM) for i in range(500)]
    cached = open_memory_store(str(tmp_path / "a"), dimensions=DIM)
    flat = open_memory_store(
        str(tmp_path / "b"), dimensions=DIM, options=MemoryStoreOptions(vector_cache_bytes=0)
    )
    cached.write_memories(recs, x)
    flat.write_memories(recs, x)
    for i in range(10):
        q = x[i * 13]
        a = cached.retrieve_memories(q, "acme/api", 20)
        b = flat.retrieve_memories(q, "acme/api", 20)
        assert [h.memory_id for h in a] == [h.memory_id for h in b]
        assert [h.distance for h in a] == pytest.approx([h.distance for h in b], rel=1e-9)


def test_exact_cache_sees_new_writes(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM)
    q = unit(rng, DIM)
    store.write_memory(make_record(finding_id=1), at_distance(q, 0.5, rng))
    assert len(store.retrieve_memories(q, "acme/api", 5)) == 1
    store.write_memory(make_record(finding_id=2), at_distance(q, 0.1, rng))
    assert [h.memory_id for h in store.retrieve_memories(q, "acme/api", 5)] == [2, 1]


def test_vector_cache_evicts_least_recently_used() -> None:
    from kodiai.learning.exact_search import ExactIndex, exact_top_k
    from kodiai.learning.vector_cache import VectorCache

    def entry() -> ExactIndex:
        return ExactIndex(np.arange(4), np.ones((4, 8), dtype=np.float32))

    cache = VectorCache(max_bytes=2 * entry().nbytes)
    cache.put("o/a", entry())
    cache.put("o/b", entry())
    assert cache.get("o/a") is not None  # a is now the most recent
    cache.put("o/c", entry())
    assert cache.get("o/b") is None and cache.get("o/a") is not None and cache.get("o/c") is not None
    hits = exact_top_k(
        np.array([9, 3, 5]), np.zeros((3, 8), dtype=np.float32), np.ones(8, dtype=np.float32), 2
    )
    assert [h.memory_id for h in hits] == [3, 5]  # equal distances: ties by id


def test_concurrent_writers_and_readers_get_unique_ids(uri: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    store = open_memory_store(uri, dimensions=DIM)
    rng = np.random.default_rng(5)
    vectors = [unit(rng, DIM) for _ in range(40)]

    def work(i: int) -> int | None:
        store.retrieve_memories(vectors[i], "acme/api", 5)
        return store.write_memory(make_record(finding_id=i % 30), vectors[i])

    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = list(pool.map(work, range(40)))
    written = [i for i in ids if i is not None]
    assert len(written) == 30 and len(set(written)) == 30
    assert store.count() == 30


def test_no_index_while_every_repo_fits_exact_search(uri: str) -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    store = open_memory_store(uri, dimensions=16, options=MemoryStoreOptions(exact_search_max_rows=100))
    recs = [make_record(f"acme/r{i % 4}", i, dim=16) for i in range(300)]  # 75 per repo
    store.write_memories(recs, x)
    assert store.ensure_index() is False and store.stats().indexed is False


def test_single_writes_are_compacted_periodically(uri: str, rng: np.random.Generator) -> None:
    store = open_memory_store(uri, dimensions=DIM, options=MemoryStoreOptions(index_check_every=5))
    for i in range(5):
        store.write_memory(make_record(finding_id=i), unit(rng, DIM))
    table = connect(uri).open_table("learning_memories")
    assert table.stats()["fragment_stats"]["num_fragments"] == 1
    assert store.count() == 5 and store.get_memory_record(5) is not None
