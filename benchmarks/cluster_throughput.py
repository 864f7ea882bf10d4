"""Scale-out benchmark: reviews per minute with 1, 2 and 4 ``kodiai serve --role worker`` processes, and the
webhook ack latency of a ``--role web`` replica on PostgreSQL next to the SQLite default, in one run.

Throughput: for each worker count, a fresh database on one PostgreSQL server (started here, durable:
``fsync`` on), one ``--role web`` replica and N ``--role worker`` replicas (each ``WORKER_CONCURRENCY``
jobs at once), the fake GitHub (REST + git over smart HTTP) and the fake model answering every call after
``--think`` seconds (2 s by default) behind the real Claude Code CLI in its sandbox. 10 installations with
``--prs`` PRs each (PR 1: one finding, three model calls; the others: approved after one call) are
delivered at once through the web replica; the clock runs from the first delivery to the last job done in
``delivery_journal``. ``cpu-s/review`` is the CPU of everything that works for the reviews (the replicas
and their children: the CLI, git; PostgreSQL; this process: the fakes and the sender) over that interval.
The learned memory is off (``EMBEDDING_PROVIDER=none``): its cost is the embedding of a finding.

Ack latency: the lean keep-alive sender of ``benchmarks/webhook.py`` posts real ``pull_request.opened``
bodies (draft PRs: the review's job ends at once, so the measurement is the intake path) to the first
run's ``--role web`` replica on PostgreSQL (journal + defer in one transaction before the 200; its worker
runs the jobs meanwhile) and then to ``kodiai serve`` all-in-one on SQLite (the default; it runs them
in-process), same load. ``cpu ms/req``: the CPU per delivery of every process involved (web, worker and
PostgreSQL; the one process on SQLite).

    .venv/bin/python benchmarks/cluster_throughput.py                       # workers 1 2 4, concurrency 1 and 4
    .venv/bin/python benchmarks/cluster_throughput.py --workers 1 2 --concurrency 4 --prs 5
    .venv/bin/python benchmarks/cluster_throughput.py --smoke               # seconds, for the test suite
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import webhook  # noqa: E402  (benchmarks/webhook.py: the ack sender)
from cluster.cluster_stack import (  # noqa: E402
    BASE_FILES,
    FINDING_FILES,
    Cluster,
    Delivery,
    Tenant,
    journal,
    tree_cpu_seconds,
    wait_until,
)
from e2e.stack import SECRET  # noqa: E402
from support import postgres as pg_support  # noqa: E402
from support.gitrepo import BareRepo  # noqa: E402
from support.kodiai_process import KodiaiProcess  # noqa: E402

INSTALLATIONS = 10
webhook.SECRET = SECRET  # its sender signs with the replicas' secret


@dataclass
class Throughput:
    workers: int
    concurrency: int
    reviews: int
    seconds: float
    cpu: float

    @property
    def per_minute(self) -> float:
        return self.reviews / self.seconds * 60


# ----------------------------------------------------------------------------- helpers
def own_cpu_seconds() -> float:
    """This process and the children it reaped (git http-backend for the fake GitHub's clones)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def cpu_now(procs: list[KodiaiProcess], postmaster: int) -> float:
    return (
        sum(tree_cpu_seconds(p.proc.pid) for p in procs if p.proc is not None)
        + tree_cpu_seconds(postmaster)
        + own_cpu_seconds()
    )


@contextmanager
def durable_postgres() -> Iterator[pg_support.PostgresServer]:
    """A PostgreSQL server as an operator runs one: ``fsync`` and ``synchronous_commit`` on (the test
    fixture turns them off)."""
    saved = pg_support.SERVER_OPTIONS
    pg_support.SERVER_OPTIONS = "-c max_connections=200 -c shared_buffers=64MB -c log_min_messages=warning"
    try:
        server = pg_support.PostgresServer.start()
    finally:
        pg_support.SERVER_OPTIONS = saved
    try:
        yield server
    finally:
        server.stop()


def review_tenants(cluster: Cluster, root: Path, count: int, prs: int) -> list[Tenant]:
    """``count`` installations with ``prs`` opened PRs each (PR 1 with a finding)."""
    tenants = []
    for i in range(count):
        installation = 201 + i
        owner, name = f"org{installation}", f"svc{installation}"
        cluster.fake.add_installation(installation, account=owner)
        cluster.fake.add_repo(owner, name, installation_id=installation)
        cluster.state.set_permission(owner, name, "alice", "write")
        repo = BareRepo(root, owner, name)
        tenant = Tenant(installation, owner, name, repo, repo.commit(BASE_FILES, "base"))
        for number in range(1, prs + 1):
            files = FINDING_FILES if number == 1 else {f"docs/n{number}.md": f"Note {number}.\n"}
            tenant.open_pr(cluster.state, number, files)
        tenants.append(tenant)
    return tenants


def post_all(web: KodiaiProcess, deliveries: list[Delivery]) -> None:
    import httpx

    with httpx.Client(timeout=30) as client:
        for d in deliveries:
            status = client.post(
                f"{web.url}/webhooks/github", content=d.body, headers=d.headers()
            ).status_code
            if status != 200:
                raise RuntimeError(f"delivery {d.id} answered {status}")


# ----------------------------------------------------------------------------- throughput
def throughput(
    server: pg_support.PostgresServer,
    installations: int,
    workers: int,
    concurrency: int,
    prs: int,
    think: float,
    poll: float | None,
    ack: tuple[int, int] | None = None,
) -> tuple[Throughput, dict[str, Any] | None]:
    """One run; with ``ack`` (requests, clients), then the ack latency of its web replica (its worker
    running the acknowledged deliveries' jobs meanwhile, as the all-in-one process does)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-cluster-{workers}w-"))
    url = server.url(server.create_database())
    env = {
        "DATABASE_URL": url,
        "EMBEDDING_PROVIDER": "none",
        "WORKER_CONCURRENCY": str(concurrency),
        "REVIEW_CONCURRENCY": str(concurrency),
        "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "warn"),
        **({"WORKER_POLL_SECONDS": str(poll)} if poll is not None else {}),
    }
    cluster = Cluster(tmp, env, think=(think, think))
    try:
        tenants = review_tenants(cluster, tmp / "git", installations, prs)
        names = ["web", *(f"worker{i}" for i in range(1, workers + 1))]
        cluster.process("web", "web")
        for name in names[1:]:
            cluster.process(name, "worker")
        cluster.start(names)
        procs = [cluster.procs[n] for n in names]
        postmaster = int((server.datadir / "postmaster.pid").read_text().split()[0])
        deliveries = [d for k in range(prs) for t in tenants for d in t.deliveries[k : k + 1]]
        cpu0, t0 = cpu_now(procs, postmaster), time.monotonic()
        post_all(cluster.procs["web"], deliveries)
        ids = {d.id for d in deliveries}
        wait_until(
            lambda: sum(1 for d, r in journal(url).items() if d in ids and r[2] == "done") == len(ids),
            900,
            "every review done",
            0.2,
        )
        seconds, cpu = time.monotonic() - t0, cpu_now(procs, postmaster) - cpu0
        statuses = {r[2] for r in journal(url).values()}
        assert statuses == {"done"}, statuses
        others = (postmaster, *(p.proc.pid for p in procs[1:] if p.proc is not None))
        acks = ack_latency(procs[0], *ack, others) if ack is not None else None
        return Throughput(workers, concurrency, len(deliveries), seconds, cpu), acks
    finally:
        cluster.close()


# ----------------------------------------------------------------------------- ack latency
def draft_bodies() -> list[bytes]:
    """The real ``pull_request.opened`` fixture as a draft PR (the review's job ends at once), one body
    template per installation lane (webhook.py makes each request's body unique)."""
    data = json.loads(webhook.payload())
    data["pull_request"]["draft"] = True
    return webhook.with_installations(json.dumps(data).encode())


def ack_latency(
    proc: KodiaiProcess, requests: int, concurrency: int, others: tuple[int, ...] = ()
) -> dict[str, Any]:
    """p50/p99 of the acknowledgements; ``cpu_ms``: CPU per delivery of ``proc`` and ``others`` (pids:
    PostgreSQL, the workers) over the measured load."""
    bodies = draft_bodies()
    asyncio.run(webhook.load(proc.port, bodies, min(100, requests), concurrency))  # warm-up
    pids = (proc.proc.pid if proc.proc else 0, *others)
    cpu0 = sum(tree_cpu_seconds(pid) for pid in pids)
    result = asyncio.run(webhook.load(proc.port, bodies, requests, concurrency))
    result["cpu_ms"] = (sum(tree_cpu_seconds(pid) for pid in pids) - cpu0) / requests * 1000
    return result


def sqlite_ack(requests: int, concurrency: int) -> dict[str, Any]:
    """The ack latency of ``kodiai serve`` all-in-one on SQLite (the default)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-ack-"))
    cluster = Cluster(tmp, {"EMBEDDING_PROVIDER": "none", "LOG_LEVEL": "warn"}, think=(0.0, 0.0))
    try:
        proc = cluster.process("sqlite-all", None)
        proc.start(timeout=180)
        return ack_latency(proc, requests, concurrency)
    finally:
        cluster.close()


# ----------------------------------------------------------------------------- report
def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 4], help="WORKER_CONCURRENCY values"
    )
    parser.add_argument("--installations", type=int, default=INSTALLATIONS)
    parser.add_argument("--prs", type=int, default=3, help="PRs per installation")
    parser.add_argument("--think", type=float, default=2.0, help="seconds per model call")
    parser.add_argument("--poll", type=float, default=None, help="WORKER_POLL_SECONDS (default: Kodiai's)")
    parser.add_argument("--ack-requests", type=int, default=2000)
    parser.add_argument("--ack-concurrency", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="a tiny run (seconds): 1 worker, 1 PR each")
    args = parser.parse_args()
    if args.smoke:
        args.installations, args.workers, args.concurrency, args.prs, args.think = 3, [1], [2], 1, 0.2
        args.ack_requests, args.ack_concurrency = 60, 4
    cores = os.cpu_count() or 1
    print(
        f"host: {cores} cores, load average {os.getloadavg()[0]:.1f} at the start; {args.installations} "
        f"installations x {args.prs} PRs; model {args.think:g} s per call (PR 1: 3 calls, others: 1); "
        f"worker poll {args.poll if args.poll is not None else 'default'}"
    )
    with durable_postgres() as server:
        results: list[Throughput] = []
        acks: dict[str, dict[str, Any]] = {}
        for concurrency in args.concurrency:
            for workers in args.workers:
                ack = None if acks else (args.ack_requests, args.ack_concurrency)
                done, web_ack = throughput(
                    server, args.installations, workers, concurrency, args.prs, args.think, args.poll, ack
                )
                results.append(done)
                if web_ack is not None:
                    acks[f"web on PostgreSQL (+{workers} worker)"] = web_ack
                print(f"  {workers} worker(s) x {concurrency}: {done.per_minute:.1f} reviews/min", flush=True)
        print(f"\n{'workers':>7} {'conc.':>5} {'reviews':>7} {'seconds':>8} {'reviews/min':>11} {'x 1 worker':>10} "
              f"{'cpu-s/review':>12} {'cores':>5}")  # fmt: skip
        for r in results:
            base = next(
                b for b in results if b.concurrency == r.concurrency and b.workers == min(args.workers)
            )
            print(
                f"{r.workers:>7} {r.concurrency:>5} {r.reviews:>7} {r.seconds:>8.1f} {r.per_minute:>11.1f} "
                f"{r.per_minute / base.per_minute:>10.2f} {r.cpu / r.reviews:>12.2f} {cores:>5}"
            )
        cpu_per_review = statistics.median(r.cpu / r.reviews for r in results)
        print(
            f"CPU ceiling on this host: {cores} cores / {cpu_per_review:.2f} cpu-s per review = "
            f"{cores / cpu_per_review * 60:.0f} reviews/min, whatever the number of workers"
        )
    acks["all-in-one on SQLite"] = sqlite_ack(args.ack_requests, args.ack_concurrency)
    print(f"\nwebhook ack, {args.ack_requests} deliveries, {args.ack_concurrency} keep-alive clients")
    print(f"{'server':<30} {'deliv/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'cpu ms/req':>10}")
    for label, a in acks.items():
        print(
            f"{label:<30} {a['rps']:>8.0f} {a['p50_ms']:>7.1f} {a['p99_ms']:>7.1f} {a['errors']:>6} "
            f"{a['cpu_ms']:>10.2f}"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes on the host share the cores)")
    return 0 if all(a["errors"] == 0 for a in acks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
