"""Fixtures for the execution tests: the fake GitHub server with PR routes and a real PyGithub client."""

from __future__ import annotations

from typing import Any

import pytest
from execution_helpers import INSTALLATION, OWNER, PR, REPO, RecordingSleep, make_client

from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv
from support.fake_github import FakeGitHub
from support.fake_github_fixtures import Repo, reset_fake
from support.fake_github_pr import PrState


@pytest.fixture(scope="module")
def fake_github_repo() -> Repo:
    """``fake_server`` (support.fake_github_fixtures) serves the execution tests' repository."""
    return OWNER, REPO, INSTALLATION


@pytest.fixture
def fake_gh(fake_server: tuple[FakeGitHub, PrState]) -> FakeGitHub:
    fake, state = fake_server
    reset_fake(
        fake,
        ["issue_comments", "review_comments", "reviews", "workflow_runs", "pulls", "jobs", "lost_responses"],
    )
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
