"""``kodiai serve`` with ``DATABASE_URL`` as a real process: a job's telemetry write lands in PostgreSQL, the
knowledge, mention-state and job-journal tables are migrated there at start-up, no SQLite file is made for
any store, and the URL's password is in no log line."""

from __future__ import annotations

from pathlib import Path

from server.issue_jobs import opened_issue
from support.db_backends import DbBackend
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.kodiai_process import KodiaiServe, wait_until


def test_serve_with_database_url_writes_its_stores_to_postgres(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], postgres_url: str
) -> None:
    fake, _ = github
    record = tmp_path / "record.txt"
    password = "pg-password-never-logged"
    server = KodiaiServe(
        tmp_path,
        fake,
        handlers="store_handlers:register",
        KODIAI_TEST_STORE="telemetry",
        KODIAI_TEST_RECORD_FILE=str(record),
        DATABASE_URL=postgres_url.replace("kodiai_test@", f"kodiai_test:{password}@"),  # trust auth: accepted
    )
    server.start()
    try:
        assert server.get("/readiness").status_code == 200
        assert server.deliver(opened_issue(8100), "pg-8100").status_code == 200
        wait_until(lambda: record.exists() and "wrote pg-8100" in record.read_text(), 60, "the job", server)
        pg = DbBackend("postgres", tmp_path, postgres_url)
        status = "SELECT status FROM delivery_journal WHERE delivery_id = 'pg-8100'"
        wait_until(lambda: pg.scalar("jobs", status) == "done", 30, "done in the journal", server)
    finally:
        server.stop()
    assert pg.rows("telemetry", "SELECT delivery_id, repo FROM executions") == [
        {"delivery_id": "pg-8100", "repo": "acme/widgets"}
    ]
    applied = {r["migration_id"] for r in pg.rows("telemetry", "SELECT migration_id FROM _yoyo_migration")}
    assert {"0001_telemetry_baseline", "0005_pending_memories", "0003_mention_state"} <= applied
    assert not (tmp_path / "telemetry.db").exists() and not (tmp_path / "knowledge.db").exists()
    assert not (tmp_path / "jobs.db").exists()
    log = server.log_text()
    assert "Telemetry store on PostgreSQL" in log and "database_url" in log
    assert password not in log
