"""Issue 15 item 11: an installation-token response without a usable token is an error and is never
cached (the next call mints again), so no client or clone ever runs without credentials.

The real PyGithub client talks to the fake GitHub, whose fault injection answers the token route with a
201 and a malformed body.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kodiai.github.app_auth import GitHubApp, GitHubAppError
from kodiai.github.retry import GitHubRetry
from kodiai.github.workspace import GitCommandError, WorkspaceManager
from support.fake_github import FakeGitHub

TOKEN_PATH = r"^/app/installations/1/access_tokens$"
LATER = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def app_for(fake: FakeGitHub) -> GitHubApp:
    retry = GitHubRetry(total=2, backoff_factor=0.01, max_wait=1)
    return GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url, retry=retry)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"expires_at": LATER, "permissions": {}}, "no token"),
        ({"token": "", "expires_at": LATER}, "no token"),
        ({"token": None, "expires_at": LATER}, "no token"),
        ({"token": 12345, "expires_at": LATER}, "no token"),
        ({"token": "ghs_ok\r\nX-Injected: 1", "expires_at": LATER}, "no token"),
        ({"token": "ghs_" + "a" * 36}, "expires_at"),
        ({"token": "ghs_" + "a" * 36, "expires_at": "next tuesday"}, "expires_at"),
    ],
    ids=["missing", "empty", "null", "number", "line-break", "no-expiry", "bad-expiry"],
)
def test_malformed_token_response_raises_and_is_not_cached(
    fake_github: FakeGitHub, body: dict[str, Any], problem: str
) -> None:
    app = app_for(fake_github)
    fake_github.fail(201, body=body, method="POST", path=TOKEN_PATH)
    with pytest.raises(GitHubAppError, match=problem) as err:
        app.installation_token(1)
    assert "installation 1" in str(err.value) and "nothing was cached" in str(err.value)
    # nothing was cached: the next call mints again and gets a real token
    token = app.installation_token(1)
    assert token.startswith("ghs_") and token != body.get("token")
    assert len(fake_github.calls_to("POST", "/app/installations/1/access_tokens")) == 2
    assert app.installation_token(1) == token  # the valid one is cached
    assert len(fake_github.calls_to("POST", "/app/installations/1/access_tokens")) == 2


def test_installation_client_never_sends_a_request_without_credentials(fake_github: FakeGitHub) -> None:
    """A malformed token response fails the API call instead of sending ``Authorization: token None``."""
    app = app_for(fake_github)
    fake_github.fail(201, body={"expires_at": LATER}, method="POST", path=TOKEN_PATH)
    gh = app.installation_client(1)
    with pytest.raises(GitHubAppError):
        gh.get_repo("acme/widgets")
    assert not fake_github.calls_to("GET", "/repos/acme/widgets")
    assert gh.get_repo("acme/widgets").full_name == "acme/widgets"
    [call] = fake_github.calls_to("GET", "/repos/acme/widgets")
    assert call.headers["authorization"].startswith("token ghs_")


async def test_clone_does_not_run_without_credentials(tmp_path: Path, fake_github: FakeGitHub) -> None:
    """The workspace's token provider raises, so no git process runs and no directory is left."""
    app = app_for(fake_github)

    async def provider(installation_id: int) -> str:
        return await asyncio.to_thread(app.installation_token, installation_id)

    mgr = WorkspaceManager(provider, root=tmp_path / "ws", git_base_url=fake_github.url)
    fake_github.fail(201, body={"expires_at": LATER}, method="POST", path=TOKEN_PATH)
    with pytest.raises(GitCommandError, match="token response for installation 1 is unusable"):
        await mgr.create(1, owner="acme", repo="widgets", ref="main")
    assert list((tmp_path / "ws").iterdir()) == []
    assert not [r for r in fake_github.records if r.path.startswith("/acme/widgets.git/")]
