"""Attacks on the queue on a real PostgreSQL: races between workers' stalled-job checks, operators' retries
running at the same time, and the job a worker is running being taken from it."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kodiai.jobs.journal_rows import Intake
from kodiai.jobs.pg_journal import PgJobJournal, StalledJob
from kodiai.metrics import Metrics
from kodiai.server.ingress import WebhookIngress
from kodiai.settings import Settings, SettingsError
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _intake(journal: PgJobJournal, delivery: str, installation: int = 7) -> None:
    body = json.dumps({"action": "opened", "installation": {"id": installation}, "d": delivery}).encode()
    assert journal.intake(Intake(delivery, "issues", "opened", installation, body), now=NOW) is True


def _fetch_as_new_worker(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """A worker registers (heartbeat now) and takes the next job, as procrastinate's worker does."""
    row = conn.execute("SELECT worker_id FROM procrastinate_register_worker_v1()").fetchone()
    assert row is not None
    worker = int(row[0])
    job = conn.execute(
        "SELECT id FROM procrastinate_fetch_job_v2(ARRAY['deliveries']::varchar[], %s)", (worker,)
    )
    got = job.fetchone()
    assert got is not None and got[0] is not None
    return worker, int(got[0])


def _web_ingress(journal: PgJobJournal) -> WebhookIngress:
    """A web replica's intake on ``journal`` (secret ``s3cret``), with one handler for every issues event."""
    router = EventRouter(BotFilter("kodiai"))

    async def handler(event: WebhookEvent) -> None:
        return None

    router.register("issues", handler, name="any-issue")
    return WebhookIngress(secret="s3cret", router=router, journal=journal, dispatcher=None, metrics=Metrics())


def _job(conn: psycopg.Connection[Any], job_id: int) -> tuple[str, int | None]:
    row = conn.execute(
        "SELECT status::text, worker_id FROM procrastinate_jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return str(row[0]), row[1]


def test_a_stale_stalled_check_never_takes_a_job_from_the_live_worker_now_running_it(
    postgres_url: str,
) -> None:
    """Two workers' stalled checks (periodic jobs of two periods) both list the job of a dead worker. The
    first puts it back in line and a live worker takes it; the second, acting on its old list, must leave
    it alone: neither back to ``todo`` (a third worker would run the same delivery at the same time,
    breaking the installation's one-at-a-time order) nor ``dead`` while it runs."""
    journal = PgJobJournal.open(postgres_url)
    try:
        _intake(journal, "d-stalled")
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            dead_worker, job_id = _fetch_as_new_worker(conn)
            assert journal.begin("d-stalled", now=NOW) is not None  # attempt 1 on the worker that dies
            conn.execute(
                "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' WHERE id = %s",
                (dead_worker,),
            )
            seen_by_both = [StalledJob(job_id, "d-stalled")]  # each check's list, taken before either acts

            first = journal.settle_stalled(seen_by_both, max_attempts=3, now=NOW)
            assert first.retried == ["d-stalled"]
            live_worker, again = _fetch_as_new_worker(conn)  # a live worker takes it back at once
            assert again == job_id
            entry = journal.begin("d-stalled", now=NOW)
            assert entry is not None and entry.attempts == 2

            late = journal.settle_stalled(seen_by_both, max_attempts=3, now=NOW)
            assert late.retried == [] and late.dead == []
            assert _job(conn, job_id) == ("doing", live_worker)

            late = journal.settle_stalled(seen_by_both, max_attempts=2, now=NOW)  # attempts 2 ≥ 2
            assert late.dead == []
            assert _job(conn, job_id) == ("doing", live_worker)
            status = journal.get("d-stalled")
            assert status is not None and status["status"] == "running"
    finally:
        journal.close()


def test_a_stalled_job_whose_worker_was_pruned_is_still_retried(postgres_url: str) -> None:
    """The check's re-test under the row lock must still see a job whose worker row is gone (pruned: the
    job's worker_id is then NULL) as stalled."""
    journal = PgJobJournal.open(postgres_url)
    try:
        _intake(journal, "d-pruned")
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            worker, job_id = _fetch_as_new_worker(conn)
            journal.begin("d-pruned", now=NOW)
            conn.execute("DELETE FROM procrastinate_workers WHERE id = %s", (worker,))
            report = journal.settle_stalled([StalledJob(job_id, "d-pruned")], max_attempts=3, now=NOW)
            assert report.retried == ["d-pruned"]
            assert _job(conn, job_id) == ("todo", None)
    finally:
        journal.close()


def _make_dead(journal: PgJobJournal, conn: psycopg.Connection[Any], delivery: str) -> None:
    _intake(journal, delivery)
    _, job_id = _fetch_as_new_worker(conn)
    journal.begin(delivery, now=NOW)
    journal.finish(delivery, now=NOW, status="dead", error="boom")
    conn.execute("SELECT procrastinate_finish_job_v1(%s, 'failed', false)", (job_id,))


def _live_jobs(conn: psycopg.Connection[Any], delivery: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM procrastinate_jobs WHERE args->>'delivery_id' = %s AND status IN ('todo', 'doing')",
        (delivery,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_two_operators_retrying_the_same_dead_delivery_at_once_queue_one_job(postgres_url: str) -> None:
    """``kodiai jobs retry X`` from two shells at the same moment (and ``--all-dead`` beside it): one
    requeues it, the others are refused; never two jobs for one delivery."""
    journal = PgJobJournal.open(postgres_url)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            _make_dead(journal, conn, "d-dead")
            # Hold the journal row so the three retries line up behind it, then let them go together.
            blocker = psycopg.connect(postgres_url)
            blocker.execute("SELECT 1 FROM delivery_journal WHERE delivery_id = 'd-dead' FOR UPDATE")
            results: list[object] = []
            calls = [
                lambda: journal.retry(["d-dead"]),
                lambda: journal.retry(["d-dead"]),
                lambda: journal.retry([], all_dead=True),
            ]
            threads = [threading.Thread(target=lambda c=c: results.append(c())) for c in calls]
            for t in threads:
                t.start()
            threading.Event().wait(0.5)  # all three are waiting on the row
            blocker.rollback()
            blocker.close()
            for t in threads:
                t.join(30)
            requeued = [r for r in results if getattr(r, "requeued", None)]
            assert len(results) == 3 and len(requeued) == 1, results
            assert _live_jobs(conn, "d-dead") == 1
            row = journal.get("d-dead")
            assert row is not None and row["status"] == "requeued"
    finally:
        journal.close()


def test_retry_of_a_delivery_a_worker_has_already_taken_back_is_refused(postgres_url: str) -> None:
    """Retried once (a job queued, a worker runs it), then retried again: refused, no second job."""
    journal = PgJobJournal.open(postgres_url)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            _make_dead(journal, conn, "d-twice")
            assert journal.retry(["d-twice"]).requeued == ["d-twice"]
            second = journal.retry(["d-twice"])
            assert second.requeued == [] and "not dead" in second.refused["d-twice"]
            _fetch_as_new_worker(conn)
            journal.begin("d-twice", now=NOW)
            third = journal.retry(["d-twice"])
            assert third.requeued == [] and "status running" in third.refused["d-twice"]
            assert _live_jobs(conn, "d-twice") == 1
    finally:
        journal.close()


def test_a_signed_delivery_whose_action_holds_a_nul_is_acknowledged_on_postgresql(postgres_url: str) -> None:
    """``"action": "opened\\u0000"`` is valid JSON and the SQLite journal records it; PostgreSQL's text
    columns refuse NUL, which made intake fail and the delivery answer 500 on every redelivery."""
    journal = PgJobJournal.open(postgres_url)
    try:
        ingress = _web_ingress(journal)
        body = b'{"action":"opened\\u0000","installation":{"id":5}}'
        signature = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        headers = {"x-github-delivery": "d-nul", "x-github-event": "issues", "x-hub-signature-256": signature}
        result = asyncio.run(ingress.handle(headers, body))
        assert (result.status, result.outcome) == (200, "accepted")
        with psycopg.connect(postgres_url) as conn:
            assert _live_jobs(conn, "d-nul") == 1
        row = journal.get("d-nul")
        assert row is not None and row["status"] == "pending" and "\x00" not in row["action"]
    finally:
        journal.close()


def test_a_stalled_timeout_shorter_than_two_heartbeats_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``WORKER_STALLED_SECONDS=5`` beside the default 10 s heartbeat: every live worker looks dead between
    two heartbeats, so the stalled check would hand its running jobs to other workers while they run."""
    monkeypatch.setenv("WORKER_HEARTBEAT_SECONDS", "10")
    monkeypatch.setenv("WORKER_STALLED_SECONDS", "5")
    with pytest.raises(SettingsError) as refused:
        Settings.load(env_file=tmp_path / "none.env", require_github_app=False)
    assert "WORKER_STALLED_SECONDS" in str(refused.value)
    monkeypatch.setenv("WORKER_STALLED_SECONDS", "20")
    assert (
        Settings.load(env_file=tmp_path / "none.env", require_github_app=False).worker_stalled_seconds == 20
    )


@pytest.mark.parametrize(
    "command",
    [
        ["jobs", "list"],
        ["db", "status"],
        ["jobs", "list", "--db", "postgresql://k:Hunter%ZZ@127.0.0.1:1/kodiai"],
    ],
)
def test_a_malformed_database_url_never_echoes_its_password(command: list[str], tmp_path: Path) -> None:
    """A password with a bare ``%`` (``p%ZZ`` for ``p%25ZZ``): libpq's error quotes the token — the password
    — and psycopg's pool logs it on every connection attempt; ``kodiai db status`` showed it in a
    traceback. The URL is checked when the settings load, with a message that does not repeat it."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DATABASE_URL": "postgresql://kodiai:Hunter%ZZ2pw@127.0.0.1:1/kodiai",
    }
    kodiai = Path(sys.executable).parent / "kodiai"
    done = subprocess.run(
        [str(kodiai), *command], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Hunter" not in output and "Traceback" not in output, output[-2000:]
    assert "DATABASE_URL" in output or "postgresql://127.0.0.1:1/kodiai" in output  # what is wrong, or where


def test_kodiai_role_in_the_env_file_is_honoured(tmp_path: Path) -> None:
    """Every other setting may live in ``.env``; ``KODIAI_ROLE=worker`` there was silently ignored and the
    replica ran as ``all`` (taking webhooks). Here ``KODIAI_ROLE=web`` in the file without DATABASE_URL
    must stop start-up like ``--role web`` does."""
    env_file = tmp_path / "kodiai.env"
    env_file.write_text("KODIAI_ROLE=web\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    kodiai = Path(sys.executable).parent / "kodiai"
    done = subprocess.run(
        [str(kodiai), "serve", "--port", "0", "--env-file", str(env_file)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "--role web needs DATABASE_URL" in done.stderr


def test_an_oversized_delivery_id_is_a_400_not_a_500_on_postgresql(postgres_url: str) -> None:
    """``X-GitHub-Delivery`` is not covered by the signature and GitHub's are UUIDs; an 8000-character one
    overflowed PostgreSQL's unique index (a btree row holds ~2.7 KB) and every redelivery was a 500."""
    journal = PgJobJournal.open(postgres_url)
    try:
        ingress = _web_ingress(journal)
        body = b'{"action":"opened","installation":{"id":5}}'
        signature = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        results = []
        for delivery in (os.urandom(4000).hex(), os.urandom(512).hex()):  # 8000 and 1024 characters
            headers = {
                "x-github-delivery": delivery,
                "x-github-event": "issues",
                "x-hub-signature-256": signature,
            }
            result = asyncio.run(ingress.handle(headers, body))
            results.append((result.status, result.outcome))
        assert results == [(400, "invalid_delivery_id"), (200, "accepted")]
    finally:
        journal.close()
