"""Fixtures for the execution tests: the fake GitHub server with PR routes and a real PyGithub client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from github import Auth, Github
from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes

OWNER, REPO, INSTALLATION, PR = "acme", "widgets", 42, 7
KEY = "kodiai-review-output:v1:inst-42:acme/widgets:pr-7:action-opened:delivery-d-1:head-abc123def456"


class RecordingSleep:
    """An awaitable sleep that records the waits instead of blocking the test."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


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


def make_client(fake: FakeGitHub) -> Github:
    """A fresh client per call, as in production; the installation token is minted once per server
    (PyGithub's installation auth caches it until expiry), like the platform's token cache."""
    auth = fake.data.get("_exec_installation_auth")
    if auth is None:
        auth = Auth.AppAuth(fake.app_id, fake.private_key_pem).get_installation_auth(INSTALLATION)
        fake.data["_exec_installation_auth"] = auth
    return Github(base_url=fake.url, auth=auth, retry=None)


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
