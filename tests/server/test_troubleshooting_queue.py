"""docs/troubleshooting.md's entries for the queue on PostgreSQL, reproduced: a web replica whose database
cannot be reached is not ready (and says why), while it stays alive."""

from __future__ import annotations

from fastapi.testclient import TestClient
from pydantic import SecretStr
from structlog.testing import capture_logs

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
from support.troubleshooting_page import look_for


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
        with capture_logs() as logs:
            answer = client.get("/readiness")
        assert answer.status_code == 503
        look_for("job-journal-cannot-record-deliveries-postgresql-unreachable").check(
            logs=logs, answers=[(answer.status_code, answer.json())]
        )
        assert client.get("/health").status_code == 200
    finally:
        journal.close()
        postgres_server.drop_database(name)
