"""Fixtures for the GitHub platform tests: a running fake GitHub server and local bare repos."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_github import FakeGitHub
from support.fake_github_fixtures import reset_fake, running_fake_github


@pytest.fixture(scope="session")
def _session_fake() -> Iterator[FakeGitHub]:
    with running_fake_github({1: "acme", 2: "other"}, [("acme", "widgets", 1)]) as (fake, _):
        yield fake


@pytest.fixture
def fake_github(_session_fake: FakeGitHub) -> FakeGitHub:
    """The shared fake server with a clean call log and no leftover faults."""
    reset_fake(_session_fake)
    return _session_fake
