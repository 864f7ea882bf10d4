"""Dashboard sessions: a signed, expiring cookie naming a session recorded in the shared knowledge database.

The cookie holds only non-secret claims ``{sid, login, op}`` signed with :mod:`itsdangerous` (timestamped:
older than the session lifetime → refused). What must stay on the server — the GitHub user token (encrypted
with a key derived from the signing key) and the cached write-access list — is a ``dashboard_sessions`` row,
so a restart or another ``web`` replica (same database, same ``DASHBOARD_SESSION_SECRET``) accepts the
cookie, and signing out on one replica signs out on all. The CSRF token is an HMAC of the session id: a form
posted from another site cannot know it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from itsdangerous import BadSignature, URLSafeTimedSerializer

from kodiai.dashboard.scope import Access
from kodiai.storage.database import Database

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
    """When ``access`` was looked up (Unix seconds: compared across hosts)."""


def access_to_json(access: Access) -> str:
    return json.dumps(
        {
            "repos": sorted(access.repos),
            "installations": sorted(access.installations),
            "installation_repos": [[i, list(r)] for i, r in access.installation_repos],
        }
    )


def access_from_json(login: str, text: str) -> Access:
    data = json.loads(text)
    return Access(
        login,
        repos=frozenset(str(r) for r in data["repos"]),
        installations=frozenset(int(i) for i in data["installations"]),
        installation_repos=tuple((int(i), tuple(str(x) for x in r)) for i, r in data["installation_repos"]),
    )


def _sid_hash(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


class SessionStore:
    """Sessions in the ``dashboard_sessions`` table (every replica's; expired rows are deleted as new
    sessions are made). Blocking: call from a worker thread."""

    def __init__(self, db: Database, key: bytes, lifetime: int) -> None:
        self._db = db
        self._lifetime = lifetime
        derived = hashlib.sha256(b"kodiai-dashboard-user-token\0" + key).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def create(
        self,
        login: str,
        *,
        operator: bool,
        user_token: str | None = None,
        access: Access | None = None,
    ) -> Session:
        now = time.time()
        session = Session(secrets.token_urlsafe(24), login, operator, user_token, access, now)
        sealed = self._fernet.encrypt(user_token.encode()).decode() if user_token is not None else None
        with self._db.transaction() as tx:
            tx.execute("DELETE FROM dashboard_sessions WHERE expires_at < ?", (now,))
            tx.execute(
                "INSERT INTO dashboard_sessions (sid_hash, login, operator, user_token, access, access_at,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    _sid_hash(session.sid),
                    login,
                    int(operator),
                    sealed,
                    access_to_json(access) if access is not None else None,
                    now,
                    now + self._lifetime,
                ),
            )
        return session

    def get(self, sid: str) -> Session | None:
        """The live session ``sid`` names, or None (unknown, signed out, expired, or its token sealed with
        another key)."""
        row = self._db.fetch_one(
            "SELECT login, operator, user_token, access, access_at FROM dashboard_sessions"
            " WHERE sid_hash = ? AND expires_at >= ?",
            (_sid_hash(sid), time.time()),
        )
        if row is None:
            return None
        login, operator, sealed, access, access_at = row
        token = None
        if sealed is not None:
            try:
                token = self._fernet.decrypt(str(sealed).encode()).decode()
            except InvalidToken:
                return None
        cached = access_from_json(str(login), str(access)) if access else None
        return Session(sid, str(login), bool(operator), token, cached, float(access_at))

    def save_access(self, session: Session) -> None:
        if session.access is None:
            return
        self._db.execute(
            "UPDATE dashboard_sessions SET access = ?, access_at = ? WHERE sid_hash = ?",
            (access_to_json(session.access), session.access_at, _sid_hash(session.sid)),
        )

    def drop(self, sid: str) -> None:
        self._db.execute("DELETE FROM dashboard_sessions WHERE sid_hash = ?", (_sid_hash(sid),))


class CookieSigner:
    def __init__(self, key: bytes, lifetime: int, operator_token: str | None = None) -> None:
        self._key = key
        self._lifetime = lifetime
        self._operator_tag = (
            hmac.new(key, b"operator-token\0" + operator_token.encode(), hashlib.sha256).hexdigest()
            if operator_token
            else None
        )
        """A digest of ``DASHBOARD_TOKEN`` put in operator cookies: changing the token ends every operator
        session, even when ``DASHBOARD_SESSION_SECRET`` (the signing key) stays the same."""
        self._session = URLSafeTimedSerializer(key, salt="kodiai-dashboard-session")
        self._state = URLSafeTimedSerializer(key, salt="kodiai-dashboard-oauth-state")

    def session_cookie(self, session: Session) -> str:
        claims: dict[str, Any] = {"sid": session.sid, "login": session.login, "op": session.operator}
        if session.operator and self._operator_tag is not None:
            claims["tk"] = self._operator_tag
        return self._session.dumps(claims)

    def operator_ok(self, payload: dict[str, Any]) -> bool:
        """Whether an operator cookie was issued under the current operator token (none set: never)."""
        tag = payload.get("tk")
        return (
            self._operator_tag is not None
            and isinstance(tag, str)
            and hmac.compare_digest(tag, self._operator_tag)
        )

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

    def message_sig(self, sid: str, message: str) -> str:
        """The signature of an action's outcome put in the redirect's URL (``sid``: "" for a bearer request):
        the page shows a message only with it, so a link cannot make the dashboard say the attacker's text."""
        data = b"message\0" + sid.encode() + b"\0" + message.encode("utf-8", "replace")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def message_ok(self, sid: str, message: str, sig: str | None) -> bool:
        return bool(message) and bool(sig) and hmac.compare_digest(self.message_sig(sid, message), str(sig))


def tokens_equal(given: str, expected: str) -> bool:
    """Constant-time comparison of the operator token."""
    return hmac.compare_digest(given.encode(), expected.encode())
