"""The fake GitHub as pytest fixtures (a plugin registered in tests/conftest.py), and the factory behind them.

- ``fake``: one fake GitHub for the session with installation 1 (``acme``), for the HTTP server and webhook
  tests (their conftests clean it before each test with :func:`reset_fake`).
- ``fake_server``: one fake GitHub per module with the PR routes and the repository named by the
  ``fake_github_repo`` fixture (owner, repository, installation; override it in a conftest).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

import pytest

from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes

Repo = tuple[str, str, int]  # owner, repository, installation id
DEFAULT_REPO: Repo = ("acme", "repo", 42)


@contextmanager
def running_fake_github(
    installations: Mapping[int, str], repos: Iterable[Repo] = (), *, pr_routes: bool = False
) -> Iterator[tuple[FakeGitHub, PrState | None]]:
    """A started fake GitHub with these installations (id → account) and repositories; with
    ``pr_routes`` the PR routes are installed and their state is returned beside the server."""
    fake = FakeGitHub()
    state = install_pr_routes(fake) if pr_routes else None
    for installation, account in installations.items():
        fake.add_installation(installation, account=account)
    for owner, repo, installation in repos:
        fake.add_repo(owner, repo, installation_id=installation)
    with fake:
        yield fake, state


@contextmanager
def running_pr_server(repo: Repo = DEFAULT_REPO) -> Iterator[tuple[FakeGitHub, PrState]]:
    """A started fake GitHub with the PR routes and one repository (its owner's installation)."""
    owner, _, installation = repo
    with running_fake_github({installation: owner}, [repo], pr_routes=True) as (fake, state):
        assert state is not None
        yield fake, state


def reset_fake(fake: FakeGitHub, data: Iterable[str] | Literal["all"] = ()) -> None:
    """No faults and an empty call log; ``data``: the stored kinds to empty too (``"all"``: every one)."""
    with fake.lock:
        if data == "all":
            for key, value in list(fake.data.items()):
                if isinstance(value, (list, dict, set)) and not key.startswith("_"):
                    value.clear()
        else:
            for kind in data:
                fake.data[kind].clear()
        fake.faults.clear()
    fake.reset_calls()


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeGitHub]:
    with running_fake_github({1: "acme"}) as (server, _):
        yield server


@pytest.fixture(scope="module")
def fake_github_repo() -> Repo:
    return DEFAULT_REPO


@pytest.fixture(scope="module")
def fake_server(fake_github_repo: Repo) -> Iterator[tuple[FakeGitHub, PrState]]:
    with running_pr_server(fake_github_repo) as server:
        yield server
