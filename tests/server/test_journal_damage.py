"""Journal damage through ``kodiai serve`` as a real process.

- Damaged at start-up (a zeroed index page, a zeroed table page, a garbage header): the server does not
  start; it prints one ``FATAL:`` line naming the damage and exits 1, with no traceback. (Before: a zeroed
  index page started a server whose /health said ok while every delivery got a 500.)
- Deleted while running: /health and /readiness answer 503 within the writer's idle tick, new deliveries
  get 500, the jobs already acknowledged still run; a restart is refused with one ``FATAL:`` line naming the
  rescue copy, and once the operator restores it the old delivery ids are still duplicates. (Before: the
  restart silently created an empty journal.)
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from server.issue_jobs import effects, opened_issue
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.kodiai_process import KodiaiServe, wait_until
from support.sqlite_damage import DAMAGES, filled_journal

pytestmark = pytest.mark.slow


def exits_with_one_fatal_line(server: KodiaiServe) -> str:
    """Start the server expecting it to refuse: returns its FATAL line (fails if it serves instead)."""
    proc = server.spawn()
    try:

        def settled() -> bool:
            if proc.poll() is not None:
                return True
            try:
                return server.started()
            except RuntimeError:  # exited since the poll above
                return True

        wait_until(settled, 180, "the server to exit (or, wrongly, to serve)")
        assert proc.poll() is not None, "kodiai serve started on a damaged journal"
    finally:
        server.stop(signal.SIGKILL)
    output = server.log_text().split(f"--- start {server.starts} ---")[-1]
    fatal = [line for line in output.splitlines() if line.startswith("FATAL:")]
    assert proc.returncode == 1 and len(fatal) == 1, output[-3000:]
    assert "Traceback" not in output
    return fatal[0]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_journal_stops_start_up_with_one_fatal_line(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], damage: Callable[[Path], None]
) -> None:
    server = KodiaiServe(tmp_path, github[0], handlers="storm_handlers:register")
    filled_journal(server.jobs_db)
    damage(server.jobs_db)
    fatal = exits_with_one_fatal_line(server)
    assert f"job journal {server.jobs_db} is damaged" in fatal and "docs/operations.md" in fatal


def test_a_journal_deleted_while_running_is_reported_refused_and_recoverable(
    tmp_path: Path, github: tuple[FakeGitHub, PrState]
) -> None:
    fake, state = github
    gate = tmp_path / "gate"
    server = KodiaiServe(tmp_path, fake, handlers="storm_handlers:register", KODIAI_TEST_GATE=str(gate))
    acknowledged = {f"kept-{n}": n for n in range(7000, 7003)}
    server.start()
    try:
        for delivery, number in acknowledged.items():
            assert server.deliver(opened_issue(number), delivery).status_code == 200
        for path in (server.jobs_db, Path(f"{server.jobs_db}-wal"), Path(f"{server.jobs_db}-shm")):
            path.unlink(missing_ok=True)  # what `rm data/kodiai-jobs.db*` does

        wait_until(
            lambda: server.get("/health").status_code == 503, 30, "/health to report the damage", server
        )
        health = server.get("/health").json()
        assert health["status"] == "unhealthy" and "deleted" in health["reason"]
        assert server.get("/readiness").status_code == 503
        assert server.deliver(opened_issue(7010), "after-7010").status_code == 500  # never acknowledged
        gate.touch()
        wait_until(
            lambda: all(effects(state, n, d) == 1 for d, n in acknowledged.items()),
            60,
            "the jobs' effects",
            server,
        )
    finally:
        server.stop(signal.SIGTERM, timeout=60)

    fatal = exits_with_one_fatal_line(server)  # a restart would otherwise start on an empty journal
    assert "is not the journal this server last used" in fatal and "rescued copies:" in fatal
    rescued = re.search(r"rescued copies: ([^)]*)\)", fatal)
    assert rescued is not None
    newest = Path(rescued.group(1).split(", ")[-1])

    for path in (server.jobs_db, Path(f"{server.jobs_db}-wal"), Path(f"{server.jobs_db}-shm")):
        path.unlink(missing_ok=True)  # the documented recovery: the newest rescue copy put back
    shutil.copy(newest, server.jobs_db)
    server.start()
    try:
        wait_until(
            lambda: server.get("/readiness").status_code == 200, 30, "ready on the restored journal", server
        )
        for delivery, number in acknowledged.items():  # still known: a redelivery is a duplicate
            assert server.deliver(opened_issue(number), delivery).json() == {"received": True}
        assert (
            server.deliver(opened_issue(7010), "after-7010").status_code == 200
        )  # GitHub's redelivery of the 500
        wait_until(lambda: effects(state, 7010, "after-7010") == 1, 60, "the redelivered job", server)
        wait_until(
            lambda: all(server.statuses().get(d) == "done" for d in [*acknowledged, "after-7010"]),
            60,
            "done",
            server,
        )
    finally:
        with contextlib.suppress(AssertionError):
            server.stop(signal.SIGTERM, timeout=60)
    assert all(effects(state, n, d) == 1 for d, n in acknowledged.items())
