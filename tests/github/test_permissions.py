"""Permission lookups against the fake GitHub over HTTP: legacy values, the short cache, fail-closed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from github import Auth, Github
from kodiai.github.permissions import (
    PermissionCache,
    PermissionLookupError,
    access_level,
    has_write_access,
    lookup_permission,
)
from kodiai.github.rest import GitHubRest
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes

OWNER, REPO, INSTALLATION = "acme", "widgets", 1


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeGitHub, PrState]]:
    fake = FakeGitHub()
    fake.add_installation(INSTALLATION, account=OWNER)
    state = install_pr_routes(fake)
    with fake:
        yield fake, state


@pytest.fixture
def rest(server: tuple[FakeGitHub, PrState]) -> GitHubRest:
    fake = server[0]
    fake.reset_calls()
    fake.faults.clear()
    auth = Auth.AppAuth(fake.app_id, fake.private_key_pem).get_installation_auth(INSTALLATION)
    client = Github(
        base_url=fake.url, auth=auth, retry=None, seconds_between_requests=None, seconds_between_writes=None
    )
    return GitHubRest(client, OWNER, REPO)


def permission_calls(fake: FakeGitHub) -> int:
    return len(fake.calls_to("GET", r".*/permission"))


@pytest.mark.parametrize(
    ("role", "expected", "level"),
    [
        ("admin", "admin", "write"),
        ("maintain", "write", "write"),
        ("write", "write", "write"),
        ("triage", "read", "read"),
        ("read", "read", "read"),
    ],
)
async def test_roles_map_to_access(
    server: tuple[FakeGitHub, PrState], rest: GitHubRest, role: str, expected: str, level: str
) -> None:
    server[1].set_permission(OWNER, REPO, f"user-{role}", role)
    assert await lookup_permission(rest, OWNER, REPO, f"user-{role}", cache=None) == expected
    assert await access_level(rest, OWNER, REPO, f"user-{role}", cache=None) == level


async def test_answers_are_cached_briefly(server: tuple[FakeGitHub, PrState], rest: GitHubRest) -> None:
    now = [0.0]
    cache = PermissionCache(ttl=60, clock=lambda: now[0])
    server[1].set_permission(OWNER, REPO, "carol", "write")
    for _ in range(3):
        assert await lookup_permission(rest, OWNER, REPO, "Carol", cache=cache) == "write"
    assert permission_calls(server[0]) == 1
    server[1].set_permission(OWNER, REPO, "carol", "read")  # access revoked
    now[0] = 61.0
    assert await lookup_permission(rest, OWNER, REPO, "carol", cache=cache) == "read"
    assert permission_calls(server[0]) == 2


async def test_a_failed_lookup_is_unknown_and_not_cached(
    server: tuple[FakeGitHub, PrState], rest: GitHubRest
) -> None:
    fake, state = server
    state.set_permission(OWNER, REPO, "dave", "admin")
    cache = PermissionCache()
    fake.fail(502, path=r"/permission$")
    with pytest.raises(PermissionLookupError):
        await lookup_permission(rest, OWNER, REPO, "dave", cache=cache)
    fake.fail(502, path=r"/permission$")
    assert await access_level(rest, OWNER, REPO, "dave", cache=cache) == "unknown"
    assert await lookup_permission(rest, OWNER, REPO, "dave", cache=cache) == "admin"


async def test_logins_that_are_not_logins_never_reach_github(
    server: tuple[FakeGitHub, PrState], rest: GitHubRest
) -> None:
    for login in ("", "-rf", "a/b"):
        with pytest.raises(PermissionLookupError):
            await lookup_permission(rest, OWNER, REPO, login, cache=None)
    assert await access_level(rest, OWNER, REPO, None, cache=None) == "unknown"
    assert permission_calls(server[0]) == 0


def test_only_push_permissions_count_as_write() -> None:
    assert [
        p
        for p in ("admin", "maintain", "write", "WRITE", "triage", "read", "none", "", None)
        if has_write_access(p)
    ] == ["admin", "maintain", "write", "WRITE"]
