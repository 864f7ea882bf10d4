"""Who may do what: a user's permission on a repository, looked up on GitHub, cached briefly, fail-closed.

Every trust decision about a person goes through here: write mode and memory governance (the commenter),
the trusted ``.kodiai.yml`` (the PR author), memories from a PR (its author) and feedback reactions (the
reactor). The answer comes from ``GET /repos/{o}/{r}/collaborators/{u}/permission``; its legacy
``permission`` field is ``admin``, ``write``, ``read`` or ``none`` (``maintain`` maps to ``write``,
``triage`` to ``read``). A failed lookup is *unknown*, never "allowed": callers treat it as no access.

The cache is per process and short (``DEFAULT_TTL_SECONDS``): a collaborator whose access was revoked
keeps it for at most that long, and a burst of reactions or comments costs one API call per user.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from kodiai.github.models import CollaboratorPermission, parse_object
from kodiai.github.rest import RestApi

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "WRITE_PERMISSIONS",
    "AccessLevel",
    "PermissionCache",
    "PermissionLookupError",
    "has_write_access",
    "lookup_permission",
]

DEFAULT_TTL_SECONDS = 300.0
#: Legacy permission values that may change the repository.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})

AccessLevel = Literal["write", "read", "unknown"]


class PermissionLookupError(RuntimeError):
    """GitHub could not tell us the user's permission (callers fail closed)."""


def has_write_access(permission: str | None) -> bool:
    """True only for a permission that may push to the repository."""
    return (permission or "").strip().lower() in WRITE_PERMISSIONS


@dataclass(frozen=True)
class _Entry:
    permission: str
    expires: float


class PermissionCache:
    """``(repo, login) → permission`` for ``ttl`` seconds. Thread-safe; failures are never cached."""

    def __init__(self, ttl: float = DEFAULT_TTL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def get(self, repo: str, login: str) -> str | None:
        key = (repo.lower(), login.lower())
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.expires <= self._clock():
                self._entries.pop(key, None)
                return None
            return entry.permission

    def clear(self) -> None:
        """Forget every answer (tests that change a user's role between runs in one process)."""
        with self._lock:
            self._entries.clear()

    def put(self, repo: str, login: str, permission: str) -> None:
        with self._lock:
            if len(self._entries) > 10_000:  # bounded: drop everything rather than grow without end
                self._entries.clear()
            self._entries[(repo.lower(), login.lower())] = _Entry(permission, self._clock() + self._ttl)


#: The process-wide cache the handlers share.
SHARED_CACHE = PermissionCache()


async def lookup_permission(
    rest: RestApi, owner: str, repo: str, login: str, *, cache: PermissionCache | None = SHARED_CACHE
) -> str:
    """The legacy permission of ``login`` on ``owner/repo`` (``admin``/``write``/``read``/``none``).

    Raises :class:`PermissionLookupError` when GitHub does not answer with one (network, 5xx, a 404 for a
    deleted account, a malformed body): the caller decides, and must decide "no access"."""
    name = login.strip()
    if not name or name.startswith("-") or "/" in name:
        raise PermissionLookupError(f"not a GitHub login: {login!r}")
    full = f"{owner}/{repo}"
    if cache is not None:
        cached = cache.get(full, name)
        if cached is not None:
            return cached
    try:
        data = await rest.get(f"/collaborators/{name}/permission")
    except Exception as exc:
        raise PermissionLookupError(f"permission lookup failed: {type(exc).__name__}") from exc
    permission = parse_object(CollaboratorPermission, data).permission
    if not permission:
        raise PermissionLookupError("permission lookup returned no permission")
    permission = permission.lower()
    if cache is not None:
        cache.put(full, name, permission)
    return permission


async def access_level(
    rest: RestApi, owner: str, repo: str, login: str | None, *, cache: PermissionCache | None = SHARED_CACHE
) -> AccessLevel:
    """``write``, ``read`` (any answer below write) or ``unknown`` (the lookup failed, or no login)."""
    if not login:
        return "unknown"
    try:
        permission = await lookup_permission(rest, owner, repo, login, cache=cache)
    except PermissionLookupError:
        return "unknown"
    return "write" if has_write_access(permission) else "read"
