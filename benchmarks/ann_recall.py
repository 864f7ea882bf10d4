"""Learned-memory ANN: the calibration's recall estimate against recall measured on query families it
never sampled, and the chosen structure's p50 beside the exact scan's, in the same run.

For each distribution and size the in-memory index is built as the server builds it
(:func:`kodiai.learning.ann_index.build_calibrated`: eight calibration families, a lower confidence bound
per family, the worst one must reach the target, and the index must be clearly faster than the exact
scan). Then queries from **held-out families** — none of them one of the calibration's
(``CALIBRATION_FAMILIES``) — go through the chosen index's real search path (candidates re-ranked
exactly) and through the exact scan, and recall@20 is measured against the exact answer:

- ``draws``: new draws from the data's own generator (new findings; the calibration never sees the
  generator, only the stored rows);
- ``row-noise``: a stored row plus Gaussian noise at the generator's own noise scale (queries near stored
  rows: the case where a single-family estimate over-promised, 0.861 measured for ≥ 0.95 estimated);
- ``neighbour-mix``: a row mixed 20-80 % with one of its 10 nearest rows;
- ``extrapolate``: a row pushed away from one of its 10 nearest rows by half their gap;
- ``subspace``: a row moved within a random 8-dimensional subspace by its distance to its nearest row;
- ``dropout``: a row with a random quarter of its coordinates zeroed.

Timing: the held-out queries are searched one at a time, the index and the exact scan interleaved query by
query (``--rounds`` rounds, the median round kept); the p50 of each and their ratio are printed side by
side. The verdict is the issue's target: measured recall@20 ≥ 0.95 on every held-out family and, unless
the exact scan was kept, p50 ≤ 0.5 × the exact scan's.

    .venv/bin/python benchmarks/ann_recall.py                               # clustered + lowrank, 100k × 1024
    .venv/bin/python benchmarks/ann_recall.py --dists clustered --sizes 1000000 --structures ivf
    .venv/bin/python benchmarks/ann_recall.py --smoke                        # seconds (the test runs it)

Synthetic vectors come from a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import faiss
import numpy as np

from kodiai.learning.ann_index import (
    CALIBRATION_FAMILIES,
    CALIBRATION_K,
    build_calibrated,
    exact_neighbours,
    per_query_recall,
)
from kodiai.learning.exact_search import ExactIndex
from kodiai.learning.memory_index import MemoryStoreOptions

FLOOR = 0.95
MAX_RATIO = 0.5
HELD_OUT = ("draws", "row-noise", "neighbour-mix", "extrapolate", "subspace", "dropout")
assert not set(HELD_OUT) & set(CALIBRATION_FAMILIES)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@dataclass
class Source:
    """A distribution: ``draw(n)`` unit rows, and the per-coordinate noise its rows carry (so that
    ``row-noise`` queries sit where a new draw of the same item would)."""

    draw: Callable[[int], np.ndarray]
    noise: float


def mixture(rng: np.random.Generator, dim: int, clusters: int, spread: float) -> Source:
    """``clusters`` Gaussian centres, each row its centre plus noise ``spread`` × as long (±50 %)."""
    centres = rng.standard_normal((clusters, dim), dtype=np.float32)

    def draw(n: int) -> np.ndarray:
        out = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, 65_536):
            m = min(65_536, n - start)
            scale = spread * rng.uniform(0.5, 1.5, (m, 1)).astype(np.float32)
            noise = rng.standard_normal((m, dim), dtype=np.float32)
            out[start : start + m] = unit(centres[rng.integers(0, clusters, m)] + scale * noise)
        return out

    return Source(draw, spread / np.sqrt(1 + spread**2) / np.sqrt(dim))  # after the normalisation


def clustered(rng: np.random.Generator, dim: int) -> Source:
    """64 tight clusters (noise a quarter of the centres' length): the issue's 100k × 1024 case."""
    return mixture(rng, dim, 64, 0.25)


def mid(rng: np.random.Generator, dim: int) -> Source:
    """256 clusters, noise half the centres' length: neighbourhoods spill across IVF cells."""
    return mixture(rng, dim, 256, 0.5)


def loose(rng: np.random.Generator, dim: int) -> Source:
    """1,024 clusters as wide as their centres' length: hardly any structure for an index to use."""
    return mixture(rng, dim, 1024, 1.0)


def lowrank(rng: np.random.Generator, dim: int) -> Source:
    """Rank 16 plus noise 1/20 of the signal (IVF's hard case: no clusters to partition)."""
    basis = rng.standard_normal((16, dim), dtype=np.float32)

    def draw(n: int) -> np.ndarray:
        out = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, 65_536):
            m = min(65_536, n - start)
            x = rng.standard_normal((m, 16), dtype=np.float32) @ basis
            out[start : start + m] = unit(x + 0.2 * rng.standard_normal((m, dim), dtype=np.float32))
        return out

    return Source(draw, 0.05 / np.sqrt(dim))


SOURCES: dict[str, Callable[[np.random.Generator, int], Source]] = {
    "clustered": clustered,
    "mid": mid,
    "loose": loose,
    "lowrank": lowrank,
}


def held_out_queries(
    rng: np.random.Generator, source: Source, x: np.ndarray, per: int
) -> dict[str, np.ndarray]:
    """``per`` queries of each :data:`HELD_OUT` family."""
    rows, dim = x.shape
    base = x[rng.integers(0, rows, per)].astype(np.float64)
    near = exact_neighbours(x, base.astype(np.float32), 11)
    pick = near[np.arange(per), rng.integers(1, 11, per)]  # one of the 10 nearest other rows
    other = x[pick].astype(np.float64)
    nearest_gap = np.linalg.norm(x[near[:, 1]] - base, axis=1)
    t = rng.uniform(0.2, 0.8, (per, 1))
    subspace = np.linalg.qr(rng.standard_normal((dim, 8)))[0]
    step = unit(rng.standard_normal((per, 8)) @ subspace.T).astype(np.float64)
    keep = rng.uniform(size=(per, dim)) >= 0.25
    return {
        "draws": source.draw(per),
        "row-noise": unit(base + source.noise * rng.standard_normal((per, dim))),
        "neighbour-mix": unit((1 - t) * base + t * other),
        "extrapolate": unit(base + 0.5 * (base - other)),
        "subspace": unit(base + nearest_gap[:, None] * step),
        "dropout": unit(base * keep),
    }


@dataclass
class Result:
    dist: str
    rows: int
    dim: int
    setting: str
    estimated: float | None
    """The calibration's estimate: worst family's lower confidence bound."""
    estimated_mean: float | None
    measured: dict[str, float]
    measured_min: float
    p50_ms: float
    exact_p50_ms: float
    ratio: float
    build_seconds: float
    calibration_p50_ms: float | None
    calibration_exact_p50_ms: float | None
    tried: list[str] = field(default_factory=list)

    @property
    def meets(self) -> bool:
        fast = self.setting == "exact" or self.ratio <= MAX_RATIO
        return self.measured_min >= FLOOR and fast


def timed_p50(index: object, exact: ExactIndex, queries: np.ndarray, rounds: int) -> tuple[float, float]:
    """Median-round p50 (ms) of one-query searches, the index and the exact scan interleaved."""
    search = cast(Callable[[np.ndarray, int], object], index.search)  # type: ignore[attr-defined]
    search(queries[0], CALIBRATION_K)
    exact.search(queries[0], CALIBRATION_K)
    per_round = []
    for _ in range(rounds):
        a: list[float] = []
        e: list[float] = []
        for q in queries:
            start = time.perf_counter()
            search(q, CALIBRATION_K)
            a.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            exact.search(q, CALIBRATION_K)
            e.append((time.perf_counter() - start) * 1000)
        per_round.append((float(np.median(a)), float(np.median(e))))
    per_round.sort(key=lambda r: r[0] / r[1])
    return per_round[len(per_round) // 2]


def minilm(rng: np.random.Generator, rows: int, args: argparse.Namespace) -> tuple[Source, np.ndarray]:
    """Real all-MiniLM-L6-v2 vectors (384 dims) of this repository's commit messages and file lines
    (``benchmarks/retrieval.py``'s corpus and per-text cache under ``--workdir``): up to ``rows`` stored,
    the rest drawn as ``draws`` (lines never stored); ``row-noise`` at half the median gap between a row
    and its nearest other row."""
    from retrieval import corpus_texts, minilm_vectors  # the same directory: run as a script

    texts = corpus_texts(rows + args.queries)
    vectors = minilm_vectors(texts, Path(args.workdir) / "minilm-cache")[rng.permutation(len(texts))]
    stored, reserve = vectors[: len(vectors) - args.queries], list(vectors[len(vectors) - args.queries :])
    probe = stored[rng.integers(0, len(stored), 200)]
    gap = np.median(np.linalg.norm(stored[exact_neighbours(stored, probe, 2)[:, 1]] - probe, axis=1))

    def draw(n: int) -> np.ndarray:
        return np.stack([reserve.pop() for _ in range(min(n, len(reserve)))])

    return Source(draw, 0.5 * float(gap) / np.sqrt(stored.shape[1])), stored


def run_one(name: str, rows: int, args: argparse.Namespace) -> Result:
    rng = np.random.default_rng(args.seed + rows)
    if name == "minilm":
        source, x = minilm(rng, rows, args)
        rows = len(x)
    else:
        source = SOURCES[name](rng, args.dim)
        x = source.draw(rows)
    ids = np.arange(rows, dtype=np.int64) + 1
    options = MemoryStoreOptions(
        exact_search_max_rows=args.exact_max,
        ann_structures=tuple(args.structures.split(",")),
        ann_hnsw_m=args.hnsw_m,
        ann_max_cost=args.max_cost,
    )
    index, report = build_calibrated(ids, x, options, seed=args.seed)
    families = held_out_queries(rng, source, x, args.queries)
    measured: dict[str, float] = {}
    for family, q in families.items():
        truth = ids[exact_neighbours(x, q, CALIBRATION_K)]
        found = np.array([[h.memory_id for h in index.search(v, CALIBRATION_K)] for v in q])
        measured[family] = round(float(per_query_recall(found, truth).mean()), 4)
    exact = ExactIndex(ids, x)
    mixed = np.concatenate(list(families.values()))
    timing = mixed[rng.permutation(len(mixed))[: args.timing_queries]]
    ann_ms, exact_ms = timed_p50(index, exact, timing, args.rounds)
    return Result(
        dist=name,
        rows=rows,
        dim=x.shape[1],
        setting=report.setting,
        estimated=report.recall,
        estimated_mean=report.recall_mean,
        measured=measured,
        measured_min=min(measured.values()),
        p50_ms=round(ann_ms, 3),
        exact_p50_ms=round(exact_ms, 3),
        ratio=round(ann_ms / exact_ms, 3),
        build_seconds=report.build_seconds,
        calibration_p50_ms=report.p50_ms,
        calibration_exact_p50_ms=report.exact_p50_ms,
        tried=report.tried,
    )


def print_table(results: list[Result]) -> None:
    print(
        f"{'dist':10} {'rows':>8} {'setting':22} {'est LCB':>7} {'est mean':>8} {'measured min':>12}"
        f" {'p50 ms':>8} {'exact p50':>9} {'ratio':>6} {'build s':>7}  target"
    )
    for r in results:
        est = "-" if r.estimated is None else f"{r.estimated:.3f}"
        mean = "-" if r.estimated_mean is None else f"{r.estimated_mean:.3f}"
        print(
            f"{r.dist:10} {r.rows:>8} {r.setting:22} {est:>7} {mean:>8} {r.measured_min:>12.3f}"
            f" {r.p50_ms:>8.2f} {r.exact_p50_ms:>9.2f} {r.ratio:>6.2f} {r.build_seconds:>7.1f}"
            f"  {'met' if r.meets else 'MISSED'}"
        )
        print("    held-out families: " + ", ".join(f"{k} {v:.3f}" for k, v in r.measured.items()))
        for line in r.tried:
            print(f"    tried: {line}")


def main(argv: list[str] | None = None) -> list[Result]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dists", default="clustered,lowrank", help=f"of {', '.join([*SOURCES, 'minilm'])}")
    parser.add_argument(
        "--workdir",
        default=str(Path(tempfile.gettempdir()) / "kodiai-bench-ann"),
        help="minilm: where the per-text vector cache lives (kept between runs)",
    )
    parser.add_argument("--sizes", default="100000", help="rows, comma-separated")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=100, help="queries per held-out family")
    parser.add_argument("--timing-queries", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--structures", default="ivf,hnsw", help="ann_structures the calibration tries")
    parser.add_argument("--hnsw-m", type=int, default=MemoryStoreOptions().ann_hnsw_m)
    parser.add_argument("--exact-max", type=int, default=MemoryStoreOptions().exact_search_max_rows)
    parser.add_argument(
        "--max-cost",
        type=float,
        default=MemoryStoreOptions().ann_max_cost,
        help="ann_max_cost: the index's p50 must be at most this × the exact scan's",
    )
    parser.add_argument("--threads", type=int, default=0, help="faiss threads (0 = faiss's default)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="4k × 32-d, both dists, IVF only, no speed rule: seconds, for the test",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.dim, args.queries, args.timing_queries, args.rounds = "4000", 32, 40, 16, 1
        args.structures, args.exact_max, args.max_cost = "ivf", 500, 10.0
    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    mode = "json" if args.json else "text"
    results = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        for name in (d for d in args.dists.split(",") if d):
            started = time.perf_counter()
            result = run_one(name, size, args)
            results.append(result)
            if mode == "text":
                print(f"# {name} {size}: {time.perf_counter() - started:.0f} s", flush=True)
                print_table([result])
                print(flush=True)
    if mode == "json":
        print(json.dumps([asdict(r) | {"meets": r.meets} for r in results], indent=2))
    elif len(results) > 1:
        print("# all")
        print_table(results)
    return results


if __name__ == "__main__":
    main()
