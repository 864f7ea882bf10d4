"""The daily spend cap in the review and mention handlers, over the fake GitHub with real SQLite stores.

The clock is injected (``HandlerDeps.clock``): the ledger rows, the day the cap sums and the notice's
reset time all follow it, so "the next UTC day" is a clock step, not a wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kodiai.handler_kit.deps import OperatorCaps
from kodiai.storage.telemetry import SpendEntry
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.mention_harness import MentionHarness
from support.review_harness import INSTALLATION, OWNER, REPO
from support.scripted_transport import Result

NOON = datetime(2031, 5, 6, 12, 0, tzinfo=UTC)
MARKER = "<!-- kodiai:spend-cap:2031-05-06 -->"
REFUSED = "Run refused by the daily spend cap"
BOT = {"login": "kodiai[bot]", "type": "Bot"}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
def make(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState], clock: Clock) -> Iterator[Any]:
    """``make(cap)`` → a harness (review + mention handlers) whose operator cap is ``cap`` USD a day."""
    fake, state = fake_server
    with fake.lock:
        for key, value in list(fake.data.items()):
            if isinstance(value, (list, dict, set)) and not key.startswith("_"):
                value.clear()
        fake.faults.clear()
    fake.reset_calls()
    built: list[MentionHarness] = []

    def build(cap: float = 0.0, overrides: dict[int, float] | None = None) -> MentionHarness:
        h = MentionHarness(tmp_path, fake, state, spend_caps=OperatorCaps(cap, overrides or {}), clock=clock)
        h.grant("alice")
        built.append(h)
        return h

    yield build
    for h in built:
        h.close()


def spend(h: MentionHarness, cost: float, *, repo: str = f"{OWNER}/{REPO}", at: datetime = NOON) -> None:
    """Spend recorded earlier today by another run of the installation."""
    assert h.telemetry is not None
    h.telemetry.record_spend(
        SpendEntry(
            created_at=at - timedelta(hours=1),
            installation_id=INSTALLATION,
            repo=repo,
            number=1,
            kind="review",
            outcome="run",
            cost_usd=cost,
        )
    )


def notices(h: MentionHarness, number: int = 101) -> list[str]:
    return [c["body"] for c in h.issue_comments(number) if "kodiai:spend-cap" in c["body"]]


def ledger(h: MentionHarness) -> list[tuple[Any, ...]]:
    return h.rows(
        "telemetry.db",
        "SELECT created_at, installation_id, repo, number, kind, outcome, reason, cost_usd "
        "FROM spend_ledger ORDER BY id",
    )


def refusals(h: MentionHarness, kind: str, reason: str = "installation-cap") -> float:
    value = h.metrics.registry.get_sample_value(
        "kodiai_spend_cap_refusals_total", {"kind": kind, "reason": reason}
    )
    return value or 0.0


async def test_under_the_cap_a_review_runs_and_its_cost_counts_even_with_telemetry_disabled(
    make: Any,
) -> None:
    h = make(1.0)
    pull = h.open_pr(config="telemetry:\n  enabled: false\n")
    h.script(Result(total_cost_usd=0.75))
    await h.deliver(pull)
    assert len(h.executor.contexts) == 1 and notices(h) == []
    assert h.rows("telemetry.db", "SELECT COUNT(*) FROM executions") == [(0,)]  # the repo opted out
    assert ledger(h) == [("2031-05-06 12:00:00", INSTALLATION, "acme/repo", 101, "review", "run", None, 0.75)]
    label = h.metrics.spend_today_usd.label(str(INSTALLATION))
    assert h.metrics.registry.get_sample_value("kodiai_spend_today_usd", {"installation": label}) == 0.75


async def test_at_the_cap_a_review_is_refused_once_a_day_and_runs_again_the_next_day(
    make: Any, clock: Clock
) -> None:
    h = make(1.0)
    pull = h.open_pr()
    spend(h, 0.6)
    h.script(Result(total_cost_usd=0.5))
    await h.deliver(pull)  # 0.6 < 1.0: runs, and is not cut off when it takes the day to 1.1
    assert len(h.executor.contexts) == 1

    second = h.open_pr(
        102, branch="second", base_files={"README.md": "# two\n", "src/index.ts": "export const a = 1;\n"}
    )
    await h.deliver(second)
    assert len(h.executor.contexts) == 1, "no Claude run once the cap is reached"
    (notice,) = notices(h, 102)
    assert (
        "daily spend cap is reached" in notice
        and "has spent $1.10 today (UTC); its daily cap is $1.00" in notice
    )
    assert "resets at 2031-05-07 00:00 UTC, in 12 h 0 min" in notice and MARKER in notice
    (line,) = h.logged(REFUSED)
    assert (line["log_level"], line["reason"], line["kind"], line["capUsd"]) == (
        "warning",
        "installation-cap",
        "review",
        1.0,
    )
    assert refusals(h, "review") == 1.0
    assert ledger(h)[-1][1:] == (INSTALLATION, "acme/repo", 102, "review", "refused", "installation-cap", 0.0)

    clock.now = NOON + timedelta(hours=6)
    await h.deliver(
        second, "review_requested", requested_reviewer=BOT
    )  # an explicit re-request, the same day
    assert len(h.executor.contexts) == 1 and len(notices(h, 102)) == 1, "one notice per PR per UTC day"
    assert refusals(h, "review") == 2.0

    clock.now = NOON + timedelta(hours=12, minutes=1)  # 00:01 UTC the next day
    await h.deliver(second, "ready_for_review")  # not a re-request: the refused runs gave back their claim
    assert len(h.executor.contexts) == 2 and len(notices(h, 102)) == 1


async def test_mentions_and_write_requests_are_refused_before_the_eyes_reaction(make: Any) -> None:
    h = make(2.0)
    h.open_pr(config="write:\n  enabled: true\n")
    spend(h, 2.0)
    await h.mention("@kodiai what does this do?")
    await h.mention("@kodiai apply: rename the constant")
    assert h.executor.contexts == [] and h.comment_reactions() == []
    assert len(notices(h)) == 1
    assert (refusals(h, "mention"), refusals(h, "write")) == (1.0, 1.0)
    assert [row[4:7] for row in ledger(h)[1:]] == [
        ("mention", "refused", "installation-cap"),
        ("write", "refused", "installation-cap"),
    ]


async def test_kodiai_yml_can_lower_the_cap_for_its_repository(make: Any) -> None:
    h = make(10.0)
    pull = h.open_pr(config="telemetry:\n  dailySpendCapUsd: 0.5\n")
    spend(h, 3.0, repo="acme/elsewhere")  # the installation's other repos do not count toward it
    h.script(Result(total_cost_usd=0.5))
    await h.deliver(pull)
    assert len(h.executor.contexts) == 1
    await h.mention("@kodiai and now?")
    assert len(h.executor.contexts) == 1 and refusals(h, "mention", "repo-cap") == 1.0
    (notice,) = notices(h)
    assert (
        "This repository has spent $0.50" in notice
        and "(`telemetry.dailySpendCapUsd` in `.kodiai.yml`) is $0.50" in notice
    )


async def test_kodiai_yml_cannot_raise_the_operator_cap(make: Any) -> None:
    h = make(1.0, {INSTALLATION + 1: 100.0})  # another installation's override is not this one's
    pull = h.open_pr(config="telemetry:\n  dailySpendCapUsd: 100\n")
    spend(h, 1.0)
    await h.deliver(pull)
    assert h.executor.contexts == [] and refusals(h, "review") == 1.0
    (notice,) = notices(h)
    assert "its daily cap is $1.00" in notice


async def test_an_unreadable_spend_record_refuses_only_when_a_cap_is_set(make: Any) -> None:
    capped = make(5.0)
    assert capped.telemetry is not None
    capped.telemetry.close()
    pull = capped.open_pr()
    await capped.deliver(pull)
    assert capped.executor.contexts == [] and refusals(capped, "review", "unreadable") == 1.0
    assert capped.logged("Spend cap check failed")
    (notice,) = notices(capped)
    assert "could not be checked" in notice


async def test_without_a_cap_an_unreadable_spend_record_does_not_stop_reviews(make: Any) -> None:
    uncapped = make()
    assert uncapped.telemetry is not None
    uncapped.telemetry.close()
    pull = uncapped.open_pr()
    await uncapped.deliver(pull)
    assert len(uncapped.executor.contexts) == 1 and notices(uncapped) == []
    assert not uncapped.logged(REFUSED)
