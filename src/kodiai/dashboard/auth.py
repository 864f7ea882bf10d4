"""Who is asking: the operator token (``Authorization: Bearer`` or a signed-in operator session) or a GitHub
user's session, whose write access is looked up with their own token and cached briefly (in the session's
database row, so every replica shares the cache)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from starlette.requests import Request

from kodiai.dashboard.github_oauth import GitHubUser, SignInError, writable_access
from kodiai.dashboard.scope import Access
from kodiai.dashboard.session import COOKIE, Session
from kodiai.dashboard.session import tokens_equal as _equal
from kodiai.dashboard.state import DashboardState

OPERATOR_LOGIN = "operator"


@dataclass(frozen=True)
class Viewer:
    access: Access
    session: Session | None
    """None for a bearer-token request (no cookie: no CSRF exposure, no token needed on a POST)."""


async def viewer_of(state: DashboardState, request: Request) -> Viewer | None:
    """The viewer, or None (not signed in, forged or expired cookie, or the access lookup failed)."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and state.options.token is not None:
        if _equal(header[7:].strip(), state.options.token.get_secret_value()):
            return Viewer(Access(OPERATOR_LOGIN, operator=True), None)
        return None
    payload = state.signer.read_session(request.cookies.get(COOKIE))
    if payload is None:
        return None
    session = await asyncio.to_thread(state.sessions.get, payload["sid"])
    if session is None or session.login != payload.get("login") or session.operator != bool(payload.get("op")):
        return None
    if session.operator:
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
