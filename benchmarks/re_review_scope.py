"""The re-review scope's query (``LanceMemoryStore.retrieve_review_memories``) on an indexed table, with the
``review_id`` B-tree index and, as the baseline in the same run, with that one index dropped (the table as
an older version indexed it). One repository of ``--rows`` memories, 20 per review, 384-dim unit vectors;
each query asks for 3 reviews' memories (60 rows), the nearest ``--top-k``.

    .venv/bin/python benchmarks/re_review_scope.py                  # 100k rows
    .venv/bin/python benchmarks/re_review_scope.py --rows 20000 --queries 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "learning"))

from learning_helpers import make_record  # noqa: E402

from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store  # noqa: E402
from kodiai.learning.types import MemoryHit  # noqa: E402

DIM = 384
PER_REVIEW = 20
BATCH = 5000


def fill(store: LanceMemoryStore, rows: int, rng: np.random.Generator) -> None:
    for start in range(0, rows, BATCH):
        ids = range(start, min(rows, start + BATCH))
        records = [
            make_record("acme/api", i, model="bench", dim=DIM).model_copy(
                update={"review_id": i // PER_REVIEW}
            )
            for i in ids
        ]
        vectors = rng.standard_normal((len(records), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.write_memories(records, list(vectors))


def timed(
    query: Callable[[np.ndarray, list[int]], object], pairs: list[tuple[np.ndarray, list[int]]]
) -> tuple[float, float]:
    """p50 and p95 in milliseconds of ``query(vector, review_ids)`` over ``pairs``."""
    took = []
    for vector, review_ids in pairs:
        start = time.perf_counter()
        query(vector, review_ids)
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[max(0, int(len(took) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    reviews = args.rows // PER_REVIEW
    with tempfile.TemporaryDirectory() as tmp:
        store = open_memory_store(str(Path(tmp) / "memory.lance"), DIM)
        start = time.perf_counter()
        fill(store, args.rows, rng)
        store.ensure_index(force=True)
        print(
            f"{args.rows} rows ({reviews} reviews) written and indexed in {time.perf_counter() - start:.1f} s"
        )
        queries = [rng.standard_normal(DIM).astype(np.float32) for _ in range(args.queries)]
        asked = [sorted(int(r) for r in rng.choice(reviews, 3, replace=False)) for _ in queries]
        pairs = list(zip(queries, asked, strict=True))

        def scope(vector: np.ndarray, review_ids: list[int]) -> list[MemoryHit]:
            return store.retrieve_review_memories(vector, "acme/api", review_ids, args.top_k)

        indexed = timed(scope, pairs)
        answers = [scope(q, a) for q, a in pairs]
        store.with_table(lambda table: table.drop_index("review_id_idx"))
        baseline = timed(scope, pairs)
        same = all(scope(q, a) == ans for (q, a), ans in zip(pairs, answers, strict=True))
    print(f"{'review_id index':<22} p50 {indexed[0]:7.1f} ms   p95 {indexed[1]:7.1f} ms")
    print(f"{'baseline: no index':<22} p50 {baseline[0]:7.1f} ms   p95 {baseline[1]:7.1f} ms")
    print(f"same answers with and without the index: {same}")


if __name__ == "__main__":
    main()
