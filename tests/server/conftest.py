"""Fixtures for the HTTP server tests: one fake GitHub for the session, a Kodiai server per test, and for
the tests that run ``kodiai serve`` with the test handlers a fake GitHub per module with the PR routes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub()
    server.add_installation(1, account="acme")
    with server:
        yield server


@pytest.fixture(autouse=True)
def _clean_fake(fake: FakeGitHub) -> None:
    fake.faults.clear()
    fake.reset_calls()


@pytest.fixture(scope="module")
def github() -> Iterator[tuple[FakeGitHub, PrState]]:
    fake = FakeGitHub()
    fake.add_installation(1, account="acme")
    state = install_pr_routes(fake)
    with fake:
        yield fake, state
