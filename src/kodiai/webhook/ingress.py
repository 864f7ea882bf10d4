"""``POST /webhooks/github`` without the HTTP framework (spec/platform.md §3.1, plus the port's fixes).

Order: signature over the exact bytes → JSON check and routing fields (invalid → 400, *not* marked seen:
PARITY fix; the full payload is parsed when a handler reads it, see :mod:`kodiai.webhook.routing`) →
dedup + journal in one SQLite transaction (before the 200) → background dispatch → 200 at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.jobs.dispatcher import DeliveryDispatcher
from kodiai.jobs.journal import Intake, JobJournal
from kodiai.log import CachedLogger
from kodiai.metrics import Metrics
from kodiai.webhook.body import parse_json
from kodiai.webhook.events import build_event, build_lazy_event, repository_name, sender_login
from kodiai.webhook.router import EventRouter
from kodiai.webhook.routing import routing_view
from kodiai.webhook.signature import verify_signature

RECEIVED = {"received": True}
_EVENT_LABEL = re.compile(r"[a-z_]{1,64}")


class IngressResult(BaseModel):
    """What to answer: status and a JSON body (``None`` → empty ``text/plain``)."""

    model_config = ConfigDict(frozen=True)

    status: int
    body: dict[str, Any] | None = None
    outcome: str


class WebhookIngress:
    """Verifies, dedups, journals and hands a delivery to the dispatcher."""

    def __init__(
        self,
        *,
        secret: str,
        router: EventRouter,
        journal: JobJournal,
        dispatcher: DeliveryDispatcher,
        metrics: Metrics,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._secret = secret.encode()
        self.router = router
        self.journal = journal
        self.dispatcher = dispatcher
        self.metrics = metrics
        self._clock = clock
        self._log = CachedLogger("kodiai.webhook")
        self._counters: dict[tuple[str, str], Any] = {}
        self._fixed: dict[tuple[int, str], IngressResult] = {}

    async def handle(self, headers: Mapping[str, str], body: bytes) -> IngressResult:
        """Process one delivery. ``headers`` is read by lower-case name (a dict with lower-case keys, as the
        raw endpoint builds, or Starlette's case-insensitive ``Headers``)."""
        delivery_id = headers.get("x-github-delivery") or "unknown"
        event_name = headers.get("x-github-event") or "unknown"
        received_at = self._clock()

        if not verify_signature(self._secret, body, headers.get("x-hub-signature-256")):
            self._log.warning(
                "Webhook signature verification failed", deliveryId=delivery_id, eventName=event_name
            )
            return self._result(401, None, "bad_signature", "unverified")

        routing = routing_view(body)
        if routing is not None:
            event = build_lazy_event(delivery_id, event_name, body, routing)
        else:  # anything the routing view cannot vouch for gets the full parse (and its 400s)
            try:
                payload = parse_json(body)
            except (ValueError, UnicodeDecodeError, RecursionError):
                self._log.warning(
                    "Webhook body is not valid JSON", deliveryId=delivery_id, eventName=event_name
                )
                return self._result(400, {"error": "Invalid JSON payload"}, "invalid_json", event_name)
            if not isinstance(payload, dict):
                self._log.warning(
                    "Webhook payload is not a JSON object", deliveryId=delivery_id, eventName=event_name
                )
                return self._result(
                    400, {"error": "Payload must be a JSON object"}, "invalid_json", event_name
                )
            event = build_event(delivery_id, event_name, payload)

        has_work = not self.router.filtered(event) and bool(self.router.handlers_for(event))
        intake = Intake(delivery_id, event_name, event.action, event.installation_id, body)
        if not await self.journal.accept_async(intake, now=received_at, journal=has_work):
            self._log.info("Duplicate delivery skipped", deliveryId=delivery_id, eventName=event_name)
            return self._result(200, RECEIVED, "duplicate", event_name)

        self._log.info(
            "Webhook accepted and queued for dispatch",
            deliveryId=delivery_id,
            eventName=event_name,
            action=event.action,
            installationId=event.installation_id,
            repository=repository_name(event.routing),
            sender=sender_login(event.routing),
            receivedAt=received_at.isoformat(),
            userAgent=headers.get("user-agent") or "unknown",
        )
        self.dispatcher.submit(event, journaled=has_work, attempt_recorded=True)
        return self._result(200, RECEIVED, "accepted" if has_work else "ignored", event_name)

    def _result(
        self, status: int, body: dict[str, Any] | None, outcome: str, event_name: str
    ) -> IngressResult:
        label = event_name if _EVENT_LABEL.fullmatch(event_name) else "other"
        counter = self._counters.get((label, outcome))
        if counter is None:  # prometheus' labels() takes a lock and builds a key on every call
            counter = self._counters[(label, outcome)] = self.metrics.webhook_deliveries.labels(
                label, outcome
            )
        counter.inc()
        if body is not RECEIVED and body is not None:
            return IngressResult.model_construct(status=status, body=body, outcome=outcome)
        result = self._fixed.get((status, outcome))  # the frozen acknowledgements, built once each
        if result is None:
            result = self._fixed[(status, outcome)] = IngressResult.model_construct(
                status=status, body=body, outcome=outcome
            )
        return result
