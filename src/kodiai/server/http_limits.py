"""HTTP-level limits against hostile clients (issue 15): how ``kodiai serve`` configures uvicorn.

What uvicorn offers is configured, not rebuilt: the h11 parser with a bounded header block
(``h11_max_incomplete_event_size``; httptools has no header limit, and a 128 MiB header took it ~60 s of
event-loop time), ``limit_concurrency`` and ``timeout_keep_alive``. h11 also never turns chunked trailers
into request headers. One thing uvicorn lacks (its issue #157): a deadline for *receiving* a request. Its
keep-alive timer restarts on every byte, and no timer runs before the first byte, so a client trickling
headers holds a connection forever. :class:`RequestDeadlineProtocol` adds that deadline to the h11
protocol and nothing else.

The per-route limits (header count, webhook body budget and read deadline, early rejection of unsigned
requests) live in the app (:mod:`kodiai.server.app`, :mod:`kodiai.server.webhook_asgi`); the values all
come from :class:`HttpOptions`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from pydantic import SecretStr
from uvicorn.protocols.http.h11_impl import H11Protocol

from kodiai.settings import Settings

REQUEST_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 15\r\nconnection: close\r\n\r\nRequest Timeout"
)


@dataclass(frozen=True)
class HttpOptions:
    """The HTTP limits and the ``/metrics`` token (defaults: production values; see docs/deployment.md)."""

    max_header_bytes: int = 16 * 1024
    max_headers: int = 100
    request_timeout: float = 20.0
    keep_alive: int = 5
    max_connections: int = 1000
    body_timeout: float = 10.0
    max_inflight_bodies: int = 64
    inflight_body_bytes: int = 128 * 1024 * 1024
    metrics_token: SecretStr | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpOptions:
        """The options of a :class:`kodiai.settings.Settings`."""
        return cls(
            max_header_bytes=settings.http_max_header_bytes,
            max_headers=settings.http_max_headers,
            request_timeout=settings.http_request_timeout_seconds,
            keep_alive=settings.http_keep_alive_seconds,
            max_connections=settings.http_max_connections,
            body_timeout=settings.webhook_body_timeout_seconds,
            max_inflight_bodies=settings.webhook_max_inflight_bodies,
            inflight_body_bytes=settings.webhook_inflight_body_bytes,
            metrics_token=settings.metrics_token,
        )

    def metrics_authorized(self, authorization: str | None) -> bool:
        """True when no token is configured, or the ``Authorization`` header is ``Bearer <token>``."""
        if self.metrics_token is None:
            return True
        expected = b"Bearer " + self.metrics_token.get_secret_value().encode()
        given = (authorization or "").encode("latin-1", "replace")
        return hmac.compare_digest(hashlib.sha256(given).digest(), hashlib.sha256(expected).digest())


class RequestDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol plus a deadline for receiving each request (headers and body).

    The clock starts when the connection opens (for its first request) or at the first byte of a later
    request, and is not restarted by further bytes; it stops once the request has been received in full
    (the app may then take as long as it needs to answer). On expiry the connection is closed, with a
    ``408`` when no response is under way. Idle keep-alive connections stay uvicorn's business.
    """

    request_timeout: ClassVar[float] = 20.0
    timeout_hooks: ClassVar[tuple[Callable[[], None], ...]] = ()  # e.g. a metric (a tuple: never bound)

    _deadline: asyncio.TimerHandle | None = None
    _first_request = True

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._update_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._update_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _receiving(self) -> bool:
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return True
        if state is not h11.IDLE:  # DONE (the app has it), MUST_CLOSE, CLOSED, ERROR
            self._first_request = False
            return False
        return self._first_request or bool(self.conn.trailing_data[0])  # part of a request is buffered

    def _update_deadline(self) -> None:
        if self.transport is None or self.transport.is_closing() or not self._receiving():
            self._cancel_deadline()
        elif self._deadline is None:
            self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        for hook in self.timeout_hooks:
            hook()
        if self.cycle is None or self.cycle.response_complete:  # still in the headers: no app to answer
            self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        self.transport.close()  # an app reading the body gets http.disconnect


def protocol_class(
    request_timeout: float, on_timeout: Callable[[], None] | None = None
) -> type[RequestDeadlineProtocol]:
    """A :class:`RequestDeadlineProtocol` with this deadline (uvicorn builds one per connection)."""
    hooks = (on_timeout,) if on_timeout is not None else ()
    attrs: dict[str, Any] = {"request_timeout": request_timeout, "timeout_hooks": hooks}
    return type("KodiaiHttpProtocol", (RequestDeadlineProtocol,), attrs)


def uvicorn_options(options: HttpOptions, on_timeout: Callable[[], None] | None = None) -> dict[str, Any]:
    """The ``uvicorn.Config`` keyword arguments that carry the limits."""
    return {
        "http": protocol_class(options.request_timeout, on_timeout),
        "h11_max_incomplete_event_size": options.max_header_bytes,
        "limit_concurrency": options.max_connections,
        "timeout_keep_alive": options.keep_alive,
        "ws": "none",  # no WebSocket route: no protocol switch for a client to ask for
    }
