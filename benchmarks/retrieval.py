"""Learned-memory retrieval benchmark: ANN recall per data distribution, and the LanceDB store's own
figures, each next to an exact numpy scan of the same rows in the same run.

**Distributions** (``--dists``, on by default): for each distribution and size (``--dist-sizes``,
100k by default; ``--large`` adds 1M), the rows are written to one repo of a fresh store and its
in-memory index is built as the server builds it at start-up (``warm``: the index measures its own
recall and chooses its structure and breadth). Then ``--queries`` queries that were never stored are
timed through ``retrieve_memories`` and through an exact numpy scan (precomputed norms) of the same
rows, interleaved, over ``--rounds`` rounds (the median round is reported), and recall@k is computed
against the scan. The fixed setting used before (IVF-Flat, 8 probes) is measured on the same queries
for comparison (``--no-baseline`` skips it). Distributions:

- ``tight``: 64 clusters with a spread of 1/4 of their centres' scale; held-out draws as queries;
- ``loose``: 1,024 clusters as wide as their centres' scale; held-out draws;
- ``isotropic``: Gaussian noise, no structure at all; held-out draws;
- ``lowrank``: rank 16 plus a little noise; fresh draws from it (queries near no stored row);
- ``midpoints``: 256 clusters of spread 1/2; each query the midpoint of two random stored rows;
- ``fresh``: the same clusters; each query a Gaussian draw with the data's mean and covariance;
- ``minilm``: real all-MiniLM-L6-v2 vectors (384 dims) of this repository's commit messages and file
  lines (unique lines of 16-200 characters), with held-out lines as the queries (embedded once and
  cached per text under the work directory: ``--workdir`` keeps it between runs).

**Store scenarios** (``--sizes``, ``--multi``): write throughput of ``write_memories`` next to a .npy
dump, the index build, p50/p99 of ``retrieve_memories`` next to a numpy scan, recall, and process RSS, for
clustered vectors with queries near a cluster centre; ``--embed`` adds local MiniLM throughput.

    .venv/bin/python benchmarks/retrieval.py                                      # distributions at 100k
    .venv/bin/python benchmarks/retrieval.py --large --dim 384 --dists tight,lowrank  # and at 1M
    .venv/bin/python benchmarks/retrieval.py --dists "" --sizes 10000,100000 --multi 100000:50 --embed
    .venv/bin/python benchmarks/retrieval.py --dists "" --sizes 100000 --multi "" --engine lance

Synthetic vectors are generated from a fixed seed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kodiai.learning.ann_index import AnnIndex, recall_at
from kodiai.learning.memory_store import MemoryStoreOptions, open_memory_store
from kodiai.learning.types import LearningMemoryRecord

WRITE_BATCH = 10_000


def rss_mb() -> float:
    """Current resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def clustered(rng: np.random.Generator, n: int, dim: int, centers: np.ndarray) -> np.ndarray:
    assign = rng.integers(0, len(centers), size=n)
    noise = rng.uniform(0.5, 1.5, size=(n, 1)).astype(np.float32)
    x = centers[assign] + noise * rng.standard_normal((n, dim), dtype=np.float32) * (8 / np.sqrt(dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def records_for(start: int, n: int, repos: list[str]) -> list[LearningMemoryRecord]:
    out = []
    for i in range(start, start + n):
        repo = repos[i % len(repos)]
        out.append(
            LearningMemoryRecord(
                repo=repo,
                owner=repo.split("/")[0],
                finding_id=i,
                review_id=i // 10,
                source_repo=repo,
                finding_text=f"finding {i}",
                severity=("critical", "major", "medium", "minor")[i % 4],
                category="correctness",
                file_path=f"src/f{i % 997}.ts",
                outcome="accepted",
                embedding_model="bench",
                embedding_dim=0,
                created_at="2026-01-01 00:00:00",
            )
        )
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


@dataclass
class Scenario:
    n: int
    repos: int


def run_scenario(sc: Scenario, args: argparse.Namespace, workdir: Path) -> None:
    dim, k = args.dim, args.top_k
    rng = np.random.default_rng(args.seed + sc.n + sc.repos)
    centers = rng.standard_normal((args.clusters, dim)).astype(np.float32)
    repos = [f"bench{r // 10}/repo-{r}" for r in range(sc.repos)]
    uri = workdir / f"lance-{sc.n}-{sc.repos}"
    options = MemoryStoreOptions(
        exact_search_max_rows=args.exact_max,
        ann_engine=args.engine,
        ann_nprobe=args.ann_nprobe,
        vector_cache_bytes=int(args.cache_gib * 2**30),
        index_type=args.index_type,
        nprobes=args.nprobes,
        refine_factor=args.refine,
        index_check_every=10**12,
    )
    print(f"\n=== {sc.n:,} memories x {dim} dims in {sc.repos} repo(s) ===", flush=True)
    gc.collect()
    rss0 = rss_mb()
    store = open_memory_store(str(uri), dimensions=dim, options=options)
    matrix = np.empty((sc.n, dim), dtype=np.float32)

    write_s = 0.0
    for start in range(0, sc.n, WRITE_BATCH):
        m = min(WRITE_BATCH, sc.n - start)
        vecs = clustered(rng, m, dim, centers)
        matrix[start : start + m] = vecs
        recs = records_for(start, m, repos)
        t0 = time.perf_counter()
        store.write_memories(recs, vecs)
        write_s += time.perf_counter() - t0
    npy = workdir / "baseline.npy"
    t0 = time.perf_counter()
    np.save(npy, matrix)
    os.sync()
    npy_s = time.perf_counter() - t0
    npy.unlink()
    print(
        f"write: store {sc.n / write_s:,.0f} rows/s   | numpy .npy dump {sc.n / npy_s:,.0f} rows/s",
        flush=True,
    )

    t0 = time.perf_counter()
    if args.engine == "lance":
        built = [args.index_type] if store.ensure_index() else []
    else:
        built = [f"faiss IVF-Flat for {r}" for r in store.warm()]
    if built:
        print(f"index: {', '.join(built)} built in {time.perf_counter() - t0:.1f} s", flush=True)
    else:
        print(f"index: none (each repo <= {args.exact_max:,} rows: exact search)", flush=True)

    repo_rows = {r: np.flatnonzero(np.arange(sc.n) % sc.repos == i) for i, r in enumerate(repos)}
    repo_matrix = {r: (matrix if sc.repos == 1 else matrix[rows]) for r, rows in repo_rows.items()}
    lat_store: list[float] = []
    lat_numpy: list[float] = []
    recalls: list[float] = []
    for qi in range(args.warmup + args.queries):
        repo = repos[qi % sc.repos]
        rows = repo_rows[repo]
        # near a topic centre, like a PR query near a family of past findings
        q = centers[rng.integers(0, len(centers))] + rng.standard_normal(dim).astype(np.float32) * (
            4 / np.sqrt(dim)
        )
        q = (q / np.linalg.norm(q)).astype(np.float32)
        t0 = time.perf_counter()
        hits = store.retrieve_memories(q, repo, k)
        t1 = time.perf_counter()
        sub = repo_matrix[repo]
        d2 = np.einsum("ij,ij->i", sub, sub) - 2 * (sub @ q) + float(q @ q)
        top = np.argpartition(d2, min(k, len(d2) - 1))[:k]
        top = top[np.argsort(d2[top])]
        t2 = time.perf_counter()
        if qi < args.warmup:
            continue
        exact_ids = {int((rows[j] if sc.repos > 1 else j) + 1) for j in top}
        lat_store.append((t1 - t0) * 1000)
        lat_numpy.append((t2 - t1) * 1000)
        recalls.append(len(exact_ids & {h.memory_id for h in hits}) / k)
    del repo_matrix
    gc.collect()
    rss1 = rss_mb()
    print(
        f"query top_k={k}: store p50 {pct(lat_store, 50):.2f} ms  p99 {pct(lat_store, 99):.2f} ms"
        f"   | numpy brute force p50 {pct(lat_numpy, 50):.2f} ms  p99 {pct(lat_numpy, 99):.2f} ms"
        f"   ({args.queries} queries)",
        flush=True,
    )
    print(f"recall@{k} vs exact: mean {np.mean(recalls):.4f}  min {np.min(recalls):.2f}", flush=True)
    disk = sum(f.stat().st_size for f in uri.rglob("*") if f.is_file()) / 2**20
    print(
        f"memory: process RSS +{rss1 - rss0 - matrix.nbytes / 2**20:,.0f} MiB for the store (on disk {disk:,.0f} MiB)"
        f"   | numpy matrix {matrix.nbytes / 2**20:,.0f} MiB",
        flush=True,
    )
    store.close()
    del matrix
    shutil.rmtree(uri, ignore_errors=True)


# ---- ANN recall per distribution --------------------------------------------------------------------

Generator = Callable[[np.random.Generator, int, int, int], tuple[np.ndarray, np.ndarray]]
"""``(rng, rows, queries, dim)`` → ``(stored rows, queries)``, unit float32 vectors."""


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def mixture(rng: np.random.Generator, n: int, centres: np.ndarray, spread: float) -> np.ndarray:
    """Draws around random centres (per-dimension scale 1), each with its own width around ``spread``;
    generated in blocks to bound the float64 temporaries."""
    out = np.empty((n, centres.shape[1]), dtype=np.float32)
    for start in range(0, n, 65_536):
        m = min(65_536, n - start)
        scale = spread * rng.uniform(0.5, 1.5, (m, 1))
        noise = rng.standard_normal((m, centres.shape[1]), dtype=np.float32)
        out[start : start + m] = unit(centres[rng.integers(0, len(centres), m)] + scale * noise)
    return out


def gaussian(rng: np.random.Generator, n: int, basis: np.ndarray, noise: float) -> np.ndarray:
    """``z @ basis`` plus isotropic noise, in blocks."""
    rank, dim = basis.shape
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 65_536):
        m = min(65_536, n - start)
        x = rng.standard_normal((m, rank), dtype=np.float32) @ basis
        out[start : start + m] = unit(x + noise * rng.standard_normal((m, dim), dtype=np.float32))
    return out


def dist_tight(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    centres = rng.standard_normal((64, dim), dtype=np.float32)
    return mixture(rng, n, centres, 0.25), mixture(rng, q, centres, 0.25)


def dist_loose(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    centres = rng.standard_normal((1024, dim), dtype=np.float32)
    return mixture(rng, n, centres, 1.0), mixture(rng, q, centres, 1.0)


def dist_isotropic(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    basis = np.zeros((1, dim), dtype=np.float32)
    return gaussian(rng, n, basis, 1.0), gaussian(rng, q, basis, 1.0)


def dist_lowrank(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    basis = rng.standard_normal((16, dim), dtype=np.float32)
    return gaussian(rng, n, basis, 0.2), gaussian(rng, q, basis, 0.2)  # noise 1/20 of the signal


def dist_midpoints(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    stored = mixture(rng, n, rng.standard_normal((256, dim), dtype=np.float32), 0.5)
    return stored, unit(stored[rng.integers(0, n, q)] + stored[rng.integers(0, n, q)])


def dist_fresh(rng: np.random.Generator, n: int, q: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    stored = mixture(rng, n, rng.standard_normal((256, dim), dtype=np.float32), 0.5)
    sample = stored[rng.choice(n, min(n, 4096), replace=False)].astype(np.float64)
    centred = sample - sample.mean(axis=0)
    draws = sample.mean(axis=0) + rng.standard_normal((q, len(centred))) @ centred / np.sqrt(len(centred))
    return stored, unit(draws)


SYNTHETIC: dict[str, Generator] = {
    "tight": dist_tight,
    "loose": dist_loose,
    "isotropic": dist_isotropic,
    "lowrank": dist_lowrank,
    "midpoints": dist_midpoints,
    "fresh": dist_fresh,
}


def corpus_texts(limit: int) -> list[str]:
    """Unique lines (16-200 characters, whitespace collapsed) of this repository's commit messages, then
    of its tracked files, in a fixed order, at most ``limit``."""
    root = Path(__file__).resolve().parents[1]
    seen: dict[str, None] = {}

    def take(lines: list[str]) -> bool:
        for line in lines:
            text = " ".join(line.split())[:200]
            if len(text) >= 16:
                seen.setdefault(text, None)
                if len(seen) >= limit:
                    return True
        return False

    def git(*cmd: str) -> str:
        return subprocess.run(["git", "-C", str(root), *cmd], capture_output=True, text=True).stdout

    if not take(git("log", "--format=%B").splitlines()):
        for name in git("ls-files").split():
            try:
                text = (root / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if take(text.splitlines()):
                break
    return list(seen)


def minilm_vectors(texts: list[str], cache_dir: Path) -> np.ndarray:
    """all-MiniLM-L6-v2 vectors of ``texts``, from a per-text cache in ``cache_dir`` (only new texts are
    embedded, so commits made between runs cost little)."""
    from kodiai.learning.embeddings import LOCAL_DIMENSIONS, LocalEmbeddingProvider

    names, vectors_file = cache_dir / "minilm-texts.json", cache_dir / "minilm-vectors.npy"
    cached: dict[str, int] = {}
    stored = np.empty((0, LOCAL_DIMENSIONS), dtype=np.float32)
    if names.exists() and vectors_file.exists():
        cached = {t: i for i, t in enumerate(json.loads(names.read_text()))}
        stored = np.load(vectors_file)
    missing = [t for t in texts if t not in cached]
    if missing:
        print(
            f"minilm: embedding {len(missing):,} new texts ({len(texts) - len(missing):,} cached)", flush=True
        )
        provider = LocalEmbeddingProvider(engine="onnx")
        fresh = np.empty((len(missing), LOCAL_DIMENSIONS), dtype=np.float32)
        t0 = time.perf_counter()
        for start in range(0, len(missing), 2048):
            batch = provider.generate_many(missing[start : start + 2048], "document")
            if any(v is None for v in batch):
                raise RuntimeError("the local embedder failed (see the log)")
            fresh[start : start + len(batch)] = np.stack([v for v in batch if v is not None])
            print(
                f"  {start + len(batch):,} / {len(missing):,} in {time.perf_counter() - t0:.0f} s", flush=True
            )
        base = len(stored)
        stored = np.concatenate([stored, fresh])
        cached.update({t: base + i for i, t in enumerate(missing)})
        cache_dir.mkdir(parents=True, exist_ok=True)
        np.save(vectors_file, stored)
        names.write_text(json.dumps(sorted(cached, key=cached.__getitem__)))
    return stored[[cached[t] for t in texts]]


def minilm_data(args: argparse.Namespace, workdir: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Stored lines and held-out lines (the queries), shuffled with the seed."""
    texts = corpus_texts(args.minilm_texts)
    order = np.random.default_rng(args.seed).permutation(len(texts))
    vectors = minilm_vectors(texts, workdir / "minilm-cache")[order]
    return vectors[args.queries : args.queries + n], vectors[: args.queries]


@dataclass
class DistResult:
    dist: str
    rows: int
    dim: int
    recall: float
    setting: str
    calibration_recall: float | None
    p50: float
    p90: float
    exact_p50: float
    build_s: float
    baseline_recall: float | None


def run_distribution(
    name: str, stored: np.ndarray, queries: np.ndarray, args: argparse.Namespace, workdir: Path
) -> DistResult:
    """Store ``stored`` in one repo, build its index as the server does, and time ``queries``."""
    rows, dim = stored.shape
    k, repo = args.top_k, "bench/repo"
    uri = workdir / f"dist-{name}-{rows}"
    options = MemoryStoreOptions(
        exact_search_max_rows=args.exact_max,
        ann_nprobe=args.ann_nprobe,
        vector_cache_bytes=int(args.cache_gib * 2**30),
        index_check_every=10**12,
    )
    store = open_memory_store(str(uri), dimensions=dim, options=options)
    for start in range(0, rows, WRITE_BATCH):
        m = min(WRITE_BATCH, rows - start)
        store.write_memories(records_for(start, m, [repo]), stored[start : start + m])
    t0 = time.perf_counter()
    built = store.warm()
    build_s = time.perf_counter() - t0
    report = store.stats().ann.get(repo)
    setting = report.setting if report and built else f"exact (<= {args.exact_max:,} rows)"

    ids = np.arange(1, rows + 1)
    norms = np.einsum("ij,ij->i", stored, stored)
    truth, rounds = [], []
    for rnd in range(args.rounds):
        lat_store, lat_numpy = [], []
        for qi in range(-args.warmup if rnd == 0 else 0, len(queries)):
            q = queries[qi % len(queries)]
            t0 = time.perf_counter()
            hits = store.retrieve_memories(q, repo, k)
            t1 = time.perf_counter()
            d2 = norms - 2.0 * (stored @ q)
            top = np.argpartition(d2, k)[:k]
            t2 = time.perf_counter()
            if qi < 0:
                continue
            lat_store.append((t1 - t0) * 1000)
            lat_numpy.append((t2 - t1) * 1000)
            if rnd == 0:
                truth.append((ids[top], [h.memory_id for h in hits]))
        rounds.append((pct(lat_store, 50), pct(lat_store, 90), pct(lat_numpy, 50)))
    p50, p90, exact_p50 = sorted(rounds)[len(rounds) // 2]
    recall = recall_at(np.array([f for _, f in truth]), np.array([t for t, _ in truth]))
    baseline = None
    if args.baseline:  # the fixed setting used before calibration: IVF-Flat, 8 probes
        ivf = AnnIndex(ids, stored, nprobe=8)
        baseline = recall_at(ivf.candidate_ids(queries, k + 16), np.array([t for t, _ in truth]))
        del ivf
    store.close()
    del store
    gc.collect()
    shutil.rmtree(uri, ignore_errors=True)
    result = DistResult(
        name,
        rows,
        dim,
        recall,
        setting,
        report.recall if report else None,
        p50,
        p90,
        exact_p50,
        build_s,
        baseline,
    )
    print(
        f"{name:<10} {rows:>9,} x {dim:<4}  recall@{k} {recall:.3f}"
        f" (calibration {_fmt(result.calibration_recall, '.3f')}, fixed nprobe=8 {_fmt(baseline, '.3f')})"
        f"  {setting:<22} p50 {p50:.2f} ms  p90 {p90:.2f} ms  | exact numpy p50 {exact_p50:.2f} ms"
        f"  (ratio {p50 / exact_p50:.2f})  build {build_s:.1f} s",
        flush=True,
    )
    if report and report.tried:
        print(f"{'':<12}calibration: {'; '.join(report.tried)}", flush=True)
    return result


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def run_distributions(args: argparse.Namespace, workdir: Path) -> list[DistResult]:
    sizes = [int(s) for s in args.dist_sizes.split(",") if s.strip()] + ([1_000_000] if args.large else [])
    results = []
    for name in (d.strip() for d in args.dists.split(",") if d.strip()):
        for size in sizes:
            rng = np.random.default_rng(args.seed + size)
            if name == "minilm":
                stored, queries = minilm_data(args, workdir, size)
            else:
                stored, queries = SYNTHETIC[name](rng, size, args.queries, args.dim)
            results.append(run_distribution(name, stored, queries, args, workdir))
            del stored, queries
            gc.collect()
    return results


def print_summary(results: list[DistResult], k: int) -> None:
    print(
        f"\n| distribution | rows × dim | recall@{k} | fixed nprobe=8 | chosen setting | p50 / p90 ms"
        " | exact numpy p50 ms | p50 / exact | build s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.dist} | {r.rows:,} × {r.dim} | {r.recall:.3f} | {_fmt(r.baseline_recall, '.3f')} | {r.setting}"
            f" | {r.p50:.2f} / {r.p90:.2f} | {r.exact_p50:.2f} | {r.p50 / r.exact_p50:.2f} | {r.build_s:.1f} |"
        )


def run_embed(args: argparse.Namespace) -> None:
    """Local all-MiniLM-L6-v2 throughput: the default onnxruntime engine (graph built without torch) next
    to sentence-transformers (torch) when that optional extra is installed, on the same texts, alternating
    engines over ``--embed-rounds`` rounds (median reported)."""
    import importlib.util

    from kodiai.learning.embeddings import LocalEmbeddingProvider

    texts = [
        f"[major] [correctness] Possible null dereference of result #{i}\nFile: src/module_{i % 50}.ts"
        for i in range(args.embed_texts)
    ]
    engines = {"onnx": LocalEmbeddingProvider(engine="onnx")}
    if importlib.util.find_spec("sentence_transformers") is not None:
        engines["torch"] = LocalEmbeddingProvider(engine="torch")
    else:
        print("(sentence-transformers not installed: the torch baseline is skipped)")
    rates: dict[str, list[float]] = {name: [] for name in engines}
    for provider in engines.values():
        provider.generate_many(texts[:64], "document")  # load + warm up
    for _ in range(args.embed_rounds):
        for name, provider in engines.items():
            t0 = time.perf_counter()
            out = provider.generate_many(texts, "document")
            rates[name].append(len(texts) / (time.perf_counter() - t0))
            assert all(v is not None for v in out)
    single = {}
    for name, provider in engines.items():
        t0 = time.perf_counter()
        for text in texts[:50]:
            provider.generate(text, "query")
        single[name] = (time.perf_counter() - t0) / 50 * 1000
    print(f"\n=== local embedding (all-MiniLM-L6-v2, {os.cpu_count()} CPUs, {len(texts)} short texts) ===")
    for name in engines:
        runs = ", ".join(f"{r:,.0f}" for r in rates[name])
        print(
            f"{name:<5}: median {np.median(rates[name]):,.0f} texts/s (rounds: {runs})   "
            f"single query {single[name]:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dists",
        default=",".join([*SYNTHETIC, "minilm"]),
        help="distributions for the ANN recall section, comma-separated ('' = none)",
    )
    parser.add_argument("--dist-sizes", default="100000", help="rows per distribution, comma-separated")
    parser.add_argument("--large", action="store_true", help="also run every distribution at 1M rows")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per distribution (median kept)")
    parser.add_argument("--minilm-texts", type=int, default=51_000, help="lines embedded for minilm")
    parser.add_argument(
        "--no-baseline", dest="baseline", action="store_false", help="skip the fixed nprobe=8 comparison"
    )
    parser.add_argument("--sizes", default="", help="store scenarios: single-repo sizes ('' = none)")
    parser.add_argument("--multi", default="", help="store scenarios: N:REPOS, comma-separated ('' = none)")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--clusters", type=int, default=64)
    parser.add_argument("--exact-max", type=int, default=MemoryStoreOptions().exact_search_max_rows)
    parser.add_argument("--engine", choices=["faiss", "lance"], default=MemoryStoreOptions().ann_engine)
    parser.add_argument("--ann-nprobe", type=int, default=MemoryStoreOptions().ann_nprobe)
    parser.add_argument(
        "--cache-gib",
        type=float,
        default=MemoryStoreOptions().vector_cache_bytes / 2**30,
        help="in-memory vector cache budget (GiB)",
    )
    parser.add_argument("--index-type", default=MemoryStoreOptions().index_type)
    parser.add_argument("--nprobes", type=int, default=MemoryStoreOptions().nprobes)
    parser.add_argument(
        "--refine", type=int, default=None, help="refine factor (default: none for HNSW_SQ, 10 for PQ)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed", action="store_true", help="also measure local embedding throughput")
    parser.add_argument("--embed-texts", type=int, default=1000)
    parser.add_argument("--embed-rounds", type=int, default=5)
    parser.add_argument(
        "--workdir", default=None, help="where the LanceDB directories go (default: a temp dir)"
    )
    args = parser.parse_args()

    scenarios = [Scenario(int(s), 1) for s in args.sizes.split(",") if s.strip()]
    for item in (m for m in args.multi.split(",") if m.strip()):
        n, r = item.split(":")
        scenarios.append(Scenario(int(n), int(r)))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="kodiai-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"kodiai retrieval benchmark: {os.cpu_count()} CPUs, engine {args.engine} "
        f"(faiss nprobe {args.ann_nprobe}, cache {args.cache_gib:g} GiB; lance {args.index_type} nprobes "
        f"{args.nprobes}, refine {args.refine or 'default'}), exact search up to {args.exact_max:,} rows/repo"
    )
    try:
        results = run_distributions(args, workdir)
        if results:
            print_summary(results, args.top_k)
        for sc in scenarios:
            run_scenario(sc, args, workdir)
        if args.embed:
            run_embed(args)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
