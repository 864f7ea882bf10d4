"""``DATABASE_URL`` in the composition root: the telemetry and knowledge stores open in PostgreSQL, no SQLite
file is created for them, and no log line carries the URL's password."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from pydantic import SecretStr

from kodiai.server.stores import open_stores
from kodiai.settings import Settings
from kodiai.storage.knowledge_models import ReviewRecord
from kodiai.storage.telemetry import ExecutionRecord
from support.db_backends import DbBackend


def test_database_url_puts_telemetry_and_knowledge_in_postgres(tmp_path: Path, postgres_url: str) -> None:
    with_password = postgres_url.replace(
        "kodiai_test@", "kodiai_test:hunter2-secret@"
    )  # trust auth: accepted
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        telemetry_db_path=str(tmp_path / "t.db"),
        knowledge_db_path=str(tmp_path / "k.db"),
        learning_memory_uri=str(tmp_path / "memory.lance"),
        embedding_provider="none",
        database_url=SecretStr(with_password),
    )
    with structlog.testing.capture_logs() as logs:
        stores = open_stores(settings)
    try:
        stores.telemetry.record(
            ExecutionRecord(repo="acme/api", event_type="e", model="m", conclusion="success")
        )
        review_id = stores.knowledge.record_review(ReviewRecord(repo="acme/api", pr_number=1))
    finally:
        stores.close()
    assert not (tmp_path / "t.db").exists() and not (tmp_path / "k.db").exists()
    pg = DbBackend("postgres", tmp_path, postgres_url)
    assert pg.scalar("telemetry", "SELECT COUNT(*) FROM executions WHERE repo = 'acme/api'") == 1
    assert pg.scalar("knowledge", "SELECT id FROM reviews") == review_id
    resolved = [e for e in logs if e["event"] == "Knowledge store path resolved"]
    assert resolved[0]["source"] == "database_url"
    assert resolved[0]["knowledgeDbPath"] == "postgresql://127.0.0.1:" + postgres_url.split(":")[-1]
    assert "hunter2-secret" not in repr(logs) and "hunter2-secret" not in repr(settings)


def test_db_upgrade_and_status_with_database_url(
    tmp_path: Path, empty_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kodiai db upgrade|status` migrate telemetry, knowledge and the jobs tables in PostgreSQL (named by host
    and database only) and the queue's procrastinate schema beside them, as the server will use them: no
    SQLite file is made, a second upgrade changes nothing."""
    import json

    from typer.testing import CliRunner

    from kodiai.cli.main import app
    from kodiai.storage.database import safe_url

    monkeypatch.chdir(tmp_path)  # the SQLite defaults (./data/…) would land here
    runner = CliRunner()
    url = empty_postgres_url.replace("kodiai_test@", "kodiai_test:hunter2-secret@")
    env = {"DATABASE_URL": url, "JOBS_DB_PATH": str(tmp_path / "jobs.db")}
    result = runner.invoke(app, ["db", "upgrade"], env=env)
    assert result.exit_code == 0, result.output
    assert f"telemetry ({safe_url(url)}): applied" in result.stdout
    assert f"knowledge ({safe_url(url)}): applied" in result.stdout
    assert "hunter2-secret" not in result.output
    assert not (tmp_path / "jobs.db").exists() and not (tmp_path / "data").exists()
    status = runner.invoke(app, ["db", "status", "--json"], env=env)
    assert status.exit_code == 0, status.output
    rows = json.loads(status.stdout)
    assert rows and all(r["applied"] for r in rows)
    assert {r["path"] for r in rows} == {safe_url(url)}
    assert "0000_sqlite_compat_functions" in {r["id"] for r in rows if r["database"] == "telemetry"}
    assert f"jobs ({safe_url(url)}): applied" in result.stdout  # the journal, dedup and mention state
    assert f"queue ({safe_url(url)}): applied procrastinate schema" in result.stdout
    import psycopg

    with psycopg.connect(empty_postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone() == ("procrastinate_jobs",)
    again = runner.invoke(app, ["db", "upgrade"], env=env)
    assert again.exit_code == 0, again.output
    assert again.stdout.count("up to date") == 4
