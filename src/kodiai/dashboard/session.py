"""Dashboard sessions: a signed, expiring cookie naming a server-side session, and its CSRF token.

The cookie holds only ``{sid, login, operator}`` signed with :mod:`itsdangerous` (timestamped: older than
the session lifetime → refused); the GitHub user token never leaves the server (:class:`SessionStore`
keeps it in memory, so a restart signs everyone out — the safe failure). The CSRF token is an HMAC of the
session id: a form posted from another site cannot know it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from kodiai.dashboard.scope import Access

COOKIE = "kodiai_dashboard"
STATE_COOKIE = "kodiai_dashboard_oauth"
STATE_SECONDS = 600


@dataclass
class Session:
    sid: str
    login: str
    operator: bool
    user_token: str | None = field(default=None, repr=False)
    access: Access | None = None
    access_at: float = 0.0


class SessionStore:
    """Server-side sessions by id (thread-safe; expired ones are dropped as they are met)."""

    def __init__(self, lifetime: int) -> None:
        self._lifetime = lifetime
        self._sessions: dict[str, tuple[float, Session]] = {}
        self._lock = threading.Lock()

    def create(self, login: str, *, operator: bool, user_token: str | None = None) -> Session:
        session = Session(secrets.token_urlsafe(24), login, operator, user_token)
        with self._lock:
            self._sessions[session.sid] = (time.monotonic(), session)
        return session

    def get(self, sid: str) -> Session | None:
        with self._lock:
            entry = self._sessions.get(sid)
            if entry is None:
                return None
            if time.monotonic() - entry[0] > self._lifetime:
                del self._sessions[sid]
                return None
            return entry[1]

    def drop(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)


class CookieSigner:
    def __init__(self, key: bytes, lifetime: int) -> None:
        self._key = key
        self._lifetime = lifetime
        self._session = URLSafeTimedSerializer(key, salt="kodiai-dashboard-session")
        self._state = URLSafeTimedSerializer(key, salt="kodiai-dashboard-oauth-state")

    def session_cookie(self, session: Session) -> str:
        return self._session.dumps({"sid": session.sid, "login": session.login, "op": session.operator})

    def read_session(self, value: str | None) -> dict[str, Any] | None:
        """The cookie's payload, or None when it is missing, forged, tampered with or expired."""
        if not value:
            return None
        try:
            data = self._session.loads(value, max_age=self._lifetime)
        except BadSignature:  # SignatureExpired is a BadSignature
            return None
        return data if isinstance(data, dict) and isinstance(data.get("sid"), str) else None

    def state_cookie(self, state: str) -> str:
        return self._state.dumps(state)

    def read_state(self, value: str | None) -> str | None:
        if not value:
            return None
        try:
            data = self._state.loads(value, max_age=STATE_SECONDS)
        except BadSignature:
            return None
        return data if isinstance(data, str) else None

    def csrf_token(self, sid: str) -> str:
        return hmac.new(self._key, b"csrf\0" + sid.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, sid: str, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf_token(sid), str(token))


def tokens_equal(given: str, expected: str) -> bool:
    """Constant-time comparison of the operator token."""
    return hmac.compare_digest(given.encode(), expected.encode())
