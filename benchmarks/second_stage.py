"""The stages after the cut (abstain + the learned ranker) against the first stage, in the same run.

One repository of ``--rows`` memories (384-dim unit vectors, file paths from a few hundred files in a few
dozen directories) in a real LanceDB store with its full-text indexes. Per query, ``retrieve`` with
``topK 25`` (so isolation asks for a pool of 100, the lexical channel for 100 more):

- first stage: the chain as the review runs it (vector + lexical channel, rerank, recency, ``headgap``);
- the same chain with both stages on (the difference is what the stages cost inside the chain);
- the stages alone (``apply_stages``) on exactly ``--candidates`` (100) pool members.

    .venv/bin/python benchmarks/second_stage.py
    .venv/bin/python benchmarks/second_stage.py --rows 20000 --queries 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "learning"))

from learning_helpers import make_record  # noqa: E402

from kodiai.learning.isolation import IsolationLayer  # noqa: E402
from kodiai.learning.lexical import LexicalChannel  # noqa: E402
from kodiai.learning.memory_store import open_memory_store  # noqa: E402
from kodiai.learning.pipeline import RetrievalOutcome, retrieve  # noqa: E402
from kodiai.learning.retrieval_options import RetrievalOptions, RetrievalQuery  # noqa: E402
from kodiai.learning.stages import StageSwitches, apply_stages, shipped_model  # noqa: E402
from kodiai.learning.threshold.profiles import MINILM_PROFILE  # noqa: E402
from kodiai.learning.threshold.types import CutContext, CutDecision  # noqa: E402

DIM = 384
NOW = datetime(2026, 6, 1, tzinfo=UTC)
WORDS = [
    "pool",
    "cache",
    "router",
    "header",
    "race",
    "leak",
    "parser",
    "ctx",
    "worker",
    "timeout",
    "retry",
    "stream",
    "buffer",
]


def paths(rng: np.random.Generator, n: int) -> list[str]:
    return [
        f"src/{WORDS[int(rng.integers(0, 13))]}{i % 40}/{WORDS[int(rng.integers(0, 13))]}_{i}.go"
        for i in range(n)
    ]


def ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[max(0, int(len(took) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    files = paths(rng, 400)
    shipped_model()  # read once, as a server does at its first retrieval
    with tempfile.TemporaryDirectory() as tmp:
        store = open_memory_store(str(Path(tmp) / "mem.lance"), DIM)
        records = [
            make_record(
                "acme/api",
                i,
                text=f"Fix {WORDS[i % 13]} {WORDS[(i * 7) % 13]} when the {WORDS[(i * 3) % 13]} is reused",
                file_path=files[int(rng.integers(0, len(files)))],
                model="bench",
                dim=DIM,
                created_at="2025-05-01 00:00:00",
            )
            for i in range(args.rows)
        ]
        vectors = rng.standard_normal((args.rows, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for start in range(0, args.rows, 5000):
            store.write_memories(records[start : start + 5000], list(vectors[start : start + 5000]))
        channel = LexicalChannel(store)
        channel.ensure_index()
        isolation = IsolationLayer(store)
        both = StageSwitches(abstain=True, second_stage=True)
        queries = []
        for _ in range(args.queries):
            base = vectors[int(rng.integers(0, args.rows))]
            q = base + rng.standard_normal(DIM).astype(np.float32) * 0.05
            pr_files = [files[int(rng.integers(0, len(files)))] for _ in range(3)]
            text = f"Fix {WORDS[int(rng.integers(0, 13))]} race\nLanguages: Go\n" + "\n".join(pr_files)
            queries.append((q / np.linalg.norm(q), text, pr_files))

        def chain(i: int, stages: StageSwitches | None) -> RetrievalOutcome:
            q, text, pr_files = queries[i]
            return retrieve(
                isolation,
                q,
                RetrievalQuery(
                    repo="acme/api", owner="acme", pr_languages=["Go"], now=NOW, text=text, pr_files=pr_files
                ),
                RetrievalOptions(top_k=25, distance_threshold=0.3, cut=MINILM_PROFILE.cut(), stages=stages),
                lexical=channel,
            )

        chain(0, both)  # warm-up: the full-text index is folded once
        counter = iter(range(10**9))
        first = ms(lambda: chain(next(counter) % len(queries), None), len(queries))
        counter = iter(range(10**9))
        staged = ms(lambda: chain(next(counter) % len(queries), both), len(queries))
        outcomes = [chain(i, None) for i in range(len(queries))]
        ctx = CutContext(top_k=5, distance_threshold=0.3, adaptive=True, now=NOW, recency=True)
        sizes = [len(o.reranked) for o in outcomes]
        pools = [(o.reranked[: args.candidates], o, queries[i][2]) for i, o in enumerate(outcomes)]
        counter = iter(range(10**9))

        def stages_alone() -> object:
            pool, outcome, pr_files = pools[next(counter) % len(pools)]
            lexical = outcome.lexical or {}
            return apply_stages(
                pool,
                _decision(outcome),
                ctx.model_copy(update={"lexical": lexical}),
                pr_files=pr_files,
                pr_languages=["Go"],
                switches=both,
            )

        alone = ms(stages_alone, len(pools) * 4)
        statuses = [chain(i, both).quality.second_stage for i in range(len(queries))]
    print(f"rows {args.rows}, queries {args.queries}, pool per query (median) {statistics.median(sizes):.0f}")
    print(f"first stage (the chain, headgap + lexical)   p50 {first[0]:7.2f} ms  p95 {first[1]:7.2f} ms")
    print(f"the chain with abstain + second stage        p50 {staged[0]:7.2f} ms  p95 {staged[1]:7.2f} ms")
    print(
        f"the stages alone on {args.candidates} candidates            p50 {alone[0]:7.2f} ms  p95 {alone[1]:7.2f} ms"
        "  (budget: 20 ms)"
    )
    used = sum(1 for s in statuses if s == "used")
    print(f"second stage used on {used}/{len(statuses)} queries ({sorted({str(s) for s in statuses})})")


def _decision(outcome: RetrievalOutcome) -> CutDecision:
    return CutDecision(results=outcome.results, threshold=outcome.threshold)


if __name__ == "__main__":
    main()
