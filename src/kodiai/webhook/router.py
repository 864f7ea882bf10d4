"""The event router (behaviour P3.3): bot filter, specific + general keys, concurrent handlers.

Handlers are ``async def handler(event: WebhookEvent) -> None`` callables registered under a key
(``"pull_request.opened"`` or a bare event name) with a name (``"review"``). A handler awaits its
whole queued job, so a dispatch settles only when its jobs finish. One handler's failure never
affects the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from kodiai.log import CachedLogger
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent, sender_login

Handler = Callable[[WebhookEvent], Awaitable[None]]
HandlerDone = Callable[[str], None]


@dataclass(frozen=True)
class Registration:
    key: str
    name: str
    handler: Handler


class DispatchOutcome(BaseModel):
    status: Literal["filtered", "unrouted", "dispatched"]
    matched: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    failures: dict[str, str] = {}


class EventRouter:
    """Register handlers by key; dispatch an event to every matching one."""

    def __init__(self, bot_filter: BotFilter) -> None:
        self.bot_filter = bot_filter
        self._by_key: dict[str, list[Registration]] = {}
        self._log = CachedLogger("kodiai.webhook.router")

    def register(self, key: str, handler: Handler, *, name: str | None = None) -> None:
        """Add ``handler`` for ``key``; registration order is dispatch order."""
        label = name or str(getattr(handler, "__name__", key))
        reg = Registration(key=key, name=label, handler=handler)
        self._by_key.setdefault(key, []).append(reg)

    def keys(self) -> dict[str, list[str]]:
        """The event→handler-name table (what the app subscribes to)."""
        return {key: [r.name for r in regs] for key, regs in self._by_key.items()}

    def handlers_for(self, event: WebhookEvent) -> list[Registration]:
        """Handlers for the specific key (event.action) first, then the general key (event)."""
        specific = self._by_key.get(event.specific_key, []) if event.specific_key else []
        return [*specific, *self._by_key.get(event.name, [])]

    def filtered(self, event: WebhookEvent) -> bool:
        """True when the bot filter drops this event (events without a sender object skip the filter)."""
        sender = event.routing.get("sender")
        if not isinstance(sender, dict):
            return False
        decision = self.bot_filter.decide(sender)
        if not decision.process:
            self._log.debug(decision.reason, deliveryId=event.id, sender=sender_login(event.routing))
        return not decision.process

    async def dispatch(
        self,
        event: WebhookEvent,
        *,
        skip: Iterable[str] = (),
        on_handler_done: HandlerDone | None = None,
    ) -> DispatchOutcome:
        """Run every matching handler concurrently and wait for all of them to settle.

        ``skip`` names handlers that already finished for this delivery (journal replay);
        ``on_handler_done`` is told the name of each handler that completes without raising.
        """
        log = self._log
        ids = {"deliveryId": event.id, "eventName": event.name}  # what bind() gave, without its cost
        if self.filtered(event):
            log.info(
                "Event filtered before dispatch",  # the original's `event` field is `eventName`
                **ids,
                action=event.action,
                sender=sender_login(event.routing),
                filtered=True,
                filterReason="bot-filter",
                # which rule dropped it: the app's own event, or a bot not on BOT_ALLOW_LIST
                reason=self.bot_filter.decide(event.routing["sender"]).reason,
            )
            return DispatchOutcome(status="filtered")

        specific = self._by_key.get(event.specific_key, []) if event.specific_key else []
        general = self._by_key.get(event.name, [])
        matched = [*specific, *general]
        log.info(
            "Router evaluated dispatch keys",
            **ids,
            specificKey=event.specific_key,
            generalKey=event.name,
            specificHandlerCount=len(specific),
            generalHandlerCount=len(general),
            matchedHandlerCount=len(matched),
        )
        if not matched:
            log.info("Event skipped because no handlers matched", **ids, filtered=False)
            return DispatchOutcome(status="unrouted")

        done_before = set(skip)
        to_run = [r for r in matched if r.name not in done_before]

        async def run(reg: Registration) -> None:
            await reg.handler(event)
            if on_handler_done is not None:  # recorded as soon as it finishes, not when all settle
                on_handler_done(reg.name)

        results: list[BaseException | None]
        if len(to_run) == 1:  # the common case: await it here rather than through a gathered task
            try:
                await run(to_run[0])
                results = [None]
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                results = [exc]
        else:
            results = list(await asyncio.gather(*(run(r) for r in to_run), return_exceptions=True))
        succeeded = failed = 0
        failures: dict[str, str] = {}
        for reg, result in zip(to_run, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                failed += 1
                failures[reg.name] = f"{type(result).__name__}: {result}"
                log.error(
                    "Handler failed during dispatch", **ids, handler=reg.name, reason=failures[reg.name]
                )
            else:
                succeeded += 1
        outcome = DispatchOutcome.model_construct(  # every field computed here, already of its type
            status="dispatched",
            matched=len(matched),
            succeeded=succeeded,
            failed=failed,
            skipped=len(matched) - len(to_run),
            failures=failures,
        )
        log.info(
            f"Dispatched to {len(to_run)} handler(s)",
            **ids,
            succeeded=outcome.succeeded,
            failed=outcome.failed,
        )
        return outcome
