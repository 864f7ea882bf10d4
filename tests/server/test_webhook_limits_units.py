"""The webhook route's body budget and log throttle (pure; the HTTP behaviour is in test_hostile_clients)."""

from __future__ import annotations

import pytest

from kodiai.server.webhook_asgi import BodyBudget, BodyBudgetError, LogThrottle


def test_body_budget_bounds_bodies_and_bytes_and_gives_them_back() -> None:
    budget = BodyBudget(max_bodies=2, max_bytes=100)
    a, b = budget.open(), budget.open()
    with pytest.raises(BodyBudgetError):
        budget.open()  # every slot taken
    a.reserve(60)
    a.reserve(40)  # already covered: nothing more held
    with pytest.raises(BodyBudgetError):
        b.reserve(41)  # 60 + 41 > 100
    b.reserve(40)
    assert (budget.bodies, budget.bytes) == (2, 100)
    a.release()
    assert (budget.bodies, budget.bytes) == (1, 40)
    budget.open().reserve(60)
    b.release()
    assert (budget.bodies, budget.bytes) == (1, 60)


def test_log_throttle_admits_one_line_per_interval_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = LogThrottle(interval=10.0, clock=lambda: now[0])
    assert throttle.admit("m") == 0
    assert throttle.admit("m") is None and throttle.admit("m") is None
    assert throttle.admit("other") == 0  # per message
    now[0] = 10.0
    assert throttle.admit("m") == 2  # the next line says two were held back
    assert throttle.admit("m") is None
