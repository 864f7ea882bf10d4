"""Dashboard benchmark: server time per page on a database with 100k retrievals, beside a baseline.

Seeds SQLite stores (the real migrations) with ``--retrievals`` reviews, one retrieval each, over 90 days and
20 repositories: ``retrieval_quality`` rows, reviews with two findings each, ``retrieval_hits`` (a pool of 5,
2 kept), a reaction on every tenth review (synced about a day later), a finding of every seventh review fixed
by a later push (``resolved_findings``), and 2,000 job-journal rows; then folds the past days into the
dashboard's rollups, as the stores' first write of a day does (the time is printed). Then it asks each page
through the real ASGI app in this process (no network: the time is the server's — queries, Jinja, SVG) as the
operator (every repository, the worst case) and as a signed-in user with write access to 5 repositories, and
prints per page:

- **cold**: the first request of each page in a fresh process (``--cold-rounds`` processes per page and
  viewer, median and worst): new connections with empty SQLite page caches, nothing cached in Python — what a
  request right after ``kodiai serve`` starts costs (the templates compile when the dashboard is mounted, at
  start-up);
- **warm** p50/p95 (and this process's CPU) of the ``--rounds`` requests after it;

next to a baseline measured the same way in the same run: ``SELECT count(*) FROM retrieval_quality`` on the
same read-only connection.

    .venv/bin/python benchmarks/dashboard.py                      # 100k retrievals, 30-day range, 20 rounds
    .venv/bin/python benchmarks/dashboard.py --retrievals 20000 --rounds 10 --range 90d
    .venv/bin/python benchmarks/dashboard.py --data /tmp/dash100k   # seed once, measure again later
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from pydantic import SecretStr

from kodiai.dashboard.options import DashboardOptions
from kodiai.dashboard.scope import Access
from kodiai.dashboard.web import mount
from kodiai.log import get_logger
from kodiai.storage.database import SqliteDatabase
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.opening import open_migrated
from kodiai.storage.rollups import seal_knowledge, seal_telemetry

TOKEN = "benchmark-operator-token"
REPOS = [f"org/repo{i:02d}" for i in range(20)]
METHODS = ["adaptive", "percentile", "configured", "abstain", "rank:kept"]


def seed(tmp: Path, retrievals: int) -> None:
    rng = random.Random(28)
    now = datetime.now(UTC)

    def at(i: int) -> str:  # review i's time: the oldest first, so ids grow with time as they do in service
        back = retrievals - 1 - min(i, retrievals - 1)
        return (now - timedelta(seconds=int(90 * 86400 * back / retrievals))).strftime("%Y-%m-%d %H:%M:%S")

    quality, runs, reviews, findings, hits, reactions, resolved = [], [], [], [], [], [], []
    day = max(1, retrievals // 90)  # reviews per day: a reaction is synced about a day after its review
    for i in range(retrievals):
        repo, pr, when = REPOS[i % 20], i // 20, at(i)
        kept = rng.choice([0, 0, 1, 2, 3])
        quality.append((when, f"d{i}", repo, pr, kept, rng.choice(METHODS), kept))
        failed = rng.random() < 0.05
        runs.append(
            (
                when,
                f"d{i}",
                repo,
                pr,
                rng.randint(20_000, 400_000),
                rng.random(),
                "failure" if failed else "success",
            )
        )
        reviews.append((i + 1, when, repo, pr, f"d{i}"))
        for f in range(2):
            findings.append(
                (i + 1, when, ("critical", "major", "minor")[(i + f) % 3], f"Finding {i}-{f}", 2 * i + f)
            )
        pool = {rng.randrange(i) for _ in range(5)} if i else set()
        for rank, memory in enumerate(sorted(pool)):
            hits.append(
                (
                    when,
                    f"d{i}",
                    repo,
                    pr,
                    memory,
                    2 * memory,
                    REPOS[memory % 20],
                    int(rank < 2),
                    rank + 1 if rank < 2 else None,
                )
            )
        if i % 10 == 0:
            reactions.append((at(i + day), repo, i + 1, 2 * i, i, "+1" if rng.random() > 0.3 else "-1"))
        if (
            i % 7 == 3 and i + 20 < retrievals
        ):  # its first finding (findings.id 2 i + 1) fixed by a later review
            resolved.append((at(i + 20), 2 * i + 1, i + 21, repo, pr))
    for name, rows, sql in (
        (
            "telemetry",
            quality,
            "INSERT INTO retrieval_quality (created_at, delivery_id, repo, pr_number, event_type, top_k, distance_threshold,"
            " result_count, avg_distance, threshold_method, candidate_count, confidence_high, confidence_medium,"
            " confidence_low) VALUES (?, ?, ?, ?, 'pull_request', 5, 0.3, ?, 0.2, ?, 5, ?, 0, 0)",
        ),
        (
            "telemetry",
            runs,
            "INSERT INTO executions (created_at, delivery_id, repo, pr_number, event_type, model, duration_ms, cost_usd,"
            " conclusion) VALUES (?, ?, ?, ?, 'pull_request.opened', 'm', ?, ?, ?)",
        ),
        (
            "knowledge",
            reviews,
            "INSERT INTO reviews (id, created_at, repo, pr_number, delivery_id, findings_total, conclusion, config_snapshot)"
            " VALUES (?, ?, ?, ?, ?, 2, 'success', '{}')",
        ),
        (
            "knowledge",
            findings,
            "INSERT INTO findings (review_id, created_at, file_path, severity, category, confidence, title, comment_id)"
            " VALUES (?, ?, 'a.py', ?, 'correctness', 70, ?, ?)",
        ),
        (
            "knowledge",
            hits,
            "INSERT INTO retrieval_hits (created_at, delivery_id, repo, pr_number, memory_id, finding_id, source_repo,"
            " outcome, distance, adjusted_distance, kept, kept_rank) VALUES (?, ?, ?, ?, ?, ?, ?, 'accepted', 0.2, 0.2, ?, ?)",
        ),
        (
            "knowledge",
            reactions,
            "INSERT INTO feedback_reactions (created_at, repo, review_id, finding_id, comment_id, comment_surface,"
            " reaction_id, reaction_content, reactor_login, severity, category, file_path, title)"
            " VALUES (?, ?, ?, 1, ?, 'pull_request_review_comment', ?, ?, 'u', 'major', 'c', 'a.py', 't')",
        ),
        (
            "knowledge",
            resolved,
            "INSERT INTO resolved_findings (created_at, finding_id, review_id, repo, pr_number) VALUES (?, ?, ?, ?, ?)",
        ),
    ):
        db = open_migrated(tmp / f"{name}.db", name)
        try:
            with db.transaction() as tx:
                tx._conn.executemany(sql, rows)  # type: ignore[attr-defined]  # one transaction, SQLite's bulk path
        finally:
            db.close()
    jobs = open_migrated(tmp / "jobs.db", "jobs")
    try:
        with jobs.transaction() as tx:
            tx._conn.executemany(  # type: ignore[attr-defined]
                "INSERT INTO delivery_journal (delivery_id, event_name, installation_id, status, attempts, received_at)"
                " VALUES (?, 'pull_request', ?, ?, 1, ?)",
                [
                    (f"j{i}", i % 5, ("done", "dead", "pending", "failed")[i % 4], at(retrievals - 1 - i))
                    for i in range(2000)
                ],
            )
    finally:
        jobs.close()


def fold(tmp: Path) -> float:
    """Fold every past day into the rollups (what the stores' first write of a day does; on an upgraded
    database the first fold also takes the whole history): seconds taken."""
    start = time.perf_counter()
    for name, seal in (("telemetry", seal_telemetry), ("knowledge", seal_knowledge)):
        db = SqliteDatabase.open(tmp / f"{name}.db")
        try:
            seal(db)
        finally:
            db.close()
    return time.perf_counter() - start


async def measure(
    app: FastAPI, path: str, headers: dict[str, str], rounds: int
) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per request (CPU: this process's, all threads — what the request cost
    whatever else the machine was running)."""
    walls, cpus = [], []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        for _ in range(rounds):
            start, cpu = time.perf_counter(), time.process_time()
            response = await client.get(path, headers=headers)
            walls.append((time.perf_counter() - start) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            assert response.status_code == 200, (path, response.status_code)
    return walls, cpus


def row(name: str, times: tuple[list[float], list[float]], cold: list[float]) -> str:
    walls, cpus = times
    p95 = statistics.quantiles(walls, n=20)[-1] if len(walls) > 1 else walls[0]
    cpu95 = statistics.quantiles(cpus, n=20)[-1] if len(cpus) > 1 else cpus[0]
    warm = f"{statistics.median(walls):>8.1f} {p95:>8.1f} {statistics.median(cpus):>8.1f} {cpu95:>8.1f}"
    cold_text = f"{statistics.median(cold):>9.1f} {max(cold):>9.1f}" if cold else f"{'':>9} {'':>9}"
    return f"{name:<30} {cold_text} {warm}"


Viewers = dict[str, dict[str, str]]


def fresh_app(tmp: Path, knowledge: KnowledgeStore) -> tuple[FastAPI, Any, Viewers]:
    """A newly mounted dashboard: its own connections, template environment and (empty) caches."""
    app = FastAPI()
    state = mount(
        app,
        DashboardOptions(token=SecretStr(TOKEN), access_cache_seconds=10**9),  # no GitHub here
        telemetry=str(tmp / "telemetry.db"),
        knowledge=knowledge,
        knowledge_target=str(tmp / "knowledge.db"),
        jobs=str(tmp / "jobs.db"),
        memory=None,
        pg_journal=None,
        log=get_logger("bench"),
    )
    assert state is not None
    access = Access("writer", repos=frozenset(REPOS[:5]), installations=frozenset({0, 1}))
    user = state.sessions.create("writer", operator=False, access=access)
    viewers = {
        "operator": {"Authorization": f"Bearer {TOKEN}"},
        "user (5 repos)": {"Cookie": f"kodiai_dashboard={state.signer.session_cookie(user)}"},
    }
    return app, state, viewers


def cold_request(tmp: Path, path: str, who: str) -> float:
    """Milliseconds of ``path``'s first request in a new process (this script with ``--cold-one``)."""
    out = subprocess.run(
        [sys.executable, __file__, "--data", str(tmp), "--cold-one", path, "--viewer", who],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


async def cold_one(tmp: Path, path: str, who: str) -> None:
    knowledge = KnowledgeStore(tmp / "knowledge.db")
    app, state, viewers = fresh_app(tmp, knowledge)
    walls, _cpu = await measure(app, path, viewers[who], 1)
    await state.aclose()
    knowledge.close()
    print(f"{walls[0]:.3f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--retrievals", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--cold-rounds", type=int, default=5, help="fresh mounts per page for the cold figure"
    )
    parser.add_argument("--range", default="30d", choices=["1d", "7d", "30d", "90d"])
    parser.add_argument("--data", type=Path, help="keep the seeded stores here (seeded once, reused after)")
    parser.add_argument("--cold-one", help=argparse.SUPPRESS)
    parser.add_argument("--viewer", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_one:
        await cold_one(args.data, args.cold_one, args.viewer)
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = args.data or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        if not (tmp / "knowledge.db").exists():
            start = time.perf_counter()
            seed(tmp, args.retrievals)
            print(f"seeded {args.retrievals:,} retrievals in {time.perf_counter() - start:.1f} s")
        print(f"folded the past days into the rollups in {fold(tmp):.2f} s")
        knowledge = KnowledgeStore(tmp / "knowledge.db")
        paths = [
            f"/dashboard/{page}?range={args.range}" for page in ("overview", "retrieval", "memory", "jobs")
        ]
        paths.append(f"/dashboard/quiet?repo={REPOS[1]}&pr=7")
        cold: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.cold_rounds):
            for path in paths:
                for who in ("operator", "user (5 repos)"):
                    cold.setdefault((who, path), []).append(cold_request(tmp, path, who))
        app, state, viewers = fresh_app(tmp, knowledge)
        baseline_db = state.sources.telemetry
        base: tuple[list[float], list[float]] = ([], [])
        for _ in range(args.rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            baseline_db.fetch_one("SELECT count(*) FROM retrieval_quality")
            base[0].append((time.perf_counter() - t0) * 1000)
            base[1].append((time.process_time() - c0) * 1000)
        print(
            f"{'range ' + args.range:<30} {'cold p50':>9} {'cold max':>9}"
            f" {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} {'cpu p95':>8}"
        )
        print(row("baseline: SELECT count(*)", base, []))
        for who, headers in viewers.items():
            for path in paths:
                await measure(app, path, headers, 1)  # this app's first request: counted as cold above
                times = await measure(app, path, headers, args.rounds)
                page = path.split("/")[2].split("?")[0]
                print(row(f"{who}: {page}", times, cold[(who, path)]))
        await state.aclose()
        knowledge.close()


if __name__ == "__main__":
    asyncio.run(main())
