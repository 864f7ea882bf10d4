"""Learned-memory retrieval benchmark: LanceDB store vs an exact numpy brute-force scan, same run.

For each scenario (N memories of D dims in one repo, or spread over R repos) it prints:
- write throughput of ``write_memories`` (batches) next to writing the same float32 matrix to a .npy file;
- the ANN index build time (when the repo outgrows exact search): the in-memory faiss IVF-Flat
  (``--engine faiss``, the default) or LanceDB's own index (``--engine lance``);
- p50/p99 latency of ``retrieve_memories(top_k)`` next to a numpy brute-force scan of the same rows;
- recall@k of the store against the exact answer;
- memory: process RSS growth while the store is open and queried, next to the numpy matrix size;
and, with ``--embed``, local all-MiniLM-L6-v2 throughput on short texts.

    .venv/bin/python benchmarks/retrieval.py --sizes 10000,100000 --multi 100000:50 --embed
    .venv/bin/python benchmarks/retrieval.py --sizes 1000000 --multi "" --queries 100
    .venv/bin/python benchmarks/retrieval.py --sizes 100000 --multi "" --engine lance

Vectors are synthetic unit vectors in topic clusters (queries are near a cluster, like real PR queries),
generated from a fixed seed.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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
        "--sizes", default="10000,100000", help="single-repo sizes, comma-separated ('' = none)"
    )
    parser.add_argument("--multi", default="100000:50", help="N:REPOS scenarios, comma-separated ('' = none)")
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
    print(
        f"kodiai retrieval benchmark: {os.cpu_count()} CPUs, engine {args.engine} "
        f"(faiss nprobe {args.ann_nprobe}, cache {args.cache_gib:g} GiB; lance {args.index_type} nprobes "
        f"{args.nprobes}, refine {args.refine or 'default'}), exact search up to {args.exact_max:,} rows/repo"
    )
    try:
        for sc in scenarios:
            run_scenario(sc, args, workdir)
        if args.embed:
            run_embed(args)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
