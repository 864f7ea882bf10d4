"""`kodiai jobs list|retry` on PostgreSQL (``--db postgresql://…`` or ``DATABASE_URL``), through the real CLI:
a dead delivery is listed with its error, and a retry requeues it and queues a new job under its
installation's lock in the same transaction."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.jobs.journal_rows import Intake
from kodiai.jobs.pg_journal import PgJobJournal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_list_and_retry_on_postgres(postgres_url: str) -> None:
    pg = PgJobJournal.open(postgres_url)
    try:
        for name in ("dead-1", "done-1"):
            assert pg.intake(Intake(name, "issues", "opened", 42, json.dumps({"n": name}).encode()), now=T0)
        pg.begin("dead-1", now=T0)
        pg.finish("dead-1", now=T0, status="dead", error="gave up after 3 attempts")
        pg.begin("done-1", now=T0)
        pg.finish("done-1", now=T0)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("DELETE FROM procrastinate_jobs")  # their first jobs are over
    finally:
        pg.close()
    runner = CliRunner()
    listed = runner.invoke(app, ["jobs", "list", "--db", postgres_url, "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["delivery_id"], r["status"], r["error"]) for r in rows] == [
        ("dead-1", "dead", "gave up after 3 attempts")
    ]
    retried = runner.invoke(app, ["jobs", "retry", "dead-1", "done-1"], env={"DATABASE_URL": postgres_url})
    assert retried.exit_code == 1  # done-1 refused
    assert retried.stdout.strip() == "requeued dead-1"
    assert "not retried done-1: not dead (status done)" in retried.stderr
    with psycopg.connect(postgres_url) as conn:
        status = conn.execute(
            "SELECT status, attempts FROM delivery_journal WHERE delivery_id = 'dead-1'"
        ).fetchone()
        jobs = conn.execute("SELECT lock, args, status::text FROM procrastinate_jobs").fetchall()
    assert status == ("requeued", 0)
    assert jobs == [("installation:42", {"delivery_id": "dead-1"}, "todo")]
    again = runner.invoke(app, ["jobs", "list", "--state", "requeued"], env={"DATABASE_URL": postgres_url})
    assert again.exit_code == 0 and "dead-1" in again.stdout
