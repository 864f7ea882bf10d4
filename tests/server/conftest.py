"""Fixtures for the HTTP server tests: one fake GitHub for the session, a Kodiai server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_github import FakeGitHub


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
