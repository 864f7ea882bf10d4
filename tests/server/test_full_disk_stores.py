"""A full disk under the knowledge, telemetry or learned-memory store (the job journal is covered by
test_full_disk.py): every acknowledged delivery still completes once, and the server says a store cannot
write.

Each store lives on a 4 MiB tmpfs of its own that the module mounts (runs as root here; elsewhere the tests
are skipped: a file-size limit would hit the journal too, and that is test_full_disk.py's case). Each job
posts its GitHub effect and then writes fail-open to the store its delivery names, as a review does
(tests/server/store_handlers.py). One server serves the three cases in turn (each fills and frees only its
own store's disk), then one restart checks that nothing runs a second time: each start costs seconds of CPU.

While the disk is full the writes fail and are logged, the jobs still finish (``done`` in the journal, the
effect posted once), ``/readiness`` is 503 naming the store, ``/health`` stays 200, and
``kodiai_store_write_failures_total`` counts the failures. Once space returns a probe write makes the server
ready again and the next write lands; after a restart nothing runs a second time.

Before write_health existed the jobs completed the same way (the writes are fail-open) but ``/readiness``
stayed 200, nothing was counted and only each job's own warning said a write was lost.
"""

from __future__ import annotations

import contextlib
import re
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from server.issue_jobs import NAME, OWNER, effects, opened_issue
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.full_disk import TmpfsDisk, mounted_tmpfs, truncate_wal
from support.kodiai_process import KodiaiServe, wait_until

pytestmark = pytest.mark.slow

DURING = 3  # deliveries whose write meets the full disk

# store → (issue numbers from, the setting that puts it on the small disk, its path there, extra settings)
STORES: dict[str, tuple[int, str, str, dict[str, str]]] = {
    "knowledge": (7000, "KNOWLEDGE_DB_PATH", "knowledge.db", {}),
    "telemetry": (7100, "TELEMETRY_DB_PATH", "telemetry.db", {}),
    # the local model gives the server a memory store; the test's writes bring their own vectors
    "memory": (7200, "LEARNING_MEMORY_URI", "memory.lance", {"EMBEDDING_PROVIDER": "local"}),
}


def runs_of(fake: FakeGitHub, number: int) -> int:
    """How many times the issue's job ran (each run reads the issue's comments once)."""
    return len(fake.calls_to("GET", rf"/repos/{OWNER}/{NAME}/issues/{number}/comments"))


def outcomes(record: Path) -> dict[str, str]:
    """``delivery → wrote|lost`` from the handler's record file."""
    if not record.exists():
        return {}
    return {d: kind for kind, d in (line.split() for line in record.read_text().splitlines())}


def failures(metrics: str, store: str) -> dict[str, float]:
    """``kodiai_store_write_failures_total`` of ``store`` by kind."""
    out: dict[str, float] = {}
    for labels, value in re.findall(r"^kodiai_store_write_failures_total\{(.*)\} (\S+)$", metrics, re.M):
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if found.get("store") == store:
            out[found["kind"]] = float(value)
    return out


def sqlite_rows(db: Path, table: str) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return {str(d) for (d,) in conn.execute(f"SELECT delivery_id FROM {table}")}
    finally:
        conn.close()


@dataclass
class Site:
    """The module's server, each store's disk, and every delivery a case sent (delivery → issue number)."""

    server: KodiaiServe
    fake: FakeGitHub
    state: PrState
    disks: dict[str, TmpfsDisk]
    record: Path
    sent: dict[str, int] = field(default_factory=dict)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, github: tuple[FakeGitHub, PrState]) -> Iterator[Site]:
    fake, state = github
    tmp = tmp_path_factory.mktemp("full-store-disks")
    with ExitStack() as stack:
        disks = {}
        for store in STORES:
            (tmp / store).mkdir()
            disks[store] = stack.enter_context(mounted_tmpfs(tmp / store))
        record = tmp / "record.txt"
        settings = {
            setting: str(disks[store].where / name) for store, (_, setting, name, _) in STORES.items()
        }
        extra = {k: v for (_, _, _, more) in STORES.values() for k, v in more.items()}
        server = KodiaiServe(
            tmp,
            fake,
            handlers="store_handlers:register",
            KODIAI_TEST_RECORD_FILE=str(record),
            **settings,
            **extra,
        )
        server.start()
        try:
            yield Site(server, fake, state, disks, record)
        finally:
            with contextlib.suppress(AssertionError):
                server.stop(signal.SIGTERM)


@pytest.mark.parametrize("store", list(STORES))
def test_full_store_disk_completes_every_job_once_and_reports_not_ready(site: Site, store: str) -> None:
    server, fake, state, disk, record = site.server, site.fake, site.state, site.disks[store], site.record
    base, _setting, name, _extra = STORES[store]
    deliveries = {f"before-{base}": base}
    deliveries.update({f"during-{base + i}": base + i for i in range(1, DURING + 1)})
    after = f"after-{base + 50}"
    mine = {**deliveries, after: base + 50}
    site.sent.update(mine)

    def deliver(number: int, delivery: str) -> None:
        assert server.deliver(opened_issue(number, store=store), delivery).status_code == 200

    deliver(base, f"before-{base}")
    wait_until(lambda: f"before-{base}" in outcomes(record), 60, "the first job", server)
    assert outcomes(record)[f"before-{base}"] == "wrote"
    assert server.get("/readiness").status_code == 200
    if store != "memory":  # the store's next write must need new space, not WAL space it already has
        truncate_wal(disk.where / name)
    assert server.proc is not None
    disk.fill(server.proc.pid)

    for delivery, number in deliveries.items():  # the journal is elsewhere: every one is acknowledged
        if delivery.startswith("during-"):
            deliver(number, delivery)
    wait_until(
        lambda: len({d for d in outcomes(record) if d in deliveries}) == 1 + DURING,
        60,
        "the jobs on a full disk",
        server,
    )
    assert {d: k for d, k in outcomes(record).items() if d.startswith("during-") and d in deliveries} == {
        d: "lost" for d in deliveries if d.startswith("during-")
    }
    wait_until(
        lambda: set(deliveries) <= {d for d, s in server.statuses().items() if s == "done"},
        30,
        "done in the journal",
        server,
    )
    ready = server.get("/readiness")
    assert ready.status_code == 503, ready.text
    assert ready.json()["reason"].startswith(f"{store} store cannot write: ")
    assert server.get("/health").status_code == 200  # a restart would not free any space
    assert failures(server.get("/metrics").text, store).get("no_space", 0) >= DURING

    disk.free(server.proc.pid)
    wait_until(lambda: server.get("/readiness").status_code == 200, 30, "ready again", server)
    deliver(base + 50, after)
    wait_until(lambda: server.statuses().get(after) == "done", 60, "the job after space returned", server)
    assert outcomes(record)[after] == "wrote"
    if store != "memory":
        table = "reviews" if store == "knowledge" else "executions"
        assert sqlite_rows(disk.where / name, table) == {f"before-{base}", after}

    assert {d: runs_of(fake, n) for d, n in mine.items()} == dict.fromkeys(mine, 1)
    assert {d: effects(state, n, d) for d, n in mine.items()} == dict.fromkeys(mine, 1)
    changes = [
        e["msg"]
        for e in server.log_lines()
        if e.get("store") == store and str(e.get("msg", "")).startswith("Store ")
    ]
    assert changes == [  # one line per change of state, not one per failed write
        "Store cannot write; not ready until a probe write lands (its fail-open writes are lost)",
        "Store writes landing again; ready",
    ]


def test_after_a_restart_no_job_runs_a_second_time(site: Site) -> None:
    """The cases above left every delivery done; a restart replays none of them (the lane is FIFO and
    replays go first: once the sentinel ran, any replay ran too)."""
    server, fake, state = site.server, site.fake, site.state
    sentinel, number = "sentinel-7399", 7399
    server.stop(signal.SIGTERM)
    server.start()
    assert server.deliver(opened_issue(number, store="knowledge"), sentinel).status_code == 200
    wait_until(lambda: server.statuses().get(sentinel) == "done", 60, "the sentinel", server)
    server.stop(signal.SIGTERM)
    everything = {**site.sent, sentinel: number}
    assert {d: runs_of(fake, n) for d, n in everything.items()} == dict.fromkeys(everything, 1)
    assert {d: effects(state, n, d) for d, n in everything.items()} == dict.fromkeys(everything, 1)
    assert server.statuses() == dict.fromkeys(everything, "done")
    logs = server.log_lines()
    assert [e["msg"] for e in logs if e.get("msg") == "Replaying unfinished delivery from job journal"] == []
