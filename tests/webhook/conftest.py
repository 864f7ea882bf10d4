"""Fixtures for the webhook pipeline tests: the session's fake GitHub (``fake``, from
support.fake_github_fixtures) cleaned before each test, a Kodiai server per test."""

from __future__ import annotations

import pytest

from support.fake_github import FakeGitHub
from support.fake_github_fixtures import reset_fake


@pytest.fixture(autouse=True)
def _clean_fake(fake: FakeGitHub) -> None:
    reset_fake(fake)
