"""A full disk under the job journal: nothing acknowledged is lost or run twice, and the server says it
cannot write.

The jobs database lives on a 4 MiB tmpfs the test mounts (it runs as root here). Where mounting is not
permitted the same test runs with the server's ``RLIMIT_FSIZE`` lowered instead (``prlimit`` on the child):
every write that would extend a file then fails, as on a full disk (SQLite reports a short write as
``SQLITE_FULL``, a refused one as a disk I/O error). Either way the WAL is checkpointed to zero bytes
first, so the journal's next write needs new space.

While the disk is full: a new delivery is answered 500 (not acknowledged, counted in
``kodiai_webhook_responses_total{status="500"}``), ``/readiness`` is 503, ``/health`` stays 200, and jobs
that were already acknowledged still run; their "done" writes are held in memory and saved in the
journal's reserve file on the tmpfs (written at start-up: overwriting it needs no new space; a file-size
limit refuses even that). When space returns the held-back writes land, the reserve is zeroed, the server
is ready again, and after a restart no job runs a second time (tests/server/test_full_disk_restart.py
restarts while the disk is still full).
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kodiai.jobs.journal_reserve import parse, reserve_path
from server.issue_jobs import NAME, OWNER, effects, opened_issue
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.full_disk import FileSizeLimit, TmpfsDisk, mount_permitted, truncate_wal
from support.kodiai_process import KodiaiServe, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(params=["tmpfs", "fsize"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TmpfsDisk | FileSizeLimit]:
    if request.param == "tmpfs":
        reason = mount_permitted(tmp_path)
        if reason is not None:  # the fsize variant covers this host
            pytest.skip(f"cannot mount a tmpfs here ({reason}); the fsize variant runs instead")
        made: TmpfsDisk | FileSizeLimit = TmpfsDisk(tmp_path / "disk")
    else:
        made = FileSizeLimit(tmp_path / "disk")
    try:
        yield made
    finally:
        made.close()


def runs(fake: FakeGitHub) -> Counter[int]:
    """How many times each issue's job ran (each run reads the issue's comments once)."""
    pattern = rf"/repos/{OWNER}/{NAME}/issues/(\d+)/comments"
    return Counter(int(re.fullmatch(pattern, c.path).group(1)) for c in fake.calls_to("GET", pattern))  # type: ignore[union-attr]


def test_full_disk_loses_nothing_runs_nothing_twice_and_reports_not_ready(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], disk: TmpfsDisk | FileSizeLimit
) -> None:
    fake, state = github
    base = 5000 if isinstance(disk, TmpfsDisk) else 6000  # issue numbers of this variant
    gate = tmp_path / "gate"
    server = KodiaiServe(
        tmp_path,
        fake,
        handlers="storm_handlers:register",
        jobs_db=disk.where / "jobs.db",
        KODIAI_TEST_GATE=str(gate),
    )
    server.start()
    acknowledged: dict[str, int] = {}
    refused: dict[str, int] = {}
    try:
        for i in range(3):  # acknowledged before the disk fills: their jobs wait for the gate
            assert server.deliver(opened_issue(base + i), f"before-{base + i}").status_code == 200
            acknowledged[f"before-{base + i}"] = base + i
        # the first job has recorded its start (the other two wait behind it): the server writes nothing
        # more until the test does, so the WAL truncated now has no space a later write could reuse
        wait_until(lambda: server.statuses().get(f"before-{base}") == "running", 30, "the first job", server)
        truncate_wal(server.jobs_db)
        assert server.proc is not None
        disk.fill(server.proc.pid)

        for i in range(3, 23):  # the journal cannot record these: 500, never a 200 for an unrecorded one
            number = base + i
            r = server.deliver(opened_issue(number), f"during-{number}")
            assert r.status_code in (200, 500)
            (acknowledged if r.status_code == 200 else refused)[f"during-{number}"] = number
            if refused:
                break
        assert refused, "no delivery was refused on a full disk"

        ready = server.get("/readiness")
        assert ready.status_code == 503 and "job journal" in ready.json()["reason"]
        assert server.get("/health").status_code == 200  # not damaged: a restart would not help
        metrics = server.get("/metrics").text
        assert 'kodiai_webhook_responses_total{status="500"}' in metrics

        gate.touch()  # acknowledged jobs run now; their "done" cannot be written yet
        wait_until(
            lambda: all(effects(state, n, d) == 1 for d, n in acknowledged.items()),
            60,
            "the jobs' effects",
            server,
        )
        statuses = server.statuses()
        assert not any(statuses.get(d) == "done" for d in acknowledged), "a done write landed on a full disk"
        assert server.get("/readiness").status_code == 503
        held = re.search(r"^kodiai_journal_held_back_writes (\S+)$", server.get("/metrics").text, re.M)
        assert held is not None and float(held.group(1)) >= len(acknowledged)
        saved = {
            m.delivery_id for m in parse(reserve_path(server.jobs_db).read_bytes()) if m.status == "done"
        }
        if isinstance(disk, TmpfsDisk):  # a file-size limit refuses writes past it even inside a file
            assert saved >= set(acknowledged)

        disk.free(server.proc.pid)
        wait_until(lambda: server.get("/readiness").status_code == 200, 30, "ready again", server)
        statuses = server.statuses()
        assert {d: statuses.get(d) for d in acknowledged} == dict.fromkeys(acknowledged, "done")
        assert parse(reserve_path(server.jobs_db).read_bytes()) == []

        for delivery, number in refused.items():  # what GitHub showed as failed is redelivered
            assert server.deliver(opened_issue(number), delivery).status_code == 200
        server.stop(signal.SIGTERM)
        server.start()
        sentinel = base + 99  # the lane is FIFO and replays go first: once this ran, any replay ran too
        assert server.deliver(opened_issue(sentinel), f"sentinel-{sentinel}").status_code == 200
        everything = {**acknowledged, **refused, f"sentinel-{sentinel}": sentinel}
        wait_until(
            lambda: all(effects(state, n, d) == 1 for d, n in everything.items()), 60, "every effect", server
        )
    finally:
        with contextlib.suppress(AssertionError):
            server.stop(signal.SIGTERM)
    counted = runs(fake)
    assert {n: counted[n] for n in everything.values() if counted[n] != 1} == {}, "a job ran twice (or never)"
    assert all(effects(state, n, d) == 1 for d, n in everything.items())
    replays = [
        e for e in server.log_lines() if e.get("msg") == "Replaying unfinished delivery from job journal"
    ]
    assert replays == []
