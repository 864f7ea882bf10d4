"""`kodiai db upgrade|status` through typer's CliRunner on real SQLite files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.storage.migrations import MIGRATIONS_DIR
from storage.fixture_paths import copy_fixture_db

runner = CliRunner()


def _ids(name: str) -> list[str]:
    return sorted(
        p.name.rsplit(".", 1)[0] for p in (MIGRATIONS_DIR / name).iterdir() if p.suffix in (".sql", ".py")
    )


def _status(*args: str, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    result = runner.invoke(app, ["db", "status", "--json", *args], env=env or {})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_upgrade_named_databases_then_status_all_applied(tmp_path: Path) -> None:
    tel, kno = tmp_path / "t" / "tel.db", tmp_path / "k" / "kno.db"
    before = _status("--telemetry", str(tel), "--knowledge", str(kno))
    assert before and not any(r["applied"] for r in before)
    assert not tel.exists() and not kno.exists()
    result = runner.invoke(app, ["db", "upgrade", "--telemetry", str(tel), "--knowledge", str(kno)])
    assert result.exit_code == 0, result.output
    assert (
        f"telemetry ({tel}): applied {len(_ids('telemetry'))}: {', '.join(_ids('telemetry'))}"
        in result.stdout
    )
    assert f"knowledge ({kno}): applied {len(_ids('knowledge'))}" in result.stdout
    after = _status("--telemetry", str(tel), "--knowledge", str(kno))
    assert [(r["database"], r["id"]) for r in after] == [("telemetry", i) for i in _ids("telemetry")] + [
        ("knowledge", i) for i in _ids("knowledge")
    ]
    assert all(r["applied"] and r["applied_at"] for r in after)
    again = runner.invoke(app, ["db", "upgrade", "--telemetry", str(tel), "--knowledge", str(kno)])
    assert again.exit_code == 0 and again.stdout.count("up to date") == 2


def test_upgrade_without_options_uses_env_paths_and_only_named_when_given(tmp_path: Path) -> None:
    env = {
        "TELEMETRY_DB_PATH": str(tmp_path / "env-tel.db"),
        "KNOWLEDGE_DB_PATH": str(tmp_path / "env-kno.db"),
        "JOBS_DB_PATH": str(tmp_path / "env-jobs.db"),
    }
    result = runner.invoke(app, ["db", "upgrade"], env=env)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "env-tel.db").is_file() and (tmp_path / "env-kno.db").is_file()
    assert (tmp_path / "env-jobs.db").is_file() == (MIGRATIONS_DIR / "jobs").is_dir()
    only = tmp_path / "only.db"
    runner.invoke(app, ["db", "upgrade", "--telemetry", str(only)], env=env)
    assert {r["database"] for r in _status("--telemetry", str(only))} == {"telemetry"}


def test_upgrade_original_fixture_files_keeps_rows(tmp_path: Path) -> None:
    tel = copy_fixture_db("telemetry", tmp_path)
    kno = copy_fixture_db("knowledge", tmp_path)
    assert not any(r["applied"] for r in _status("--telemetry", str(tel), "--knowledge", str(kno)))
    result = runner.invoke(app, ["db", "upgrade", "--telemetry", str(tel), "--knowledge", str(kno)])
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(tel)
    assert conn.execute("SELECT COUNT(*) FROM executions").fetchone()[0] == 25
    assert conn.execute("SELECT COUNT(*) FROM retrieval_quality").fetchone()[0] == 25
    assert "threshold_method" in [r[1] for r in conn.execute("PRAGMA table_info(retrieval_quality)")]
    conn.close()


def test_status_table_shows_pending_and_applied(tmp_path: Path) -> None:
    tel = tmp_path / "tel.db"
    pending = runner.invoke(app, ["db", "status", "--telemetry", str(tel)])
    assert pending.exit_code == 0
    assert "pending" in pending.stdout and f"{len(_ids('telemetry'))} pending" in pending.stdout
    runner.invoke(app, ["db", "upgrade", "--telemetry", str(tel)])
    applied = runner.invoke(app, ["db", "status", "--telemetry", str(tel)])
    assert "applied" in applied.stdout and applied.stdout.rstrip().endswith("all applied")
    assert _ids("telemetry")[0] in applied.stdout


def test_upgrade_failure_is_reported_with_exit_1(tmp_path: Path) -> None:
    """A file that is not a SQLite database: a clear error, exit 1, the file untouched."""
    bad = tmp_path / "not-a-db.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    result = runner.invoke(app, ["db", "upgrade", "--telemetry", str(bad)])
    assert result.exit_code == 1
    assert "FAILED" in result.stderr
    assert bad.read_bytes() == b"this is not sqlite" * 100


@pytest.mark.parametrize("cmd", ["upgrade", "status"])
def test_help_lists_options(cmd: str) -> None:
    result = runner.invoke(app, ["db", cmd, "--help"])
    assert result.exit_code == 0
    assert "--telemetry" in result.stdout and "--knowledge" in result.stdout
