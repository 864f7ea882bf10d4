"""The daily spend cap, as pure decisions: which cap applies, whether a new run may start, and the
comment that says why not.

The operator caps each installation's spend per UTC day in the environment (``SPEND_CAP_USD_PER_DAY``,
per-installation ``SPEND_CAP_USD_PER_DAY_OVERRIDES``); a repository's ``.kodiai.yml`` may add a lower cap of
its own (``telemetry.dailySpendCapUsd``). The repository's cap is a second, separate limit on that
repository's own spend, so it can only ever stop runs earlier: it never raises the operator's. ``0`` (or
unset) means no cap, for both. Spend is what the ledger recorded today; reading it is the handler's job
(:mod:`kodiai.spend_cap.gate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

#: Why a run was refused (the ``reason`` of the ledger row, the log line and the metric).
RefusalReason = Literal["installation-cap", "repo-cap", "unreadable"]
#: Which kind of run was asked for (the ``kind`` of the ledger row and the metric).
RunKind = Literal["review", "mention", "write"]

SPEND_CAP_MARKER_PREFIX = "kodiai:spend-cap"


def repo_cap(value: float | None) -> float | None:
    """A repository's ``telemetry.dailySpendCapUsd``: ``None`` when unset or ``0``."""
    return value if value is not None and value > 0 else None


@dataclass(frozen=True)
class UtcDay:
    """One UTC calendar day: ``[start, end)`` and its ``YYYY-MM-DD`` label."""

    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        return self.start.strftime("%Y-%m-%d")


def utc_day(now: datetime) -> UtcDay:
    """The UTC day ``now`` falls in (a naive ``now`` is taken as UTC)."""
    moment = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return UtcDay(start, start + timedelta(days=1))


@dataclass(frozen=True)
class Spend:
    """Today's recorded spend: the installation's, and the repository's share of it."""

    installation_usd: float
    repo_usd: float


@dataclass(frozen=True)
class CapDecision:
    """Whether a new run may start; when not, which cap stopped it and the figures."""

    allowed: bool
    reason: RefusalReason | None = None
    cap_usd: float | None = None
    spent_usd: float | None = None


ALLOWED = CapDecision(allowed=True)


def decide(operator_cap: float | None, repository_cap: float | None, spend: Spend | None) -> CapDecision:
    """Refuse when today's spend reached a cap (``>=``); the installation's cap is named first.

    ``spend`` is ``None`` when it could not be read: with a cap set, that refuses (a cap that cannot be
    checked does not bound anything); with no cap, nothing is read and the run proceeds.
    """
    if operator_cap is None and repository_cap is None:
        return ALLOWED
    if spend is None:
        return CapDecision(False, "unreadable", operator_cap or repository_cap)
    if operator_cap is not None and spend.installation_usd >= operator_cap:
        return CapDecision(False, "installation-cap", operator_cap, spend.installation_usd)
    if repository_cap is not None and spend.repo_usd >= repository_cap:
        return CapDecision(False, "repo-cap", repository_cap, spend.repo_usd)
    return ALLOWED


def spend_cap_marker(day: UtcDay) -> str:
    """Invisible marker of the day's notice: one notice per pull request or issue per UTC day."""
    return f"<!-- {SPEND_CAP_MARKER_PREFIX}:{day.label} -->"


def format_usd(amount: float) -> str:
    """``$12.34``; amounts below a cent keep four decimals so a tiny cap does not read ``$0.00``."""
    if amount != 0 and abs(amount) < 0.01:
        return f"${amount:,.4f}"
    return f"${amount:,.2f}"


def format_wait(now: datetime, day: UtcDay) -> str:
    """Time left until the reset, rounded up to the minute: ``5 h 12 min``, ``40 min``."""
    moment = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    minutes = max(1, math.ceil((day.end - moment).total_seconds() / 60))
    hours, mins = divmod(minutes, 60)
    return f"{hours} h {mins} min" if hours else f"{mins} min"


def refusal_comment(decision: CapDecision, day: UtcDay, now: datetime) -> str:
    """The comment posted (once per day) where a run was refused."""
    reset = f"{day.end.strftime('%Y-%m-%d')} 00:00 UTC, in {format_wait(now, day)}"
    if decision.reason == "unreadable":
        lines = [
            "**Kodiai is paused here: the daily spend cap could not be checked.**",
            "",
            "A daily spend cap is set and today's spend could not be read, so Kodiai does not start new "
            "reviews or answer mentions. The server log says why (`Spend cap check failed`); each new request "
            "checks again.",
        ]
    else:
        spent = format_usd(decision.spent_usd or 0.0)
        cap = format_usd(decision.cap_usd or 0.0)
        if decision.reason == "repo-cap":
            whose = (
                f"This repository has spent {spent} on Kodiai today (UTC); its daily cap "
                f"(`telemetry.dailySpendCapUsd` in `.kodiai.yml`) is {cap}."
            )
        else:
            whose = f"This installation of Kodiai has spent {spent} today (UTC); its daily cap is {cap}."
        lines = [
            "**Kodiai is paused here: the daily spend cap is reached.**",
            "",
            f"{whose} No new reviews or mention answers start until the cap resets at {reset}.",
        ]
    lines += [
        "",
        "Requests made meanwhile are not queued: after the reset, any new trigger (a push, "
        "marking ready for review, re-requesting a review from Kodiai, or a mention) runs again.",
        "",
        spend_cap_marker(day),
    ]
    return "\n".join(lines)
