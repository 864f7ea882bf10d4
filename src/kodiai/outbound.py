"""What leaves the server: the process's own secret values, and what happens when one is about to leave.

The detectors are pure (:mod:`kodiai.text.secret_scan`); this module holds the state they need and the
side effects of a hit:

- a registry of the server's secret values: every ``SecretStr`` setting and the resolved App key
  (:func:`register_settings`, at start) and every installation token minted in this process
  (:func:`register_installation_token`, kept until it expires);
- :func:`guard_body`, the choke point :class:`kodiai.github.rest.GitHubRest` runs on every POST, PATCH
  and PUT: each string of the JSON body is redacted, the hit logged without the value and counted;
- :func:`report_hit`, shared with write mode's refusals, and the observers that feed ``/metrics``
  (``kodiai_outbound_secret_hits_total{surface,action}``).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, SecretStr

from kodiai.log import get_logger
from kodiai.text.secret_scan import KnownSecrets, redact_strings, secret_forms

__all__ = [
    "SecretRegistry",
    "guard_body",
    "known_secrets",
    "observe_hits",
    "outbound_surface",
    "register_installation_token",
    "register_secret",
    "register_settings",
    "report_hit",
]

#: (surface, action) → None; e.g. a Prometheus counter's ``labels(surface, action).inc``.
HitObserver = Callable[[str, str], None]

_WRITE_METHODS = frozenset({"POST", "PATCH", "PUT"})
#: Settings whose value may be a file path (``/`` or ``./``) rather than the key itself.
_KEY_PATH_SETTINGS = frozenset({"github_private_key", "github_private_key_base64"})


class SecretRegistry:
    """The values to match exactly, as an immutable :class:`KnownSecrets` snapshot rebuilt on change.

    Static values (settings) are reference-counted so that two runtimes in one process (tests) can add
    and remove the same value; tokens are dropped once they have expired (then they are worthless), so
    the registry stays small in a long-running server.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._static: Counter[str] = Counter()
        self._tokens: dict[str, float] = {}
        self._snapshot = KnownSecrets()
        self._next_expiry = float("inf")

    def add(self, values: Iterable[str]) -> Callable[[], None]:
        """Register each value (expanded by :func:`secret_forms`); returns the undo."""
        forms = [form for value in values if value for form in secret_forms(value)]
        with self._lock:
            self._static.update(forms)
            self._rebuild()

        def remove() -> None:
            with self._lock:
                self._static.subtract(forms)
                self._static = +self._static  # drop counts that reached zero
                self._rebuild()

        return remove

    def add_token(self, token: str, expires_at: datetime) -> None:
        """Register an installation token and its git forms until ``expires_at``."""
        expiry = expires_at.timestamp()
        with self._lock:
            for form in secret_forms(token, access_token=True):
                self._tokens[form] = max(expiry, self._tokens.get(form, 0.0))
            self._rebuild()

    def snapshot(self) -> KnownSecrets:
        """The current values (lock-free unless a token has expired since the last rebuild)."""
        if self._clock() >= self._next_expiry:
            with self._lock:
                self._rebuild()
        return self._snapshot

    def _rebuild(self) -> None:
        now = self._clock()
        self._tokens = {form: expiry for form, expiry in self._tokens.items() if expiry > now}
        self._next_expiry = min(self._tokens.values(), default=float("inf"))
        self._snapshot = KnownSecrets.of([*self._static, *self._tokens])


_REGISTRY = SecretRegistry()
_observers: list[HitObserver] = []
_observers_lock = threading.Lock()


def known_secrets() -> KnownSecrets:
    """The process's known secret values now."""
    return _REGISTRY.snapshot()


def register_secret(*values: str) -> Callable[[], None]:
    """Add values to the process registry; returns the undo."""
    return _REGISTRY.add(values)


def register_installation_token(token: str, expires_at: datetime) -> None:
    """Called for every installation token minted in this process."""
    _REGISTRY.add_token(token, expires_at)


def settings_secret_values(settings: BaseModel) -> list[str]:
    """Every ``SecretStr`` setting's value (a key given as a file path: the key, not the path) and the
    resolved App private key. A ``BaseModel`` rather than ``kodiai.settings.Settings``: this module sits
    below the settings in the layers."""
    values: list[str] = []
    for name in type(settings).model_fields:
        value = getattr(settings, name, None)
        if not isinstance(value, SecretStr):
            continue
        text = value.get_secret_value()
        if name in _KEY_PATH_SETTINGS and text.strip().startswith(("/", "./")):
            continue
        values.append(text)
    try:
        pem = getattr(settings, "private_key_pem", None)
    except Exception:  # an unreadable key fails elsewhere, loudly; here it only has nothing to add
        pem = None
    if isinstance(pem, SecretStr):
        values.append(pem.get_secret_value())
    return values


def register_settings(settings: BaseModel) -> Callable[[], None]:
    """Register the settings' secret values (see :func:`settings_secret_values`); returns the undo."""
    return _REGISTRY.add(settings_secret_values(settings))


def observe_hits(observer: HitObserver) -> Callable[[], None]:
    """Call ``observer(surface, action)`` on every hit until the returned undo is called."""
    with _observers_lock:
        _observers.append(observer)

    def remove() -> None:
        with _observers_lock:
            if observer in _observers:
                _observers.remove(observer)

    return remove


def report_hit(surface: str, action: str, detectors: Sequence[str], **fields: Any) -> None:
    """Log a hit (detector names only, never the value) and tell the observers.

    ``action``: ``redacted`` (a text body went out without the secret) or ``refused`` (nothing went out)."""
    get_logger("kodiai.outbound").warning(
        "Secret found in outbound content",
        surface=surface,
        action=action,
        detectors=list(detectors),
        **fields,
    )
    with _observers_lock:
        observers = list(_observers)
    for observer in observers:
        observer(surface, action)


_SURFACES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"/issues/\d+/comments$"), "issue_comment"),
    (re.compile(r"/issues/comments/\d+$"), "issue_comment"),
    (re.compile(r"/pulls/\d+/reviews(?:/\d+)?$"), "review"),
    (re.compile(r"/pulls/\d+/comments/\d+/replies$"), "review_comment_reply"),
    (re.compile(r"/pulls/\d+/comments$"), "review_comment"),
    (re.compile(r"/pulls/comments/\d+$"), "review_comment"),
    (re.compile(r"/pulls(?:/\d+)?$"), "pull_request"),
    (re.compile(r"/issues(?:/\d+)?$"), "issue"),
)


def outbound_surface(method: str, path: str) -> str:
    """A bounded metric label for a write's endpoint (``other`` when not one the server posts to)."""
    bare = path.split("?", 1)[0].rstrip("/")
    for pattern, surface in _SURFACES:
        if pattern.search(bare):
            return surface
    return "other"


def guard_body(method: str, path: str, body: Any) -> Any:
    """The body of a GitHub write with every secret redacted (the same object when there is none).

    Reads and bodiless calls pass untouched."""
    if method.upper() not in _WRITE_METHODS or body is None:
        return body
    redacted, detectors = redact_strings(body, known_secrets())
    if detectors:
        report_hit(outbound_surface(method, path), "redacted", detectors, method=method.upper(), path=path)
    return redacted
