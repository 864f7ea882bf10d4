"""The browser tests' Chromium: one per module (:mod:`support.browser`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.browser import Browser, start_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    started = start_browser()
    try:
        yield started
    finally:
        started.driver.quit()
