"""Crash test: SIGKILL `kodiai serve` with jobs in flight, restart, every accepted delivery runs exactly once."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from support.fake_github import FakeGitHub
from support.live_server import SECRET, eventually, signed_headers

# `python -m kodiai.server` runs the same `serve` command as `kodiai serve` without importing every other
# CLI group (their heavy imports only slow the two start-ups down).
SERVE = [sys.executable, "-m", "kodiai.server"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(env: dict[str, str], cwd: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [*SERVE, "--host", "127.0.0.1", "--port", str(port), "--handlers", "crash_handlers:register"],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=open(cwd / f"server-{port}-{len(list(cwd.glob('server-*')))}.log", "wb"),  # noqa: SIM115
    )

    def up() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    assert eventually(up, timeout=60, interval=0.1), "server did not come up"
    return proc


def recorded(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.slow
def test_sigkill_with_jobs_in_flight_then_restart_runs_each_delivery_exactly_once(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    record = tmp_path / "record.txt"
    env = {**base_env(tmp_path, fake, record), "LOG_LEVEL": "info", "KODIAI_TEST_BLOCK": "1"}
    port = free_port()
    proc = start(env, tmp_path, port)
    url = f"http://127.0.0.1:{port}/webhooks/github"
    accepted: list[str] = []
    try:
        with httpx.Client(timeout=10) as http:
            for i in range(12):  # finish before the crash
                body = json.dumps({"action": "opened", "installation": {"id": 1 + i % 3}, "n": i}).encode()
                delivery = f"done-{i}"
                assert (
                    http.post(
                        url, content=body, headers=signed_headers(body, event="issues", delivery=delivery)
                    ).status_code
                    == 200
                )
                accepted.append(delivery)
            assert eventually(lambda: len(recorded(record)) == 12, timeout=30)
            for i in range(15):  # block (running) or wait behind a blocked job (queued) when the kill comes
                body = json.dumps(
                    {"action": "opened", "installation": {"id": 1 + i % 3}, "block": True}
                ).encode()
                delivery = f"inflight-{i}"
                assert (
                    http.post(
                        url, content=body, headers=signed_headers(body, event="issues", delivery=delivery)
                    ).status_code
                    == 200
                )
                accepted.append(delivery)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert len(recorded(record)) == 12  # nothing in flight had finished

    env["KODIAI_TEST_BLOCK"] = "0"
    proc2 = start(env, tmp_path, port)
    try:
        assert eventually(lambda: len(recorded(record)) >= len(accepted), timeout=60)
        with httpx.Client(timeout=10) as http:  # redeliveries after the restart are still duplicates
            body = json.dumps({"action": "opened", "installation": {"id": 1}}).encode()
            for delivery in ("done-0", "inflight-0"):
                r = http.post(
                    url, content=body, headers=signed_headers(body, event="issues", delivery=delivery)
                )
                assert r.status_code == 200 and r.json() == {"received": True}
        # let any stray duplicate run show up before the final count (the journal says when all is done)
        proc2.send_signal(signal.SIGTERM)
        proc2.wait(timeout=60)
    finally:
        if proc2.poll() is None:
            proc2.kill()
            proc2.wait()
    counts = Counter(recorded(record))
    assert set(counts) == set(accepted)
    assert all(n == 1 for n in counts.values()), {k: v for k, v in counts.items() if v != 1}
    # SIGTERM → graceful drain, then uvicorn re-raises the signal it captured
    assert proc2.returncode in (0, -signal.SIGTERM)
    assert '"Kodiai server stopped"' in sorted(tmp_path.glob("server-*.log"))[-1].read_text()


def base_env(tmp_path: Path, fake: FakeGitHub, record: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GITHUB_APP_ID": str(fake.app_id),
        "GITHUB_PRIVATE_KEY": fake.private_key_pem,
        "GITHUB_WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "JOBS_DB_PATH": str(tmp_path / "jobs.db"),
        "TELEMETRY_DB_PATH": str(tmp_path / "telemetry.db"),
        "KNOWLEDGE_DB_PATH": str(tmp_path / "knowledge.db"),
        "WORKSPACE_ROOT": str(tmp_path / "ws"),
        "EMBEDDING_PROVIDER": "none",
        "LEARNING_MEMORY_URI": str(tmp_path / "memory.lance"),
        "KODIAI_TEST_RECORD_FILE": str(record),
        "PYTHONPATH": str(Path(__file__).parent),
    }


@pytest.mark.slow
def test_sigterm_drains_in_flight_jobs_within_the_grace_period(tmp_path: Path, fake: FakeGitHub) -> None:
    """SIGTERM: a job that finishes inside SHUTDOWN_GRACE_SECONDS completes before the process exits."""
    record = tmp_path / "record.txt"
    env = {**base_env(tmp_path, fake, record), "KODIAI_TEST_SLEEP": "1.5", "SHUTDOWN_GRACE_SECONDS": "20"}
    port = free_port()
    proc = start(env, tmp_path, port)
    body = json.dumps({"action": "opened", "installation": {"id": 1}}).encode()
    r = httpx.post(
        f"http://127.0.0.1:{port}/webhooks/github",
        content=body,
        headers=signed_headers(body, event="issues", delivery="g-1"),
    )
    assert r.status_code == 200
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert recorded(record) == ["g-1"]
    db = sqlite3.connect(tmp_path / "jobs.db")
    assert db.execute("SELECT status FROM delivery_journal WHERE delivery_id='g-1'").fetchone() == ("done",)
    db.close()


@pytest.mark.slow
def test_sigterm_past_the_grace_period_leaves_the_job_for_replay(tmp_path: Path, fake: FakeGitHub) -> None:
    """A job longer than the grace period is cut at SIGTERM, stays pending, and runs after the restart."""
    record = tmp_path / "record.txt"
    env = {**base_env(tmp_path, fake, record), "KODIAI_TEST_SLEEP": "30", "SHUTDOWN_GRACE_SECONDS": "0.5"}
    port = free_port()
    proc = start(env, tmp_path, port)
    body = json.dumps({"action": "opened", "installation": {"id": 1}}).encode()
    url = f"http://127.0.0.1:{port}/webhooks/github"
    assert (
        httpx.post(
            url, content=body, headers=signed_headers(body, event="issues", delivery="g-2")
        ).status_code
        == 200
    )
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert time.monotonic() - started < 15  # did not wait for the 30 s job
    assert recorded(record) == []
    env["KODIAI_TEST_SLEEP"] = "0"
    proc2 = start(env, tmp_path, port)
    try:
        assert eventually(lambda: recorded(record) == ["g-2"], timeout=30)
    finally:
        proc2.kill()
        proc2.wait()
