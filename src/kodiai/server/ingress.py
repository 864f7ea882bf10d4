"""``POST /webhooks/github`` without the HTTP framework (behaviour P3.1, plus the port's fixes).

Order: signature over the exact bytes → JSON check and routing fields (invalid → 400, *not* marked seen:
PARITY fix; the full payload is parsed when a handler reads it, see :mod:`kodiai.webhook.routing`) →
dedup (by delivery id, and by the body's sha256 inside the dedup window) + journal in one SQLite
transaction (before the 200) → background dispatch → 200 at once. With ``DATABASE_URL`` the transaction is
PostgreSQL's and also queues the delivery's job (:mod:`kodiai.jobs.pg_journal`); a worker runs it.

A journal that cannot record the delivery answers 500: it was not acknowledged (GitHub shows it failed and
it can be redelivered). Once the delivery is committed nothing may turn it into an error answer: a failure
to log or dispatch after the commit is logged and the answer is still 200 (a 500 there would make GitHub's
redelivery a "duplicate" of work that never started).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Protocol

from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict

from kodiai.jobs.dispatcher import DeliveryDispatcher
from kodiai.jobs.journal import Intake
from kodiai.jobs.journal_rows import Acceptance
from kodiai.log import CachedLogger, get_logger
from kodiai.metrics import Metrics
from kodiai.webhook.body import parse_json
from kodiai.webhook.events import (
    WebhookEvent,
    build_event,
    build_lazy_event,
    repository_name,
    sender_login,
)
from kodiai.webhook.router import EventRouter
from kodiai.webhook.routing import routing_view
from kodiai.webhook.signature import matching_secret

#: A JSON answer of the webhook endpoint: ``{"received": true}`` or ``{"error": "<why>"}``.
ResponseBody = dict[str, str | bool]

RECEIVED: ResponseBody = {"received": True}
INTERNAL_ERROR: ResponseBody = {"error": "Internal Server Error"}
MAX_DELIVERY_ID = 1024
"""Characters of ``X-GitHub-Delivery`` (GitHub's are 36-character UUIDs): the header is not signed, and a
longer id would not fit PostgreSQL's unique index (a 500 on every redelivery) nor belong in a log line."""
_EVENT_LABEL = re.compile(r"[a-z_]{1,64}")


class IngressResult(BaseModel):
    """What to answer: status and a JSON body (``None`` → empty ``text/plain``)."""

    model_config = ConfigDict(frozen=True)

    status: int
    body: ResponseBody | None = None
    outcome: str


class DeliveryIntake(Protocol):
    """Dedup + journal (the SQLite journal, or the PostgreSQL one that also defers the job)."""

    async def intake_async(self, intake: Intake, *, now: datetime, journal: bool = True) -> Acceptance: ...


class WebhookIngress:
    """Verifies, dedups, journals and hands a delivery to the dispatcher (none on PostgreSQL: intake
    deferred the job, which a worker runs)."""

    def __init__(
        self,
        *,
        secret: str,
        previous_secret: str | None = None,
        router: EventRouter,
        journal: DeliveryIntake,
        dispatcher: DeliveryDispatcher | None,
        metrics: Metrics,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        # GITHUB_WEBHOOK_SECRET, then GITHUB_WEBHOOK_SECRET_PREVIOUS during a rotation window
        self._secrets = (secret.encode(), previous_secret.encode()) if previous_secret else (secret.encode(),)
        self._signature_matches = (
            metrics.webhook_signature_matches.labels("current"),
            metrics.webhook_signature_matches.labels("previous"),
        )
        self.router = router
        self.journal = journal
        self.dispatcher = dispatcher
        self.metrics = metrics
        self._clock = clock
        self._log = CachedLogger("kodiai.webhook")
        self._counters: dict[tuple[str, str], Counter] = {}
        self._statuses: dict[int, Counter] = {}
        self._fixed: dict[tuple[int, str], IngressResult] = {}

    async def handle(self, headers: Mapping[str, str], body: bytes) -> IngressResult:
        """Process one delivery. ``headers`` is read by lower-case name (a dict with lower-case keys, as the
        raw endpoint builds, or Starlette's case-insensitive ``Headers``)."""
        try:
            return await self._handle(headers, body)
        except Exception:  # the endpoint answers 500 (logged there): count it with the others
            self._count_status(500)
            raise

    async def _handle(self, headers: Mapping[str, str], body: bytes) -> IngressResult:
        delivery_id = headers.get("x-github-delivery") or "unknown"
        event_name = headers.get("x-github-event") or "unknown"
        received_at = self._clock()

        matched = matching_secret(self._secrets, body, headers.get("x-hub-signature-256"))
        if matched is None:
            self._log.warning(
                "Webhook signature verification failed", deliveryId=delivery_id, eventName=event_name
            )
            return self._result(401, None, "bad_signature", "unverified")
        self._signature_matches[matched].inc()
        if len(delivery_id) > MAX_DELIVERY_ID:  # unsigned; PostgreSQL's unique index holds ~2.7 KB a row
            self._log.warning(
                "Webhook delivery id too long", deliveryId=delivery_id[:64] + "…", eventName=event_name[:64]
            )
            return self._result(
                400, {"error": "X-GitHub-Delivery header too long"}, "invalid_delivery_id", event_name
            )
        if matched:
            self._log.info(
                "Webhook signed with GITHUB_WEBHOOK_SECRET_PREVIOUS",
                deliveryId=delivery_id,
                eventName=event_name,
            )

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
        digest = hashlib.sha256(body).hexdigest()
        intake = Intake(delivery_id, event_name, event.action, event.installation_id, body, digest)
        try:
            verdict = await self.journal.intake_async(intake, now=received_at, journal=has_work)
        except Exception as exc:  # not recorded, so not acknowledged
            self._log.error(
                "Job journal write failed; delivery not acknowledged",
                deliveryId=delivery_id,
                eventName=event_name,
                err=f"{type(exc).__name__}: {exc}",
            )
            return self._result(500, INTERNAL_ERROR, "journal_error", event_name)
        if not verdict:
            if verdict.by == "body":
                self._log.warning(
                    "Replayed webhook body skipped: same body as an earlier delivery",
                    deliveryId=delivery_id,
                    eventName=event_name,
                    duplicateOf=verdict.of,
                )
            else:
                self._log.info("Duplicate delivery skipped", deliveryId=delivery_id, eventName=event_name)
            return self._result(200, RECEIVED, "duplicate", event_name)
        return self._committed(event, headers, received_at, has_work)

    def _committed(
        self, event: WebhookEvent, headers: Mapping[str, str], received_at: datetime, has_work: bool
    ) -> IngressResult:
        """After the COMMIT: log, dispatch, acknowledge. Any failure here is logged, never answered."""
        outcome = "accepted" if has_work else "ignored"
        try:
            self._log.info(
                "Webhook accepted and queued for dispatch",
                deliveryId=event.id,
                eventName=event.name,
                action=loggable(event.action),
                installationId=event.installation_id,
                repository=loggable(repository_name(event.routing)),
                sender=loggable(sender_login(event.routing)),
                receivedAt=received_at.isoformat(),
                userAgent=headers.get("user-agent") or "unknown",
            )
        except Exception as exc:
            _after_commit_failed("log", event.id, exc)
        try:
            if self.dispatcher is not None:
                self.dispatcher.submit(event, journaled=has_work)
        except Exception as exc:  # journaled work still runs at the next start (it stays pending)
            _after_commit_failed("dispatch", event.id, exc)
        try:
            return self._result(200, RECEIVED, outcome, event.name)
        except Exception as exc:
            _after_commit_failed("count", event.id, exc)
            return IngressResult.model_construct(status=200, body=RECEIVED, outcome=outcome)

    def _result(
        self, status: int, body: ResponseBody | None, outcome: str, event_name: str
    ) -> IngressResult:
        label = event_name if _EVENT_LABEL.fullmatch(event_name) else "other"
        counter = self._counters.get((label, outcome))
        if counter is None:  # prometheus' labels() takes a lock and builds a key on every call
            counter = self._counters[(label, outcome)] = self.metrics.webhook_deliveries.labels(
                label, outcome
            )
        counter.inc()
        self._count_status(status)
        if body is not RECEIVED and body is not None:
            return IngressResult.model_construct(status=status, body=body, outcome=outcome)
        result = self._fixed.get((status, outcome))  # the frozen acknowledgements, built once each
        if result is None:
            result = self._fixed[(status, outcome)] = IngressResult.model_construct(
                status=status, body=body, outcome=outcome
            )
        return result

    def _count_status(self, status: int) -> None:
        counter = self._statuses.get(status)
        if counter is None:
            counter = self._statuses[status] = self.metrics.webhook_responses.labels(str(status))
        counter.inc()


def loggable(text: str | None) -> str | None:
    """Request-derived text safe to render: lone surrogates (valid in JSON escapes, not in UTF-8) become
    ``\\udXXX`` escapes."""
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _after_commit_failed(step: str, delivery_id: str, exc: Exception) -> None:
    """Report a failure after the commit on a fresh logger, with nothing request-derived but the id."""
    with contextlib.suppress(Exception):  # logging itself may be what failed: nothing more to do then
        get_logger("kodiai.webhook").error(
            "Webhook post-commit step failed; the delivery stays acknowledged",
            step=step,
            deliveryId=loggable(delivery_id),
            err=loggable(f"{type(exc).__name__}: {exc}"),
        )
