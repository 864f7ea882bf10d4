"""Constants and helpers shared by the execution tests (imported by name: ``from conftest import`` would
pick up whichever directory's conftest was imported first when several test directories run together)."""

from __future__ import annotations

from github import Auth, Github
from support.fake_github import FakeGitHub

OWNER, REPO, INSTALLATION, PR = "acme", "widgets", 42, 7
KEY = "kodiai-review-output:v1:inst-42:acme/widgets:pr-7:action-opened:delivery-d-1:head-abc123def456"


class RecordingSleep:
    """An awaitable sleep that records the waits instead of blocking the test."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(fake: FakeGitHub) -> Github:
    """A fresh client per call, as in production; the installation token is minted once per server
    (PyGithub's installation auth caches it until expiry), like the platform's token cache."""
    auth = fake.data.get("_exec_installation_auth")
    if auth is None:
        auth = Auth.AppAuth(fake.app_id, fake.private_key_pem).get_installation_auth(INSTALLATION)
        fake.data["_exec_installation_auth"] = auth
    return Github(base_url=fake.url, auth=auth, retry=None)
