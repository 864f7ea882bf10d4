"""Storage steps of the start-up sequence (behaviour P1.2 steps 6, 7, 11) with the original's log lines."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kodiai.log import get_logger
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.startup import (
    open_knowledge_store,
    open_knowledge_store_in,
    open_telemetry_store,
    purge_run_state,
)
from kodiai.storage.telemetry import ExecutionRecord
from support.db_backends import DbBackend

ON_POSTGRES = "Telemetry store on PostgreSQL"


def _exec() -> ExecutionRecord:
    return ExecutionRecord(repo="a/b", event_type="pull_request.opened", model="m", conclusion="success")


def test_step6_purges_executions_older_than_90_days_and_logs_count(db_backend: DbBackend) -> None:
    target = db_backend.target("telemetry")
    store = open_telemetry_store(target, get_logger("t"))
    store.record(_exec())
    store.record(_exec())
    store.close()
    db_backend.write(
        "telemetry", "UPDATE executions SET created_at = datetime('now', '-91 days') WHERE id = 1"
    )
    with capture_logs() as logs:
        store = open_telemetry_store(target, get_logger("t"))
    store.close()
    events = [(e["event"], e.get("purgedCount")) for e in logs if e["event"] != ON_POSTGRES]
    assert events == [("Telemetry retention purge complete", 1)]
    assert db_backend.scalar("telemetry", "SELECT count(*) FROM executions") == 1
    with capture_logs() as quiet:
        open_telemetry_store(target, get_logger("t")).close()
    assert [e for e in quiet if e["event"] != ON_POSTGRES] == []


def test_step6_open_failure_is_not_swallowed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database" * 200)
    with pytest.raises(sqlite3.DatabaseError):
        open_telemetry_store(bad, get_logger("t"))


def test_step7_logs_resolved_path_and_source(tmp_path: Path) -> None:
    with capture_logs() as logs:
        store = open_knowledge_store(
            None, {"KNOWLEDGE_DB_PATH": "k/knowledge.db"}, get_logger("t"), cwd=tmp_path
        )
    store.close()
    assert logs == [
        {
            "event": "Knowledge store path resolved",
            "knowledgeDbPath": str(tmp_path / "k" / "knowledge.db"),
            "source": "env",
            "log_level": "info",
        }
    ]
    assert (tmp_path / "k" / "knowledge.db").is_file()


def test_step11_purge_logs_count_and_is_fail_open(db_backend: DbBackend) -> None:
    store: KnowledgeStore = (
        open_knowledge_store_in(db_backend.url, get_logger("t"))
        if db_backend.url
        else open_knowledge_store(db_backend.target("knowledge"), {}, get_logger("t"))
    )
    claim = store.check_and_claim_run(
        repo="a/b", pr_number=1, base_sha="b", head_sha="h", delivery_id="d", action="opened"
    )
    store.complete_run(claim.run_key)
    db_backend.write("knowledge", "UPDATE run_state SET created_at = datetime('now', '-31 days')")
    with capture_logs() as logs:
        assert purge_run_state(store, get_logger("t")) == 1
    assert [(e["event"], e.get("runsPurged")) for e in logs] == [("Run state retention purge complete", 1)]
    store.close()
    with capture_logs() as logs:
        assert purge_run_state(store, get_logger("t")) == 0
    assert logs[0]["event"] == "Run state purge failed (non-fatal)" and logs[0]["log_level"] == "warning"
