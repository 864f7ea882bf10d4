"""Crash test: SIGKILL `kodiai serve` with jobs in flight, restart, every accepted delivery runs exactly once;
SIGTERM drains within the grace period and leaves what it cuts for the next start.

The server runs as a real process (``support.kodiai_process``): the OS picks its port (read back, never picked
and released first), a child that dies fails the test at once, and every stop is bounded.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from support.fake_github import FakeGitHub
from support.kodiai_process import KodiaiServe, wait_until

pytestmark = pytest.mark.slow


def recorded(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def serve(tmp_path: Path, fake: FakeGitHub, **env: str) -> tuple[KodiaiServe, Path]:
    record = tmp_path / "record.txt"
    server = KodiaiServe(
        tmp_path, fake, handlers="crash_handlers:register", KODIAI_TEST_RECORD_FILE=str(record), **env
    )
    return server, record


def issue(installation: int, n: str, **extra: object) -> bytes:
    return json.dumps({"action": "opened", "installation": {"id": installation}, "n": n, **extra}).encode()


def test_sigkill_with_jobs_in_flight_then_restart_runs_each_delivery_exactly_once(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    server, record = serve(tmp_path, fake, KODIAI_TEST_BLOCK="1")
    accepted: list[str] = []
    server.start()
    try:
        for i in range(12):  # finish before the crash
            assert server.deliver(issue(1 + i % 3, f"done-{i}"), f"done-{i}").status_code == 200
            accepted.append(f"done-{i}")
        wait_until(
            lambda: all(server.statuses().get(d) == "done" for d in accepted), 60, "the first 12 done", server
        )
        for i in range(15):  # block (running) or wait behind a blocked job (queued) when the kill comes
            delivery = f"inflight-{i}"
            assert server.deliver(issue(1 + i % 3, delivery, block=True), delivery).status_code == 200
            accepted.append(delivery)
    finally:
        server.stop(signal.SIGKILL)
    assert len(recorded(record)) == 12  # nothing in flight had finished

    server.env["KODIAI_TEST_BLOCK"] = "0"
    server.start()
    try:
        wait_until(lambda: len(recorded(record)) >= len(accepted), 60, "every delivery recorded", server)
        for delivery in ("done-0", "inflight-0"):  # redeliveries after the restart are still duplicates
            r = server.deliver(issue(1, delivery), delivery)
            assert r.status_code == 200 and r.json() == {"received": True}
        wait_until(lambda: all(server.statuses().get(d) == "done" for d in accepted), 60, "all done", server)
    finally:
        code = server.stop(signal.SIGTERM, timeout=60)
    counts = Counter(recorded(record))
    assert set(counts) == set(accepted)
    assert all(n == 1 for n in counts.values()), {k: v for k, v in counts.items() if v != 1}
    # SIGTERM → graceful drain, then uvicorn re-raises the signal it captured
    assert code in (0, -signal.SIGTERM)
    assert '"Kodiai server stopped"' in server.log_text()


def test_sigterm_drains_in_flight_jobs_within_the_grace_period(tmp_path: Path, fake: FakeGitHub) -> None:
    """SIGTERM: a job that finishes inside SHUTDOWN_GRACE_SECONDS completes before the process exits."""
    server, record = serve(tmp_path, fake, KODIAI_TEST_SLEEP="1.5", SHUTDOWN_GRACE_SECONDS="20")
    server.start()
    try:
        assert server.deliver(issue(1, "g-1"), "g-1").status_code == 200
    finally:
        server.stop(signal.SIGTERM, timeout=60)
    assert recorded(record) == ["g-1"]
    assert server.statuses()["g-1"] == "done"


def test_sigterm_past_the_grace_period_leaves_the_job_for_replay(tmp_path: Path, fake: FakeGitHub) -> None:
    """A job longer than the grace period is cut at SIGTERM, stays pending, and runs after the restart.
    The job would take an hour, so the bounded stop returning at all shows it was cut (no wall-clock bound
    on the shutdown itself: a loaded machine may be slow to exit)."""
    server, record = serve(tmp_path, fake, KODIAI_TEST_SLEEP="3600", SHUTDOWN_GRACE_SECONDS="0.5")
    server.start()
    try:
        assert server.deliver(issue(1, "g-2"), "g-2").status_code == 200
        wait_until(lambda: server.statuses().get("g-2") == "running", 30, "the job to start", server)
    finally:
        server.stop(signal.SIGTERM, timeout=120)  # raises if it waited for the job
    assert recorded(record) == []
    assert server.journal("SELECT status, attempts FROM delivery_journal WHERE delivery_id = 'g-2'") == [
        ("pending", 0)  # the cut attempt was given back: a graceful stop uses none up
    ]
    server.env["KODIAI_TEST_SLEEP"] = "0"
    server.start()
    try:
        wait_until(lambda: recorded(record) == ["g-2"], 60, "the replayed job", server)
    finally:
        server.stop(signal.SIGTERM, timeout=60)
