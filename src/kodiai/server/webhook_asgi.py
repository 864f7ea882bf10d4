"""``POST /webhooks/github`` as a raw ASGI endpoint, ahead of the FastAPI stack (the hot path).

FastAPI/Starlette's middleware chain, request object and response classes cost several times the
signature check per delivery (measured with ``benchmarks/webhook.py`` and py-spy). This endpoint speaks
ASGI directly and answers exactly what the framework route answered:

- ``413`` ``{"error":"Payload Too Large"}`` with ``Connection: close`` when the declared
  ``Content-Length`` passes the limit (nothing is read) or the streamed body passes it;
- ``503`` in setup mode;
- before any body byte is read (issue 15: unauthenticated clients must not hold memory), with
  ``Connection: close``: ``401`` (empty body) when ``X-Hub-Signature-256`` is missing or is not
  ``sha256=`` + 64 lower-case hex digits; ``400`` when the request announces trailers (the signature is
  taken only from the real headers, which are copied before the body is read); ``503`` when the
  in-flight body budget (bodies and bytes) is spent;
- ``408`` with ``Connection: close`` when the body does not arrive within the body deadline;
- otherwise the :class:`~kodiai.server.ingress.IngressResult` of the ingress: an empty ``text/plain``
  body (``401``) or a compact JSON body (``200``/``400``);
- an uncaught error becomes the logged ``500`` ``{"error":"Internal Server Error"}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Message, Receive, Scope, Send

from kodiai.log import CachedLogger
from kodiai.server.ingress import RECEIVED, IngressResult, ResponseBody
from kodiai.webhook.signature import well_formed

if TYPE_CHECKING:
    from kodiai.server.runtime import Runtime

PATH = "/webhooks/github"
JSON_TYPE = b"application/json"
TEXT_TYPE = b"text/plain; charset=utf-8"
TOO_LARGE_BODY = b'{"error":"Payload Too Large"}'
SETUP_MODE_BODY = b'{"error":"Kodiai is in setup mode: GitHub App settings are missing"}'
BUSY_BODY = b'{"error":"Too many webhook bodies in flight; retry later"}'
TIMEOUT_BODY = b'{"error":"Request body not received in time"}'
TRAILERS_BODY = b'{"error":"Trailers are not accepted on this route"}'
INTERNAL_ERROR_BODY = b'{"error":"Internal Server Error"}'
WANTED_HEADERS = frozenset({"x-github-delivery", "x-github-event", "x-hub-signature-256", "user-agent"})


class ClientGoneError(Exception):
    """The client disconnected before the whole body arrived (nothing to answer)."""


class BodyTooLargeError(Exception):
    """The request body passed the configured limit while it was being read."""


class BodyBudgetError(Exception):
    """Reading this body would pass the in-flight body budget."""


class BodyBudget:
    """How many webhook bodies, and how many of their bytes, may be held at once before verification.

    GitHub signs only the body, so it must be read before the HMAC check; this bounds what unverified
    bodies can hold in total (the semaphore refuses instead of queueing: a queued request would still
    hold its connection). A declared ``Content-Length`` is reserved up front, a chunked body as it comes.
    """

    def __init__(self, max_bodies: int, max_bytes: int) -> None:
        self.max_bodies = max_bodies
        self.max_bytes = max_bytes
        self.bodies = 0
        self.bytes = 0

    def open(self) -> BodyLease:
        """A lease for one body; raises :class:`BodyBudgetError` when every slot is taken."""
        if self.bodies >= self.max_bodies:
            raise BodyBudgetError
        self.bodies += 1
        return BodyLease(self)


class BodyLease:
    """One body's share of a :class:`BodyBudget` (single event loop: no locking needed)."""

    __slots__ = ("_budget", "held")

    def __init__(self, budget: BodyBudget) -> None:
        self._budget = budget
        self.held = 0

    def reserve(self, size: int) -> None:
        """Hold ``size`` more bytes; raises :class:`BodyBudgetError` when the budget cannot cover them."""
        extra = size - self.held
        if extra <= 0:
            return
        if self._budget.bytes + extra > self._budget.max_bytes:
            raise BodyBudgetError
        self._budget.bytes += extra
        self.held = size

    def release(self) -> None:
        self._budget.bytes -= self.held
        self._budget.bodies -= 1
        self.held = 0


def is_webhook_post(scope: Scope) -> bool:
    """True for the route this endpoint serves (anything else goes to the FastAPI app)."""
    return bool(scope["type"] == "http" and scope["path"] == PATH and scope["method"] == "POST")


def webhook_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers the ingress reads, by lower-case name; the first occurrence wins (as Starlette's
    ``Headers.get``), decoded as latin-1 (as Starlette)."""
    out: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        if key in WANTED_HEADERS and key not in out:
            out[key] = value.decode("latin-1")
    return out


def declared_length(raw: list[tuple[bytes, bytes]]) -> int | None:
    """The ``Content-Length`` header as an int, when it is all digits."""
    for name, value in raw:
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def announces_trailers(raw: list[tuple[bytes, bytes]]) -> bool:
    """True when the request has a ``Trailer`` header (fields promised after a chunked body)."""
    return any(name.lower() == b"trailer" for name, _ in raw)


async def read_body(
    receive: Receive, limit: int, declared: int | None, lease: BodyLease | None = None
) -> bytes:
    """The whole body; raises :class:`BodyTooLargeError` before reading (declared length) or as soon
    as the stream passes ``limit``, :class:`BodyBudgetError` when ``lease`` cannot cover it,
    :class:`ClientGoneError` when the client disconnects."""
    if declared is not None and declared > limit:
        raise BodyTooLargeError
    if lease is not None and declared is not None:
        lease.reserve(declared)
    first = b""
    chunks: list[bytes] | None = None
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGoneError
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise BodyTooLargeError
            if lease is not None:
                lease.reserve(size)
            if not first and chunks is None:
                first = chunk
            else:
                if chunks is None:
                    chunks = [first]
                chunks.append(chunk)
        if not message.get("more_body", False):
            return first if chunks is None else b"".join(chunks)


def render_json(body: ResponseBody) -> bytes:
    """Starlette's ``JSONResponse`` rendering (compact, UTF-8, no NaN)."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


RECEIVED_BODY = render_json(RECEIVED)


async def send_response(
    send: Send, status: int, body: bytes, content_type: bytes, *, close: bool = False
) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", content_type)]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_result(send: Send, result: IngressResult) -> None:
    """Answer an ingress result: an empty ``text/plain`` body, or the JSON body."""
    if result.body is None:
        await send_response(send, result.status, b"", TEXT_TYPE)
    elif result.body is RECEIVED:  # the acknowledgement: rendered once
        await send_response(send, result.status, RECEIVED_BODY, JSON_TYPE)
    else:
        await send_response(send, result.status, render_json(result.body), JSON_TYPE)


class LogThrottle:
    """At most one line per ``interval`` seconds for each message, so a flood of refusals cannot flood the
    log (the metrics count every one); the next line says how many were held back (``suppressed``)."""

    def __init__(self, interval: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._next: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def admit(self, message: str) -> int | None:
        """``None`` to hold this line back, else how many were held back since the last one."""
        now = self._clock()
        if now < self._next.get(message, 0.0):
            self._held[message] = self._held.get(message, 0) + 1
            return None
        self._next[message] = now + self._interval
        return self._held.pop(message, 0)


class TrackedSend:
    """Wraps ``send`` to remember whether the response has started (for the 500 fallback)."""

    __slots__ = ("_send", "started")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class WebhookEndpoint:
    """The ASGI callable for ``POST /webhooks/github`` over a runtime's ingress."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        body_timeout: float = 10.0,
        max_inflight_bodies: int = 64,
        inflight_body_bytes: int = 128 * 1024 * 1024,
    ) -> None:
        self._runtime = runtime
        self._limit = runtime.config.max_body_bytes
        self._body_timeout = body_timeout
        self.budget = BodyBudget(max_inflight_bodies, max(inflight_body_bytes, self._limit))
        self._log = CachedLogger("kodiai.server")
        self._throttle = LogThrottle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracked = TrackedSend(send)
        try:
            await self._handle(scope, receive, tracked)
        except ClientGoneError:
            return
        except Exception as exc:
            self._log.error(
                "Unhandled error",
                err=f"{type(exc).__name__}: {exc}",
                path=scope.get("path"),
                method=scope.get("method"),
            )
            if not tracked.started:
                await send_response(send, 500, INTERNAL_ERROR_BODY, JSON_TYPE)

    def _refused(self, outcome: str, message: str | None = None, **fields: Any) -> None:
        """Count a refusal before the body was verified, and log it (throttled)."""
        self._runtime.metrics.webhook_deliveries.labels("unverified", outcome).inc()
        if message is None:
            return
        held = self._throttle.admit(message)
        if held is None:
            return
        if held:
            fields["suppressed"] = held
        self._log.warning(message, **fields)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        ingress = self._runtime.ingress
        if ingress is None:
            await send_response(send, 503, SETUP_MODE_BODY, JSON_TYPE)
            return
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        # Copied before the body is read: a server that appends chunked trailers to the scope's header
        # list (httptools) must not let a trailer supply the signature.
        headers = webhook_headers(raw_headers)
        declared = declared_length(raw_headers)
        if declared is not None and declared > self._limit:
            self._too_large()
            await send_response(send, 413, TOO_LARGE_BODY, JSON_TYPE, close=True)
            return
        if not well_formed(headers.get("x-hub-signature-256")):
            self._refused(
                "bad_signature",
                "Webhook signature verification failed",
                deliveryId=headers.get("x-github-delivery") or "unknown",
                eventName=headers.get("x-github-event") or "unknown",
            )
            await send_response(send, 401, b"", TEXT_TYPE, close=True)
            return
        if announces_trailers(raw_headers):
            self._refused("trailers", "Webhook refused: chunked trailers announced")
            await send_response(send, 400, TRAILERS_BODY, JSON_TYPE, close=True)
            return
        try:
            lease = self.budget.open()
        except BodyBudgetError:
            self._busy()
            await send_response(send, 503, BUSY_BODY, JSON_TYPE, close=True)
            return
        try:
            async with asyncio.timeout(self._body_timeout):
                body = await read_body(receive, self._limit, declared, lease)
        except BodyTooLargeError:
            self._too_large()
            await send_response(send, 413, TOO_LARGE_BODY, JSON_TYPE, close=True)
            return
        except BodyBudgetError:
            self._busy()
            await send_response(send, 503, BUSY_BODY, JSON_TYPE, close=True)
            return
        except TimeoutError:
            self._refused(
                "body_timeout", "Webhook body not received in time", timeoutSeconds=self._body_timeout
            )
            await send_response(send, 408, TIMEOUT_BODY, JSON_TYPE, close=True)
            return
        finally:
            lease.release()
        # Released once read: the ingress checks the signature before it first yields, so a body that
        # fails is dropped before any other request runs; the budget covers every unverified body, and
        # a verified one (GitHub's) never waits on it while it is journaled.
        result = await ingress.handle(headers, body)
        await send_result(send, result)

    def _too_large(self) -> None:
        self._refused("too_large", "Webhook body too large", limitBytes=self._limit)

    def _busy(self) -> None:
        self._refused(
            "busy",
            "Webhook refused: in-flight body budget spent",
            bodies=self.budget.bodies,
            bytes=self.budget.bytes,
            maxBodies=self.budget.max_bodies,
            maxBytes=self.budget.max_bytes,
        )
