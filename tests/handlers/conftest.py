"""Fixtures for the handler tests: one fake GitHub per module, a fresh harness per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from review_harness import INSTALLATION, OWNER, REPO, ReviewHarness

from kodiai.github.permissions import SHARED_CACHE
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes


@pytest.fixture(autouse=True)
def fresh_permissions() -> Iterator[None]:
    """Each test sets its own roles on the fake GitHub: no answer cached by an earlier test survives."""
    SHARED_CACHE.clear()
    yield
    SHARED_CACHE.clear()


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeGitHub, PrState]]:
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        yield fake, state


@pytest.fixture
def harness(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[ReviewHarness]:
    fake, state = fake_server
    with fake.lock:
        for key, value in list(fake.data.items()):
            if isinstance(value, (list, dict, set)) and not key.startswith("_"):
                value.clear()
        fake.faults.clear()
    fake.reset_calls()
    h = ReviewHarness(tmp_path, fake, state)
    yield h
    h.close()
