"""Fixtures for the tests that drive the real handler stack (review, mention, feedback, spend cap): a fresh
:class:`support.review_harness.ReviewHarness` per test over the module's fake GitHub (``fake_server`` from
support.fake_github_fixtures: acme/repo at installation 42, the harness's constants), and no permission
answer cached across tests. Each such folder's conftest imports them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

from kodiai.github.permissions import SHARED_CACHE
from support.fake_github import FakeGitHub
from support.fake_github_fixtures import reset_fake
from support.fake_github_pr import PrState
from support.mention_harness import MentionHarness
from support.review_harness import ReviewHarness


@pytest.fixture(autouse=True)
def fresh_permissions() -> Iterator[None]:
    """Each test sets its own roles on the fake GitHub: no answer cached by an earlier test survives."""
    SHARED_CACHE.clear()
    yield
    SHARED_CACHE.clear()


@pytest.fixture
def harness(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[ReviewHarness]:
    fake, state = fake_server
    reset_fake(fake, "all")
    h = ReviewHarness(tmp_path, fake, state)
    yield h
    h.close()


@contextmanager
def mention_harness(
    tmp_path: Path,
    fake_server: tuple[FakeGitHub, PrState],
    *,
    clear: Literal["all", "pr_state"],
    grant: str | None = None,
) -> Iterator[MentionHarness]:
    """A fresh :class:`MentionHarness` over the module's fake GitHub: no faults, an empty call log, and
    ``clear``: every stored kind emptied (``"all"``) or the PR routes' state only (``"pr_state"``);
    ``grant``: a commenter given write access."""
    fake, state = fake_server
    if clear == "pr_state":
        state.clear()
        reset_fake(fake)
    else:
        reset_fake(fake, "all")
    h = MentionHarness(tmp_path, fake, state)
    if grant is not None:
        h.grant(grant)
    try:
        yield h
    finally:
        h.close()
