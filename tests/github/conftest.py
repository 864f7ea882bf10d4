"""Fixtures for the GitHub platform tests: a running fake GitHub server and local bare repos."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_github import FakeGitHub


@pytest.fixture(scope="session")
def _session_fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_installation(1, account="acme")
    fake.add_installation(2, account="other")
    fake.add_repo("acme", "widgets", installation_id=1)
    with fake:
        yield fake


@pytest.fixture
def fake_github(_session_fake: FakeGitHub) -> FakeGitHub:
    """The shared fake server with a clean call log and no leftover faults."""
    _session_fake.reset_calls()
    _session_fake.faults.clear()
    return _session_fake
