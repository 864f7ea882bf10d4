"""``kodiai serve --role``: web and worker replicas need the queue on PostgreSQL (``DATABASE_URL``); with the
SQLite files only ``all`` runs, and anything else stops before binding with one line and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from fastapi.testclient import TestClient
from pydantic import SecretStr
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.github.app_auth import GitHubApp
from kodiai.jobs.lanes import JobQueue
from kodiai.jobs.pg_journal import PgJobJournal
from kodiai.metrics import Metrics
from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter
from support.fake_github import FakeGitHub
from support.postgres import PostgresServer


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


def test_web_replica_is_not_ready_while_postgres_is_unreachable(
    fake: FakeGitHub, postgres_server: PostgresServer
) -> None:
    """Deliveries cannot be journalled without PostgreSQL: a web replica's /readiness says so (its database
    is dropped under it: connections refused), while /health stays up (a restart would not help)."""
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    journal = PgJobJournal.open(url)
    config = ServerConfig(role="web", webhook_secret=SecretStr("s"), github_api_url=fake.url)
    github = GitHubApp(str(fake.app_id), fake.private_key_pem, base_url=fake.url)
    runtime = Runtime(
        config=config,
        metrics=Metrics(),
        router=EventRouter(BotFilter("kodiai")),
        queue=JobQueue(),
        github=github,
        pg_journal=journal,
    )
    client = TestClient(create_app(runtime))
    try:
        assert client.get("/readiness").json() == {"status": "ready"}
        postgres_server.drop_database(name)
        answer = client.get("/readiness")
        assert answer.status_code == 503
        assert answer.json()["reason"].startswith(
            "job journal cannot record deliveries: PostgreSQL unreachable"
        )
        assert client.get("/health").status_code == 200
    finally:
        journal.close()
        postgres_server.drop_database(name)
