"""`kodiai db migrate-to-postgres`: a SQLite deployment's rows copied into the real PostgreSQL of the test
session, through the CLI as an operator runs it: the original's files and files this port's stores wrote,
row counts equal, new rows after the copy never collide with copied ids, the docs' telemetry SQL giving the
same answers on the SQLite files and on PostgreSQL; refusals (rows already there, a newer schema, a missing
file, an unreachable server) write nothing and never print the password."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.jobs.journal import JobJournal, JournalEntry
from kodiai.jobs.journal_rows import PayloadCodec
from kodiai.maintenance.migrate_to_postgres import (
    MigrateError,
    SourceTable,
    TargetTable,
    convert_value,
    plan_store,
    redact,
)
from kodiai.mention.state import MentionState
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import ReviewRecord
from kodiai.storage.migrations import apply_migrations
from kodiai.storage.telemetry import ExecutionRecord, TelemetryStore
from storage.fixture_paths import copy_fixture_db
from storage.test_docs_sql_on_both_databases import EXAMPLES, _normal, _run
from support.postgres import PostgresServer, empty_all_tables
from support.seed_stores import seed_knowledge, seed_telemetry

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _cli(url: str, tmp_path: Path, *args: str) -> Any:
    env = {"DATABASE_URL": url, "TELEMETRY_DB_PATH": "", "KNOWLEDGE_DB_PATH": "", "JOBS_DB_PATH": ""}
    return CliRunner().invoke(
        app, ["db", "migrate-to-postgres", "--env-file", str(tmp_path / "none.env"), *args], env=env
    )


def _counts(target: str | Path, tables: list[str]) -> dict[str, int]:
    if str(target).startswith("postgresql://"):
        with psycopg.connect(str(target)) as conn:
            return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables}  # type: ignore[index]
    conn2 = sqlite3.connect(target)
    try:
        return {t: int(conn2.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables}
    finally:
        conn2.close()


def _data_tables(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [
            str(r[0])
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if not str(r[0]).startswith(("sqlite_", "_yoyo", "yoyo_")) and r[0] != "journal_meta"
        ]
    finally:
        conn.close()


def _seed_jobs(path: Path) -> None:
    """The port's jobs database: journal rows in every state a stopped server leaves, and mention state."""
    journal = JobJournal.open(path)
    try:
        for i in range(6):
            entry = JournalEntry(
                delivery_id=f"job-{i}", event_name="pull_request", action="opened", installation_id=10 + i % 2,
                payload={"n": i, "text": "é ünïcode"},
            )  # fmt: skip
            journal.accept(entry, now=NOW + timedelta(seconds=i))
            if i < 4:
                journal.start_attempt(f"job-{i}", now=NOW)
                journal.finish(f"job-{i}", now=NOW, status="done" if i < 3 else "failed", error=None)
    finally:
        journal.close()
    with sqlite3.connect(path) as conn:  # a body as an early version stored it: JSON text, not zstd
        conn.execute(
            "UPDATE delivery_payloads SET payload = '{\"legacy\": true}' "
            "WHERE seq = (SELECT seq FROM delivery_journal WHERE delivery_id = 'job-4')"
        )
    state = MentionState.open(path)
    try:
        state.record_write("1:acme/api", NOW)
        state.increment_turn("acme/api#3", NOW)
        assert state.try_acquire_write("key-1", "owner-1", NOW)
    finally:
        state.close()


def test_port_files_copy_whole_and_the_docs_sql_agrees(tmp_path: Path, postgres_url: str) -> None:
    files = {n: tmp_path / f"kodiai-{n}.db" for n in ("telemetry", "knowledge", "jobs")}
    seed_telemetry(str(files["telemetry"]))
    seed_knowledge(str(files["knowledge"]))
    _seed_jobs(files["jobs"])
    with sqlite3.connect(files["telemetry"]) as conn:  # an id handed out and deleted: never handed out again
        conn.execute("DELETE FROM executions WHERE id = (SELECT max(id) FROM executions)")
    args = [f"--{n}={p}" for n, p in files.items()]

    result = _cli(postgres_url.replace("kodiai_test@", "kodiai_test:s3cr3t-pw@"), tmp_path, *args)
    assert result.exit_code == 0, result.output
    assert "s3cr3t-pw" not in result.output
    assert "row counts equal" in result.output
    assert "journal_meta" in result.output and "skipped" in result.output
    assert "2 unfinished deliveries arrived as dead" in result.output
    for store, path in files.items():
        tables = _data_tables(path)
        assert _counts(postgres_url, tables) == _counts(path, tables), store
        assert sum(_counts(path, tables).values()) > 0, store

    # The docs' SQL: the same answers on the SQLite files and on the migrated PostgreSQL.
    for where, database, sql in EXAMPLES:
        if "_yoyo_migration" in sql:
            continue
        on_sqlite = _run(str(files[database]), database, sql)
        assert _normal(_run(postgres_url, database, sql)) == _normal(on_sqlite), where

    # New rows after the copy get ids past every copied one (and past the deleted one).
    telemetry = TelemetryStore(postgres_url)
    knowledge = KnowledgeStore(postgres_url)
    try:
        telemetry.record(
            ExecutionRecord(
                repo="acme/new", event_type="pull_request.opened", model="m", conclusion="success"
            )
        )
        review_id = knowledge.record_review(ReviewRecord(repo="acme/new", pr_number=99))
    finally:
        telemetry.close()
        knowledge.close()
    with psycopg.connect(postgres_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM executions ORDER BY id")]
        assert ids[-1] == 13 and len(set(ids)) == len(ids) == 12  # 12 seeded, #12 deleted, the new one is 13
        assert review_id == 4
        row = conn.execute(
            "SELECT payload FROM delivery_payloads p JOIN delivery_journal j USING (seq) WHERE delivery_id = 'job-5'"
        ).fetchone()
        assert row is not None and PayloadCodec().decode(bytes(row[0])) == {"n": 5, "text": "é ünïcode"}
        parked = conn.execute(
            "SELECT delivery_id, error FROM delivery_journal WHERE status = 'dead' ORDER BY seq"
        ).fetchall()
        assert [r[0] for r in parked] == ["job-4", "job-5"] and "kodiai jobs retry" in str(parked[0][1])
        legacy = conn.execute(
            "SELECT payload FROM delivery_payloads p JOIN delivery_journal j USING (seq) WHERE delivery_id = 'job-4'"
        ).fetchone()
        assert legacy is not None and PayloadCodec().decode(bytes(legacy[0])) == {"legacy": True}

    # A second run refuses (nothing changes); --force replaces the store's rows with the SQLite data again.
    again = _cli(postgres_url, tmp_path, f"--telemetry={files['telemetry']}")
    assert again.exit_code == 1 and "already has rows in executions" in again.output
    assert _counts(postgres_url, ["executions"]) == {"executions": 12}
    forced = _cli(postgres_url, tmp_path, "--force", f"--telemetry={files['telemetry']}")
    assert forced.exit_code == 0, forced.output
    tables = _data_tables(files["telemetry"])
    assert _counts(postgres_url, tables) == _counts(files["telemetry"], tables)


def test_the_originals_files_copy_with_equal_counts(tmp_path: Path, postgres_url: str) -> None:
    """The original's Phase 56 files: as left by the original (columns added later take their defaults)
    and after this port's SQLite migrations (what a server started on them leaves): the same rows in
    PostgreSQL and the docs' telemetry SQL gives the same answers."""
    telemetry = copy_fixture_db("telemetry", tmp_path)
    knowledge = copy_fixture_db("knowledge", tmp_path)
    raw = _cli(postgres_url, tmp_path, f"--telemetry={telemetry}", f"--knowledge={knowledge}")
    assert raw.exit_code == 0, raw.output
    assert _counts(postgres_url, ["executions", "retrieval_quality"]) == {
        "executions": 25,
        "retrieval_quality": 25,
    }
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM retrieval_quality WHERE threshold_method IS NULL"
        ).fetchone() == (25,)

    apply_migrations(telemetry, "telemetry")
    apply_migrations(knowledge, "knowledge")
    result = _cli(postgres_url, tmp_path, "--force", f"--telemetry={telemetry}", f"--knowledge={knowledge}")
    assert result.exit_code == 0, result.output
    assert _counts(postgres_url, _data_tables(telemetry)) == _counts(telemetry, _data_tables(telemetry))
    compared = 0
    for where, database, sql in EXAMPLES:
        if database != "telemetry" or "_yoyo_migration" in sql:
            continue
        assert _normal(_run(postgres_url, "telemetry", sql)) == _normal(
            _run(str(telemetry), "telemetry", sql)
        ), where
        compared += 1
    assert compared >= 5


def test_dry_run_counts_and_writes_nothing(tmp_path: Path, empty_postgres_url: str) -> None:
    telemetry = copy_fixture_db("telemetry", tmp_path)
    result = _cli(empty_postgres_url, tmp_path, "--dry-run", f"--telemetry={telemetry}")
    assert result.exit_code == 0, result.output
    assert (
        "executions" in result.output and "25" in result.output and "would create and copy" in result.output
    )
    assert "nothing written" in result.output
    with psycopg.connect(empty_postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('executions')").fetchone() == (None,)


def test_refusals_write_nothing_and_name_the_problem(
    tmp_path: Path, postgres_url: str, postgres_server: PostgresServer
) -> None:
    telemetry = tmp_path / "t.db"
    seed_telemetry(str(telemetry))

    missing = _cli(postgres_url, tmp_path, f"--telemetry={telemetry}", f"--knowledge={tmp_path / 'nope.db'}")
    assert missing.exit_code == 1 and f"no SQLite file at {tmp_path / 'nope.db'}" in missing.output

    unreachable = f"postgresql://kodiai_test:pw-never-shown@127.0.0.1:{postgres_server.port + 1}/x"
    down = _cli(unreachable, tmp_path, f"--telemetry={telemetry}")
    assert down.exit_code == 1 and "cannot connect to postgresql://127.0.0.1:" in down.output
    assert "pw-never-shown" not in down.output

    newer = tmp_path / "newer.db"
    newer.write_bytes(telemetry.read_bytes())
    with sqlite3.connect(newer) as conn:
        conn.execute(
            "INSERT INTO _yoyo_migration (migration_hash, migration_id, applied_at_utc) VALUES ('h', '9999_future', '2030-01-01')"
        )
    refused = _cli(postgres_url, tmp_path, f"--telemetry={newer}")
    assert refused.exit_code == 1 and "9999_future" in refused.output and "newer Kodiai" in refused.output

    bad = tmp_path / "bad.db"
    bad.write_bytes(telemetry.read_bytes())
    with sqlite3.connect(bad) as conn:
        conn.execute("UPDATE spend_ledger SET installation_id = 'not-a-number' WHERE id = 2")
    failed = _cli(postgres_url, tmp_path, f"--telemetry={bad}")
    assert failed.exit_code == 1
    assert (
        "telemetry.spend_ledger.installation_id (rowid 2): 'not-a-number' is not an integer" in failed.output
    )
    assert _counts(postgres_url, _data_tables(telemetry)) == dict.fromkeys(_data_tables(telemetry), 0)


def test_dangling_reference_is_refused_before_writing(tmp_path: Path, postgres_url: str) -> None:
    knowledge = tmp_path / "k.db"
    seed_knowledge(str(knowledge))
    with sqlite3.connect(knowledge) as conn:  # foreign keys off, as the original's connections had them
        conn.execute("DELETE FROM reviews WHERE id = 1")
    result = _cli(postgres_url, tmp_path, f"--knowledge={knowledge}")
    assert result.exit_code == 1 and "refer to missing reviews rows" in result.output
    assert _counts(postgres_url, ["reviews", "findings"]) == {"reviews": 0, "findings": 0}
    empty_all_tables(postgres_url)


# --- pure parts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (3.0, "bigint", 3),
        ("42", "bigint", 42),
        (" 7 ", "bigint", 7),
        ("1e3", "bigint", 1000),
        (5, "double precision", 5.0),
        ("0.25", "double precision", 0.25),
        (12, "text", "12"),
        (b"caf\xc3\xa9", "text", "café"),
        ("{}", "bytea", b"{}"),
        (None, "bigint", None),
    ],
)
def test_lossless_conversions(value: Any, kind: str, expected: Any) -> None:
    converted = convert_value(value, kind, "t.c (rowid 1)")
    assert converted == expected and type(converted) is type(expected)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(2.5, "bigint"), ("x", "bigint"), ("x", "double precision"), (b"\xff", "text"), ("a\x00b", "text")],
)
def test_lossy_conversions_are_refused(value: Any, kind: str) -> None:
    with pytest.raises(MigrateError, match=r"t\.c \(rowid 1\)"):
        convert_value(value, kind, "t.c (rowid 1)")


def test_plan_orders_referenced_tables_first_and_refuses_unknown_columns() -> None:
    sources = [SourceTable("findings", ("id", "review_id"), 2), SourceTable("reviews", ("id",), 1)]
    targets = {
        "findings": TargetTable("findings", {"id": "bigint", "review_id": "bigint"}, 0),
        "reviews": TargetTable("reviews", {"id": "bigint"}, 0),
    }
    plan = plan_store("knowledge", "k.db", sources, targets, {"findings": {"reviews"}})
    assert [p.table for p in plan.tables] == ["reviews", "findings"]
    with pytest.raises(MigrateError, match=r"column\(s\) extra of table reviews"):
        plan_store("knowledge", "k.db", [SourceTable("reviews", ("id", "extra"), 1)], targets)


def test_redact_removes_the_password_from_a_driver_message() -> None:
    url = "postgresql://u:p%40ss@h/db"
    assert redact(f'invalid dsn "{url}" and p@ss, p%40ss', url) == 'invalid dsn "postgresql://…" and ***, ***'


def test_unfinished_deliveries_run_again_through_jobs_retry(tmp_path: Path, empty_postgres_url: str) -> None:
    """The documented step after the copy: once a worker has started (the queue's schema exists),
    `kodiai jobs retry --all-dead` queues the deliveries the single process had not finished."""
    from kodiai.jobs.pg_journal import PgJobJournal

    jobs = tmp_path / "kodiai-jobs.db"
    _seed_jobs(jobs)
    copied = _cli(empty_postgres_url, tmp_path, f"--jobs={jobs}")
    assert copied.exit_code == 0, copied.output
    PgJobJournal.open(empty_postgres_url).close()  # what a worker's start does
    env = {"DATABASE_URL": empty_postgres_url, "JOBS_DB_PATH": ""}
    retried = CliRunner().invoke(
        app, ["jobs", "retry", "--all-dead", "--env-file", str(tmp_path / "none.env")], env=env
    )
    assert retried.exit_code == 0, retried.output
    assert "requeued job-4" in retried.output and "requeued job-5" in retried.output
    with psycopg.connect(empty_postgres_url) as conn:
        rows = conn.execute("SELECT delivery_id, status FROM delivery_journal ORDER BY seq").fetchall()
        queued = conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'").fetchone()
    assert [s for _, s in rows] == ["done", "done", "done", "failed", "requeued", "requeued"]
    assert queued == (2,)


def test_without_options_every_store_comes_from_the_settings(tmp_path: Path) -> None:
    """No path option: the three files the server uses; any one missing stops it before connecting, and
    without DATABASE_URL there is nothing to copy into."""
    telemetry = tmp_path / "t.db"
    seed_telemetry(str(telemetry))
    env = {
        "DATABASE_URL": "postgresql://kodiai:pw-not-shown@127.0.0.1:1/kodiai",  # never reached
        "TELEMETRY_DB_PATH": str(telemetry),
        "KNOWLEDGE_DB_PATH": str(tmp_path / "k.db"),
        "JOBS_DB_PATH": str(tmp_path / "j.db"),
    }
    args = ["db", "migrate-to-postgres", "--env-file", str(tmp_path / "none.env")]
    missing = CliRunner().invoke(app, args, env=env)
    assert missing.exit_code == 1
    assert f"knowledge: no SQLite file at {tmp_path / 'k.db'}" in missing.output
    assert f"jobs: no SQLite file at {tmp_path / 'j.db'}" in missing.output
    assert "telemetry: no SQLite file" not in missing.output and "pw-not-shown" not in missing.output
    unset = CliRunner().invoke(app, args, env={**env, "DATABASE_URL": ""})
    assert unset.exit_code == 1 and "DATABASE_URL is not set" in unset.output
