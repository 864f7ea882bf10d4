"""Who is asking: the operator token (``Authorization: Bearer`` or a signed-in operator session) or a GitHub
user's session, whose write access is looked up with their own token and cached briefly (in the session's
database row, so every replica shares the cache)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from starlette.requests import Request

from kodiai.dashboard.github_oauth import GitHubUser, SignInError, writable_access
from kodiai.dashboard.scope import Access
from kodiai.dashboard.session import COOKIE, Session
from kodiai.dashboard.session import tokens_equal as _equal
from kodiai.dashboard.state import DashboardState

OPERATOR_LOGIN = "operator"
GUESSES = 10
"""Wrong operator tokens one client address may send per :data:`GUESS_WINDOW` before it is refused (429)."""
GUESS_WINDOW = 60.0
CLIENTS = 10_000
"""Addresses remembered at most (the oldest forgotten first): many addresses cannot exhaust memory."""


class TooManyGuesses(Exception):
    """The client sent too many wrong operator tokens; answered 429 with ``Retry-After``."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"retry after {retry_after} s")
        self.retry_after = retry_after


@dataclass
class GuessThrottle:
    """Wrong operator tokens per client address in a sliding window. Once an address reaches the limit it is
    refused — even with the right token, so that a guess's answer tells nothing — until its oldest failure
    leaves the window. Per process: each replica counts its own."""

    limit: int = GUESSES
    window: float = GUESS_WINDOW
    failures: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)

    def check(self, client: str, now: float | None = None) -> None:
        """Raise :class:`TooManyGuesses` while ``client`` is refused."""
        now = time.monotonic() if now is None else now
        recent = self.failures.get(client)
        if recent is None:
            return
        while recent and recent[0] <= now - self.window:
            recent.popleft()
        if not recent:
            del self.failures[client]
        elif len(recent) >= self.limit:
            raise TooManyGuesses(max(1, int(recent[0] + self.window - now) + 1))

    def failed(self, client: str, now: float | None = None) -> bool:
        """Record a wrong token; True when this failure starts the client's refusal."""
        now = time.monotonic() if now is None else now
        recent = self.failures.setdefault(client, deque(maxlen=self.limit))
        self.failures.move_to_end(client)
        recent.append(now)
        while len(self.failures) > CLIENTS:
            self.failures.popitem(last=False)
        return len(recent) >= self.limit

    def succeeded(self, client: str) -> None:
        self.failures.pop(client, None)


def client_of(request: Request) -> str:
    """The client's address (behind a proxy, as uvicorn's proxy-header handling reports it)."""
    return request.client.host if request.client else "unknown"


def guess_failed(state: DashboardState, throttle: GuessThrottle, request: Request) -> None:
    if throttle.failed(client_of(request)):
        state.log.warning(
            "Dashboard operator token refused too often; refusing this client for a minute",
            client=client_of(request),
        )


@dataclass(frozen=True)
class Viewer:
    access: Access
    session: Session | None
    """None for a bearer-token request (no cookie: no CSRF exposure, no token needed on a POST)."""


async def viewer_of(state: DashboardState, request: Request, throttle: GuessThrottle) -> Viewer | None:
    """The viewer, or None (not signed in, forged or expired cookie, or the access lookup failed); raises
    :class:`TooManyGuesses` for a bearer token from a client that sent too many wrong ones."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and state.options.token is not None:
        throttle.check(client_of(request))
        if _equal(header[7:].strip(), state.options.token.get_secret_value()):
            throttle.succeeded(client_of(request))
            return Viewer(Access(OPERATOR_LOGIN, operator=True), None)
        guess_failed(state, throttle, request)
        return None
    payload = state.signer.read_session(request.cookies.get(COOKIE))
    if payload is None:
        return None
    session = await asyncio.to_thread(state.sessions.get, payload["sid"])
    if (
        session is None
        or session.login != payload.get("login")
        or session.operator != bool(payload.get("op"))
    ):
        return None
    if session.operator:
        if not state.signer.operator_ok(payload):  # signed in under an earlier DASHBOARD_TOKEN
            return None
        return Viewer(Access(session.login, operator=True), session)
    fresh = 0 <= time.time() - session.access_at < state.options.access_cache_seconds
    if session.access is None or not fresh:
        if session.user_token is None:
            return None
        try:
            session.access = await writable_access(
                state.http, state.options, GitHubUser(session.login, session.user_token)
            )
        except SignInError as exc:
            state.log.warning("Dashboard access lookup failed; signed out", login=session.login, err=str(exc))
            await asyncio.to_thread(state.sessions.drop, session.sid)
            return None
        session.access_at = time.time()
        await asyncio.to_thread(state.sessions.save_access, session)
    return Viewer(session.access, session)
