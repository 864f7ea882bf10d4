"""``kodiai serve --role``: web and worker replicas need the queue on PostgreSQL (``DATABASE_URL``); with the
SQLite files only ``all`` runs, and anything else stops before binding with one line and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from kodiai.cli.main import app


@pytest.fixture(autouse=True)
def _keep_logging() -> Iterator[None]:
    """`kodiai serve` configures logging onto the runner's (then closed) stderr: put it back after."""
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


@pytest.mark.parametrize(("args", "env_role"), [(["--role", "web"], None), ([], "worker")])
def test_web_and_worker_roles_need_database_url(
    tmp_path: Path, args: list[str], env_role: str | None
) -> None:
    env = {"DATABASE_URL": "", "JOBS_DB_PATH": str(tmp_path / "jobs.db"), "KODIAI_ROLE": env_role or ""}
    result = CliRunner().invoke(
        app, ["serve", "--port", "0", "--env-file", str(tmp_path / "absent.env"), *args], env=env
    )
    assert result.exit_code == 2, result.output
    role = args[1] if args else env_role
    assert result.stderr.strip().splitlines() == [
        f"FATAL: --role {role} needs DATABASE_URL (the job queue on PostgreSQL); with the SQLite files"
        " only --role all runs"
    ]
    assert not (tmp_path / "jobs.db").exists()  # stopped before opening anything


def test_unknown_role_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["serve", "--role", "replica", "--env-file", str(tmp_path / "absent.env")],
        env={"DATABASE_URL": ""},
    )
    assert result.exit_code == 2
    assert "unknown --role 'replica'" in result.stderr


def test_a_worker_needs_the_github_app_settings(tmp_path: Path) -> None:
    """Setup mode (no App settings) has nothing for a worker to run: it stops before connecting anywhere."""
    env = {
        "DATABASE_URL": "postgresql://kodiai@127.0.0.1:1/never",
        "GITHUB_APP_ID": "",
        "GITHUB_PRIVATE_KEY": "",
        "GITHUB_WEBHOOK_SECRET": "",
    }
    result = CliRunner().invoke(
        app, ["serve", "--role", "worker", "--env-file", str(tmp_path / "absent.env")], env=env
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "FATAL: --role worker needs the GitHub App settings (run a web replica for setup)"
    )
