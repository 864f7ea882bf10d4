"""The pytest side of the tests that run ``kodiai serve`` with the test handlers (``storm_handlers``,
``store_handlers``): the delivery they send and how they count a delivery's GitHub effect."""

from __future__ import annotations

import json

from server.storm_handlers import REPO, marker
from support.fake_github_pr import PrState

OWNER, NAME = REPO.split("/")


def opened_issue(number: int, *, store: str | None = None) -> bytes:
    """An ``issues.opened`` body for issue ``number`` of installation 1; ``store``: the store the
    ``store_handlers`` job writes to (else the server's ``KODIAI_TEST_STORE``)."""
    payload: dict[str, object] = {"action": "opened", "installation": {"id": 1}, "issue": {"number": number}}
    if store is not None:
        payload["kodiai_test_store"] = store
    return json.dumps(payload).encode()


def effects(state: PrState, number: int, delivery: str) -> int:
    """How many of the issue's comments carry ``delivery``'s marker (1 when its effect landed once)."""
    return sum(1 for c in state.issue_comments(OWNER, NAME, number) if marker(delivery) in c["body"])
