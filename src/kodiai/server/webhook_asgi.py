"""``POST /webhooks/github`` as a raw ASGI endpoint, ahead of the FastAPI stack (the hot path).

FastAPI/Starlette's middleware chain, request object and response classes cost several times the
signature check per delivery (measured with ``benchmarks/webhook.py`` and py-spy). This endpoint speaks
ASGI directly and answers exactly what the framework route answered:

- ``413`` ``{"error":"Payload Too Large"}`` with ``Connection: close`` when the declared
  ``Content-Length`` passes the limit (nothing is read) or the streamed body passes it;
- ``503`` in setup mode;
- otherwise the :class:`~kodiai.webhook.ingress.IngressResult` of the ingress: an empty ``text/plain``
  body (``401``) or a compact JSON body (``200``/``400``);
- an uncaught error becomes the logged ``500`` ``{"error":"Internal Server Error"}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.types import Message, Receive, Scope, Send

from kodiai.log import CachedLogger
from kodiai.webhook.ingress import RECEIVED, IngressResult

if TYPE_CHECKING:
    from kodiai.server.runtime import Runtime

PATH = "/webhooks/github"
JSON_TYPE = b"application/json"
TEXT_TYPE = b"text/plain; charset=utf-8"
TOO_LARGE_BODY = b'{"error":"Payload Too Large"}'
SETUP_MODE_BODY = b'{"error":"Kodiai is in setup mode: GitHub App settings are missing"}'
INTERNAL_ERROR_BODY = b'{"error":"Internal Server Error"}'
WANTED_HEADERS = frozenset({"x-github-delivery", "x-github-event", "x-hub-signature-256", "user-agent"})


class ClientGoneError(Exception):
    """The client disconnected before the whole body arrived (nothing to answer)."""


class BodyTooLargeError(Exception):
    """The request body passed the configured limit while it was being read."""


def is_webhook_post(scope: Scope) -> bool:
    """True for the route this endpoint serves (anything else goes to the FastAPI app)."""
    return scope["type"] == "http" and scope["path"] == PATH and scope["method"] == "POST"


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


async def read_body(receive: Receive, limit: int, declared: int | None) -> bytes:
    """The whole body; raises :class:`BodyTooLargeError` before reading (declared length) or as soon
    as the stream passes ``limit``, :class:`ClientGoneError` when the client disconnects."""
    if declared is not None and declared > limit:
        raise BodyTooLargeError
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
            if not first and chunks is None:
                first = chunk
            else:
                if chunks is None:
                    chunks = [first]
                chunks.append(chunk)
        if not message.get("more_body", False):
            return first if chunks is None else b"".join(chunks)


def render_json(body: dict[str, Any]) -> bytes:
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

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._limit = runtime.config.max_body_bytes
        self._log = CachedLogger("kodiai.server")

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

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        ingress = self._runtime.ingress
        if ingress is None:
            await send_response(send, 503, SETUP_MODE_BODY, JSON_TYPE)
            return
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        try:
            body = await read_body(receive, self._limit, declared_length(raw_headers))
        except BodyTooLargeError:
            self._runtime.metrics.webhook_deliveries.labels("unverified", "too_large").inc()
            self._log.warning("Webhook body too large", limitBytes=self._limit)
            await send_response(send, 413, TOO_LARGE_BODY, JSON_TYPE, close=True)
            return
        result = await ingress.handle(webhook_headers(raw_headers), body)
        await send_result(send, result)
