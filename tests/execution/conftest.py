"""Fixtures for the execution tests: the fake GitHub server with PR routes and a real PyGithub client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from execution_helpers import INSTALLATION, OWNER, PR, REPO, RecordingSleep, make_client

from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeGitHub, PrState]]:
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        yield fake, state


@pytest.fixture
def fake_gh(fake_server: tuple[FakeGitHub, PrState]) -> FakeGitHub:
    fake, state = fake_server
    with fake.lock:
        for kind in ("issue_comments", "review_comments", "reviews", "workflow_runs"):
            fake.data[kind].clear()
        fake.data["pulls"].clear()
        fake.data["jobs"].clear()
        fake.data["lost_responses"].clear()
        fake.faults.clear()
    state.add_pull(OWNER, REPO, PR, head_sha="abc123def456", files=["src/app.py", "docs/with space.md"])
    fake.reset_calls()
    return fake


@pytest.fixture
def pr_state(fake_server: tuple[FakeGitHub, PrState], fake_gh: FakeGitHub) -> PrState:
    return fake_server[1]


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def make_env(fake_gh: FakeGitHub, sleeps: RecordingSleep) -> Any:
    def build(
        *,
        pr_number: int | None = PR,
        review_output_key: str | None = None,
        bot_handles: list[str] | None = None,
        policy: PacingPolicy | None = None,
    ) -> ToolEnv:
        return ToolEnv(
            owner=OWNER,
            repo=REPO,
            client_factory=lambda: make_client(fake_gh),
            pacer=WritePacer(policy or PacingPolicy(min_write_interval=0.0), sleep=sleeps),
            publish=PublishFlag(),
            bot_handles=["kodiai", "claude"] if bot_handles is None else bot_handles,
            review_output_key=review_output_key,
            pr_number=pr_number,
            delivery_id="d-1",
        )

    return build
