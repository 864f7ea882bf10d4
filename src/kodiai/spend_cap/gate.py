"""The daily spend cap at the door of every Claude run (review, mention, write mode), and its ledger.

:func:`check_spend_cap` runs after a job's own gates, just before it would start Claude: with no cap set it
reads nothing and allows; otherwise it sums today's ``spend_ledger`` rows of the installation (one indexed
query) and lets :func:`kodiai.spend_cap.policy.decide` answer. A refusal is logged (``Run refused by the
daily spend cap``), counted in ``kodiai_spend_cap_refusals``, written to the ledger (outcome ``refused``)
and explained in one comment per pull request or issue per UTC day (a hidden marker dedups it).

A run already started is never cut off; it is recorded by :func:`record_run_spend` when it ends, whatever
the repository's ``telemetry.enabled`` says. Bookkeeping writes are fail-open; only the read that decides is
fail-closed (a cap that cannot be checked refuses).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kodiai.github.models import IssueComment, parse_list
from kodiai.github.rest import RestApi
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import Logger, redact
from kodiai.spend_cap.policy import (
    CapDecision,
    RunKind,
    Spend,
    UtcDay,
    decide,
    refusal_comment,
    repo_cap,
    spend_cap_marker,
    utc_day,
)
from kodiai.storage.telemetry import SpendEntry, sqlite_utc

REFUSED_MESSAGE = "Run refused by the daily spend cap"
CHECK_FAILED_MESSAGE = "Spend cap check failed"
NOTICE_SCAN_LIMIT = 1000


@dataclass(frozen=True)
class SpendTarget:
    """Where a run would happen: the installation, ``owner/name``, and the pull request or issue."""

    installation_id: int
    repo: str
    number: int
    delivery_id: str
    kind: RunKind


async def read_spend(deps: HandlerDeps, target: SpendTarget, day: UtcDay, log: Logger) -> Spend | None:
    """Today's spend of the installation and the repository, or ``None`` (logged) when unreadable."""
    store = deps.telemetry
    if store is None:
        log.warning(CHECK_FAILED_MESSAGE, gate="spend-cap", err="no telemetry store")
        return None
    try:
        spent = await asyncio.to_thread(
            store.spend_between, target.installation_id, target.repo, day.start, day.end
        )
    except Exception as exc:
        log.warning(CHECK_FAILED_MESSAGE, gate="spend-cap", err=redact(f"{type(exc).__name__}: {exc}"))
        return None
    deps.metrics.spend_today_usd.labels(str(target.installation_id)).set(spent[0])
    return Spend(*spent)


async def check_spend_cap(
    deps: HandlerDeps, rest: RestApi, target: SpendTarget, configured_cap: float | None, log: Logger
) -> bool:
    """Whether the run may start; on a refusal everything above is done before returning ``False``.

    ``configured_cap`` is the trusted ``.kodiai.yml``'s ``telemetry.dailySpendCapUsd``.
    """
    operator_cap = deps.spend_caps.for_installation(target.installation_id)
    own_cap = repo_cap(configured_cap)
    if operator_cap is None and own_cap is None:
        return True
    now = deps.clock()
    day = utc_day(now)
    decision = decide(operator_cap, own_cap, await read_spend(deps, target, day, log))
    if decision.allowed:
        return True
    log.warning(
        REFUSED_MESSAGE,
        gate="spend-cap",
        gateResult="skipped",
        skipReason="spend-cap",
        reason=decision.reason,
        kind=target.kind,
        spentUsd=decision.spent_usd,
        capUsd=decision.cap_usd,
        resetsAt=sqlite_utc(day.end) + " UTC",
    )
    deps.metrics.spend_cap_refusals.labels(target.kind, decision.reason or "").inc()
    await record_refusal(deps, target, decision, log)
    await fail_open(
        log,
        "spend-cap-notice",
        lambda: post_notice(rest, target.number, refusal_comment(decision, day, now), day, log),
        None,
        "Failed to post the spend cap notice",
    )
    return False


async def record_refusal(deps: HandlerDeps, target: SpendTarget, decision: CapDecision, log: Logger) -> None:
    await _write(deps, target, log, outcome="refused", reason=decision.reason, cost_usd=0.0)


async def record_run_spend(deps: HandlerDeps, target: SpendTarget, cost_usd: float | None, log: Logger) -> None:
    """One ledger row for a Claude run that ran (its cost as the CLI reported it; 0 when it reported none,
    e.g. a run cut by its timeout). Refreshes the spend gauge when the installation has a cap."""
    await _write(deps, target, log, outcome="run", reason=None, cost_usd=float(cost_usd or 0.0))
    if deps.telemetry is not None and deps.spend_caps.for_installation(target.installation_id) is not None:
        day = utc_day(deps.clock())
        await fail_open(log, "spend-gauge", lambda: read_spend(deps, target, day, log), None)


async def _write(
    deps: HandlerDeps, target: SpendTarget, log: Logger, *, outcome: str, reason: str | None, cost_usd: float
) -> None:
    store = deps.telemetry
    if store is None:
        return
    entry = SpendEntry(
        created_at=deps.clock(),
        installation_id=target.installation_id,
        repo=target.repo,
        number=target.number,
        delivery_id=target.delivery_id,
        kind=target.kind,
        outcome=outcome,
        reason=reason,
        cost_usd=cost_usd,
    )
    await fail_open(
        log,
        "spend-ledger",
        lambda: asyncio.to_thread(store.record_spend, entry),
        None,
        "Spend ledger write failed (fail-open)",
    )


async def post_notice(rest: RestApi, number: int, body: str, day: UtcDay, log: Logger) -> None:
    """Post ``body`` unless today's notice is already among the comments updated since the day began."""
    marker = spend_cap_marker(day)
    since = day.start.strftime("%Y-%m-%dT%H:%M:%SZ")
    data = await rest.paginate(f"/issues/{number}/comments", max_items=NOTICE_SCAN_LIMIT, since=since)
    if any(c.body is not None and marker in c.body for c in parse_list(IssueComment, data)):
        log.info("Spend cap notice already posted today", gate="spend-cap")
        return
    await rest.post(f"/issues/{number}/comments", {"body": body})
    log.info("Spend cap notice posted", gate="spend-cap")
