"""Fail-open steps: one helper, so a stage list shows which steps may fail and which may not.

A fail-open step logs a warning carrying the delivery id (bound in the log context by the dispatcher)
and the step's name, and the review continues with the step's neutral default (behaviour R0.4).
Anything not wrapped is fail-closed: it reaches the job's outer catch and its error comment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kodiai.log import Logger, redact

T = TypeVar("T")


async def fail_open(
    log: Logger, step: str, work: Callable[[], Awaitable[T]], default: T, message: str | None = None
) -> T:
    """``await work()``, or ``default`` after a warning when it raises (cancellation still propagates)."""
    try:
        return await work()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning(
            message or f"{step} failed (fail-open)",
            gate=step,
            err=redact(f"{type(exc).__name__}: {exc}"),
        )
        return default


def fail_open_sync(log: Logger, step: str, work: Callable[[], T], default: T, message: str | None = None) -> T:
    """The synchronous form of :func:`fail_open`, for pure-but-fallible steps."""
    try:
        return work()
    except Exception as exc:
        log.warning(
            message or f"{step} failed (fail-open)",
            gate=step,
            err=redact(f"{type(exc).__name__}: {exc}"),
        )
        return default
