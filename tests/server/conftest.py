"""Fixtures for the HTTP server tests: the session's fake GitHub (``fake``, from
support.fake_github_fixtures) cleaned before each test, a Kodiai server per test, and for the tests that run
``kodiai serve`` with the test handlers a fake GitHub per module with the PR routes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_github import FakeGitHub
from support.fake_github_fixtures import reset_fake, running_fake_github
from support.fake_github_pr import PrState


@pytest.fixture(autouse=True)
def _clean_fake(fake: FakeGitHub) -> None:
    reset_fake(fake)


@pytest.fixture(scope="module")
def github() -> Iterator[tuple[FakeGitHub, PrState]]:
    with running_fake_github({1: "acme"}, pr_routes=True) as (fake, state):
        assert state is not None
        yield fake, state
