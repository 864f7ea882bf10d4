"""`kodiai jobs list|retry` over a real journal file (typer's runner; the database path as serve reads it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.jobs.dispatcher import MAX_ATTEMPTS, DeliveryDispatcher
from kodiai.jobs.journal import Intake, JobJournal
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Two dead deliveries (their jobs were cut by the process dying every attempt), one done, one pending."""
    path = tmp_path / "jobs.db"
    journal = JobJournal.open(path)
    for name in ("dead-1", "dead-2", "done-1", "pending-1"):
        body = b'{"action":"opened","n":"%s"}' % name.encode()
        journal._accept_now(Intake(name, "issues", "opened", 7, body), now=T0, journal=True, started=False)
    for name in ("dead-1", "dead-2"):
        for _ in range(MAX_ATTEMPTS):
            journal.start_attempt(name, now=T0)
    journal.finish("done-1", now=T0)
    DeliveryDispatcher(EventRouter(BotFilter("kodiai")), journal).prepare_replay()  # moves the dead ones
    journal.close()
    return path


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_list_shows_dead_deliveries_with_their_last_error(db: Path) -> None:
    code, out, _ = run("jobs", "list", "--state", "dead", "--json", "--db", str(db))
    assert code == 0
    rows = json.loads(out)
    assert [r["delivery_id"] for r in rows] == ["dead-2", "dead-1"]  # newest first
    assert all(r["status"] == "dead" and r["attempts"] == MAX_ATTEMPTS for r in rows)
    assert all("gave up after 3 attempts" in r["error"] for r in rows)
    code, out, _ = run("jobs", "list", "--db", str(db))  # default: everything not done
    assert code == 0 and "dead-1" in out and "pending-1" in out and "done-1" not in out
    code, _, err = run("jobs", "list", "--state", "lost", "--db", str(db))
    assert code == 1 and "Unknown state lost" in err


def test_the_database_path_comes_from_the_same_setting_as_serve(db: Path, tmp_path: Path) -> None:
    env_file = tmp_path / "settings.env"
    env_file.write_text(f"JOBS_DB_PATH={db}\n")
    code, out, _ = run("jobs", "list", "--state", "done", "--json", "--env-file", str(env_file))
    assert code == 0 and [r["delivery_id"] for r in json.loads(out)] == ["done-1"]
    code, _, err = run("jobs", "list", "--db", str(tmp_path / "missing.db"))
    assert code == 1 and "No jobs database" in err
    assert not (tmp_path / "missing.db").exists()


def test_retry_requeues_dead_deliveries_only(db: Path) -> None:
    code, out, err = run("jobs", "retry", "dead-1", "done-1", "nope", "--db", str(db))
    assert code == 1 and out.strip() == "requeued dead-1"
    assert "not retried done-1: not dead (status done)" in err and "not retried nope: no such delivery" in err
    code, out, _ = run("jobs", "retry", "--all-dead", "--db", str(db))
    assert code == 0 and out.strip() == "requeued dead-2"
    code, out, _ = run("jobs", "list", "--state", "requeued", "--json", "--db", str(db))
    assert {(r["delivery_id"], r["attempts"]) for r in json.loads(out)} == {("dead-1", 0), ("dead-2", 0)}
    code, out, _ = run("jobs", "retry", "--all-dead", "--db", str(db))
    assert code == 0 and "No dead deliveries" in out
    code, _, err = run("jobs", "retry", "--db", str(db))
    assert code == 1 and "--all-dead" in err

    journal = JobJournal.open(db)  # the next server start replays them with the rest
    try:
        assert {e.delivery_id for e in journal.unfinished()} == {"dead-1", "dead-2", "pending-1"}
    finally:
        journal.close()
