"""Soak: ``kodiai serve`` under a steady mix of deliveries for a long time; WAL, RSS and open files must stay flat.

A real ``kodiai serve`` process (its built-in handlers plus ``tests/server/storm_handlers.py``) runs beside a
fake GitHub on loopback. This process posts at a steady rate, round-robin over:

- ``issues.opened`` with work: a job on the installation's lane that reads the issue's comments on the fake
  GitHub and posts one marked comment (5 installations);
- the previous delivery again (a duplicate id), and an earlier body under a new id (a replay);
- ``push`` (no handler: acknowledged, journaled as ignored), and a bad signature (401).

Every ``--sample`` seconds it prints the journal's WAL size, the server's RSS, its open file descriptors and
the deliveries still open in the journal (a backlog that keeps growing means the rate is above what the
lanes can run on this machine), then start/end/max of each. At the end the server is stopped with SIGTERM and every acknowledged delivery
with work is checked: done in the journal, its comment posted exactly once.

    .venv/bin/python benchmarks/soak.py                  # 10 minutes at 10 deliveries/s
    .venv/bin/python benchmarks/soak.py --seconds 60 --rate 50
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kodiai.webhook.signature import sign  # noqa: E402
from server.storm_handlers import REPO, marker  # noqa: E402
from support.fake_github import FakeGitHub  # noqa: E402
from support.fake_github_pr import PrState, install_pr_routes  # noqa: E402
from support.kodiai_process import KodiaiServe  # noqa: E402
from support.live_server import SECRET  # noqa: E402

INSTALLATIONS = 5
OWNER, NAME = REPO.split("/")


@dataclass
class Load:
    sent: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    work: dict[str, int] = field(default_factory=dict)  # acknowledged delivery with work → issue number
    lock: threading.Lock = field(default_factory=threading.Lock)


def post(http: httpx.Client, url: str, body: bytes, delivery: str, event: str, *, good: bool = True) -> int:
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(SECRET if good else "not-the-secret-at-all", body),
        "User-Agent": "GitHub-Hookshot/soak",
    }
    return http.post(url, content=body, headers=headers).status_code


def one(http: httpx.Client, url: str, i: int, load: Load) -> None:
    """Delivery ``i`` of the round-robin mix (see the module docstring)."""
    kind = i % 10
    work_body = json.dumps(
        {
            "action": "opened",
            "installation": {"id": 1 + i % INSTALLATIONS},
            "issue": {"number": i},
            "sender": {"login": "soak", "type": "User"},
        }
    ).encode()
    try:
        if kind < 6:  # work
            status = post(http, url, work_body, f"soak-{i}", "issues")
            if status == 200:
                with load.lock:
                    load.work[f"soak-{i}"] = i
        elif kind == 6:  # the previous delivery again (same id, same body): a duplicate
            previous = json.loads(work_body)
            previous["installation"]["id"] = 1 + (i - 1) % INSTALLATIONS
            previous["issue"]["number"] = i - 1
            status = post(http, url, json.dumps(previous).encode(), f"soak-{i - 1}", "issues")
        elif kind == 7:  # an earlier body under a new delivery id: a replay
            previous = json.loads(work_body)
            previous["installation"]["id"] = 1 + (i - 2) % INSTALLATIONS
            previous["issue"]["number"] = i - 2
            status = post(http, url, json.dumps(previous).encode(), f"soak-replay-{i}", "issues")
        elif kind == 8:  # no handler
            body = json.dumps({"ref": "refs/heads/main", "n": i, "installation": {"id": 1}}).encode()
            status = post(http, url, body, f"soak-push-{i}", "push")
        else:  # a bad signature
            status = post(http, url, b'{"n":%d}' % i, f"soak-bad-{i}", "issues", good=False)
    except httpx.HTTPError:
        status = 0
    with load.lock:
        load.statuses[status] = load.statuses.get(status, 0) + 1
        load.sent += 1


def generate(url: str, rate: float, seconds: float, load: Load, stop: threading.Event) -> None:
    """Open loop: delivery ``i`` is due at ``i / rate`` seconds, whatever the answers' latency (up to 16 in
    flight)."""
    started = time.monotonic()
    with (
        httpx.Client(timeout=15, limits=httpx.Limits(max_connections=16)) as http,
        ThreadPoolExecutor(16) as pool,
    ):
        i = 0
        while not stop.is_set() and time.monotonic() - started < seconds:
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, http, url, i, load)
            i += 1


def sample(server: KodiaiServe) -> tuple[int, int, int, int]:
    """(WAL bytes, RSS KiB, open fds, open deliveries in the journal) of the running server."""
    assert server.proc is not None
    pid = server.proc.pid
    wal = Path(f"{server.jobs_db}-wal")
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    (backlog,) = server.journal(
        "SELECT COUNT(*) FROM delivery_journal WHERE status IN ('pending', 'running')"
    )[0]
    return wal_bytes, rss, fds, int(backlog)


def summary(name: str, values: list[int], unit: float, suffix: str) -> str:
    return (
        f"{name:<10} start {values[0] / unit:>9.1f}{suffix}  end {values[-1] / unit:>9.1f}{suffix}"
        f"  max {max(values) / unit:>9.1f}{suffix}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=600.0, help="How long to send (default 600).")
    parser.add_argument("--rate", type=float, default=10.0, help="Deliveries per second (default 10).")
    parser.add_argument("--sample", type=float, default=5.0, help="Seconds between samples (default 5).")
    parser.add_argument(
        "--job-seconds", type=float, default=0.05, help="How long each job waits (default 0.05)."
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="kodiai-soak-"))
    fake = FakeGitHub()
    for installation in range(1, INSTALLATIONS + 1):
        fake.add_installation(installation, account="acme")
    state: PrState = install_pr_routes(fake)
    load = Load()
    with fake:
        server = KodiaiServe(
            workdir,
            fake,
            handlers="storm_handlers:register",
            KODIAI_TEST_JOB_SECONDS=str(args.job_seconds),
            LOG_LEVEL="warn",
            SHUTDOWN_GRACE_SECONDS="30",
        )
        server.start()
        print(
            f"kodiai serve pid {server.proc.pid if server.proc else '?'} on {server.url}; data in {workdir}"
        )
        stop = threading.Event()
        sender = threading.Thread(
            target=generate,
            args=(f"{server.url}/webhooks/github", args.rate, args.seconds, load, stop),
            daemon=True,
        )
        samples: list[tuple[int, int, int, int]] = [sample(server)]
        began = time.monotonic()
        sender.start()
        print(f"{'t (s)':>7} {'sent':>7} {'WAL MB':>8} {'RSS MB':>8} {'fds':>5} {'backlog':>8}")
        try:
            while sender.is_alive():
                sender.join(args.sample)
                samples.append(sample(server))
                wal, rss, fds, backlog = samples[-1]
                print(
                    f"{time.monotonic() - began:7.0f} {load.sent:7d} {wal / 1e6:8.2f} {rss / 1024:8.1f} {fds:5d}"
                    f" {backlog:8d}"
                )
        except KeyboardInterrupt:
            stop.set()
            sender.join()
        deadline = time.monotonic() + max(120.0, args.seconds)
        while time.monotonic() < deadline:  # let the lanes drain before stopping
            statuses = server.statuses()
            if all(statuses.get(d) == "done" for d in load.work):
                break
            time.sleep(0.5)
        samples.append(sample(server))
        code = server.stop(signal.SIGTERM, timeout=60)

        statuses = server.statuses()
        not_done = [d for d in load.work if statuses.get(d) != "done"]
        wrong = [
            d
            for d, n in load.work.items()
            if sum(marker(d) in c["body"] for c in state.issue_comments(OWNER, NAME, n)) != 1
        ]
    elapsed = time.monotonic() - began
    print()
    print(
        f"sent {load.sent} in {elapsed:.0f} s ({load.sent / max(elapsed, 1e-9):.1f}/s); answers {dict(sorted(load.statuses.items()))} (0: no answer)"
    )
    print(summary("WAL", [s[0] for s in samples], 1e6, " MB"))
    print(summary("RSS", [s[1] for s in samples], 1024, " MB"))
    print(summary("open fds", [s[2] for s in samples], 1, "   "))
    print(summary("backlog", [s[3] for s in samples], 1, "   "))
    print(
        f"work deliveries acknowledged {len(load.work)}; not done {len(not_done)}; effect not exactly once {len(wrong)}; exit code {code}"
    )
    return 0 if not not_done and not wrong and code in (0, -signal.SIGTERM) else 1


if __name__ == "__main__":
    raise SystemExit(main())
