"""A full disk under the knowledge, telemetry or learned-memory store (the job journal is covered by
test_full_disk.py): every acknowledged delivery still completes once, and the server says a store cannot
write.

Only the store under test lives on a 4 MiB tmpfs the test mounts (runs as root here; elsewhere the test is
skipped: a file-size limit would hit the journal too, and that is test_full_disk.py's case). Each job posts
its GitHub effect and then writes to that store fail-open, as a review does (tests/server/store_handlers.py).

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


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[TmpfsDisk]:
    with mounted_tmpfs(tmp_path) as made:
        yield made


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


@pytest.mark.parametrize("store", list(STORES))
def test_full_store_disk_completes_every_job_once_and_reports_not_ready(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], disk: TmpfsDisk, store: str
) -> None:
    fake, state = github
    base, setting, name, extra = STORES[store]
    record = tmp_path / "record.txt"
    server = KodiaiServe(
        tmp_path,
        fake,
        handlers="store_handlers:register",
        KODIAI_TEST_STORE=store,
        KODIAI_TEST_RECORD_FILE=str(record),
        **{setting: str(disk.where / name)},
        **extra,
    )
    deliveries = {f"before-{base}": base}
    deliveries.update({f"during-{base + i}": base + i for i in range(1, DURING + 1)})
    after, sentinel = f"after-{base + 50}", f"sentinel-{base + 99}"
    server.start()
    try:
        assert server.deliver(opened_issue(base), f"before-{base}").status_code == 200
        wait_until(lambda: f"before-{base}" in outcomes(record), 60, "the first job", server)
        assert outcomes(record)[f"before-{base}"] == "wrote"
        assert server.get("/readiness").status_code == 200
        if store != "memory":  # the store's next write must need new space, not WAL space it already has
            truncate_wal(disk.where / name)
        assert server.proc is not None
        disk.fill(server.proc.pid)

        for delivery, number in deliveries.items():  # the journal is elsewhere: every one is acknowledged
            if delivery.startswith("during-"):
                assert server.deliver(opened_issue(number), delivery).status_code == 200
        wait_until(lambda: len(outcomes(record)) == 1 + DURING, 60, "the jobs on a full disk", server)
        assert {d: k for d, k in outcomes(record).items() if d.startswith("during-")} == {
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
        assert server.deliver(opened_issue(base + 50), after).status_code == 200
        wait_until(lambda: server.statuses().get(after) == "done", 60, "the job after space returned", server)
        assert outcomes(record)[after] == "wrote"
        if store != "memory":
            table = "reviews" if store == "knowledge" else "executions"
            assert sqlite_rows(disk.where / name, table) == {f"before-{base}", after}

        server.stop(signal.SIGTERM)
        server.start()  # the lane is FIFO and replays go first: once the sentinel ran, any replay ran too
        assert server.deliver(opened_issue(base + 99), sentinel).status_code == 200
        wait_until(lambda: server.statuses().get(sentinel) == "done", 60, "the sentinel", server)
    finally:
        with contextlib.suppress(AssertionError):
            server.stop(signal.SIGTERM)
    everything = {**deliveries, after: base + 50, sentinel: base + 99}
    assert {d: runs_of(fake, n) for d, n in everything.items()} == dict.fromkeys(everything, 1)
    assert {d: effects(state, n, d) for d, n in everything.items()} == dict.fromkeys(everything, 1)
    assert server.statuses() == dict.fromkeys(everything, "done")
    logs = server.log_lines()
    assert [e["msg"] for e in logs if e.get("msg") == "Replaying unfinished delivery from job journal"] == []
    changes = [
        e["msg"] for e in logs if e.get("store") == store and str(e.get("msg", "")).startswith("Store ")
    ]
    assert changes == [  # one line per change of state, not one per failed write
        "Store cannot write; not ready until a probe write lands (its fail-open writes are lost)",
        "Store writes landing again; ready",
    ]
