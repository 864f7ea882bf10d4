"""A full disk under the job journal, then a restart: jobs that finished while the disk was full stay
finished.

What an operator does: the journal's filesystem fills, jobs already acknowledged finish (their "done" marks
cannot be written to the journal), the service is stopped while the disk is still full (SIGTERM), space is
freed, the service is started. Before the journal's reserve file, every one of those jobs ran again (8 of 8
here); now their marks are saved in the reserve and applied at the start, before anything is replayed.

One ``kodiai serve`` over a real 4 MiB tmpfs (mounted here: root only), restarted once. A job's runs are
counted on the fake GitHub (each run reads its issue's comments once). ``kill -9`` on a full disk is
tested on the journal alone, in a child process (tests/jobs/test_journal_reserve.py): a third start of
the server would cost seconds of imports and test nothing more.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.issue_jobs import effects, opened_issue
from server.test_full_disk import runs
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.full_disk import TmpfsDisk, mounted_tmpfs, truncate_wal
from support.kodiai_process import KodiaiServe, wait_until

pytestmark = pytest.mark.slow

BATCH = 8  # jobs finishing on the full disk per phase


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[TmpfsDisk]:
    with mounted_tmpfs(tmp_path) as made:
        yield made


def held_back(server: KodiaiServe) -> float:
    found = re.search(r"^kodiai_journal_held_back_writes (\S+)$", server.get("/metrics").text, re.M)
    return float(found.group(1)) if found else 0.0


def finish_on_full_disk(
    server: KodiaiServe, disk: TmpfsDisk, state: PrState, gate: Path, numbers: range
) -> dict[str, int]:
    """Acknowledge a batch (its jobs wait at the gate), fill the disk, let the jobs finish; returns the batch
    once every job's effect landed and its "done" mark was held back (the journal could not take it)."""
    batch = {f"full-{n}": n for n in numbers}
    for delivery, number in batch.items():
        assert server.deliver(opened_issue(number), delivery).status_code == 200
    first = next(iter(batch))
    wait_until(lambda: server.statuses().get(first) == "running", 30, "the first job", server)
    truncate_wal(server.jobs_db)  # the journal's next write needs new space
    disk.fill(0)
    gate.touch()
    wait_until(lambda: all(effects(state, n, d) == 1 for d, n in batch.items()), 60, "the effects", server)
    wait_until(lambda: held_back(server) >= len(batch), 30, "the done marks held back", server)
    statuses = server.statuses()
    assert not any(statuses.get(d) == "done" for d in batch), "the disk was not full"
    assert server.get("/readiness").status_code == 503
    return batch


def restart_and_count(
    server: KodiaiServe,
    disk: TmpfsDisk,
    fake: FakeGitHub,
    state: PrState,
    batch: dict[str, int],
    sentinel: int,
) -> dict[int, int]:
    """Free space, start again, and once a new delivery ran (the lane is FIFO and replays go first), the
    batch's issues that ran more than once, with their run counts."""
    disk.free(0)
    server.start()
    assert server.deliver(opened_issue(sentinel), f"sentinel-{sentinel}").status_code == 200
    wait_until(lambda: effects(state, sentinel, f"sentinel-{sentinel}") == 1, 60, "the sentinel", server)
    statuses = server.statuses()
    assert {d: statuses.get(d) for d in batch} == dict.fromkeys(batch, "done")
    assert all(effects(state, n, d) == 1 for d, n in batch.items())  # idempotent either way
    counted = runs(fake)
    return {n: counted[n] for n in batch.values() if counted[n] != 1}


def test_jobs_finished_on_a_full_disk_do_not_run_again_after_a_restart(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], disk: TmpfsDisk
) -> None:
    fake, state = github
    gate = tmp_path / "gate"
    server = KodiaiServe(
        tmp_path,
        fake,
        handlers="storm_handlers:register",
        jobs_db=disk.where / "jobs.db",
        KODIAI_TEST_GATE=str(gate),
    )
    server.start()
    try:
        batch = finish_on_full_disk(server, disk, state, gate, range(7000, 7000 + BATCH))
        assert server.stop(signal.SIGTERM) == 0  # still full: the marks cannot reach the journal
        again = restart_and_count(server, disk, fake, state, batch, 7099)
        assert again == {}, f"{len(again)} of {BATCH} finished jobs ran again after SIGTERM on a full disk"
        assert server.get("/readiness").status_code == 200
        assert not (disk.where / "jobs.db.reserve").read_bytes().strip(b"\0")  # zeroed once applied
    finally:
        with contextlib.suppress(AssertionError):
            server.stop(signal.SIGTERM)
    logged = [e["msg"] for e in server.log_lines()]
    assert (
        "Job journal writes lost at shutdown; these deliveries will run again at the next start" not in logged
    )
    assert "Replaying unfinished delivery from job journal" not in logged
