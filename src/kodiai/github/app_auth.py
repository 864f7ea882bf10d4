"""GitHub App authentication with PyGithub (behaviour P1.4).

- App JWT calls go through one :class:`github.GithubIntegration` with ``base_url=GITHUB_API_URL``.
- Installation tokens are cached per installation until shortly before they expire; every REST
  client handed out reads the cache on each request, so a long job never uses an expired token.
- ``initialize()`` fetches the app slug (``GET /app``) at start-up and fails fast with one clear message.
- ``check_connectivity()`` is the readiness probe: ``GET /app``, cached for 30 s.

All PyGithub calls are blocking; async callers use ``asyncio.to_thread``.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from jwt.algorithms import RSAAlgorithm
from urllib3 import Retry

from github import Auth, Github, GithubIntegration
from kodiai.github.retry import GitHubRetry
from kodiai.log import get_logger, redact
from kodiai.outbound import register_installation_token

DEFAULT_API_URL = "https://api.github.com"
CONNECTIVITY_TTL_SECONDS = 30.0
TOKEN_REFRESH_MARGIN = timedelta(minutes=5)
#: An installation token is printable ASCII without spaces (``ghs_…``; older GHES: hex). It goes into an
#: HTTP header and git's environment, so a line break in it must never pass.
_TOKEN_RE = re.compile(r"[\x21-\x7e]{1,1024}")


class GitHubAppError(RuntimeError):
    """GitHub App authentication failed (bad key, unknown app, GitHub unreachable)."""


@functools.lru_cache(maxsize=8)
def _parsed_key(pem: str) -> Any:
    """The App's key parsed by PyJWT (the same key, and the same errors, as signing with the text), once per
    process and key text: each parse costs ~95 ms of CPU, and every :class:`GitHubApp` built with the same
    key (a test suite builds hundreds) would pay it again. A failed parse is not cached."""
    return RSAAlgorithm(RSAAlgorithm.SHA256).prepare_key(pem)


class _AppJwtSigner:
    """Signs the app's JWTs (RS256) with its key parsed once. Given the PEM text, PyJWT parses and validates
    the key again for every JWT: ~70 ms of CPU each (one per token mint and per ``GET /app``)."""

    def __init__(self, private_key: str) -> None:
        if not private_key:
            raise ValueError("private_key must not be empty")
        self._pem = private_key
        self._key: Any = None

    def __call__(self, payload: dict[str, Any]) -> str:
        if self._key is None:
            self._key = _parsed_key(self._pem)
        return jwt.encode(payload, key=self._key, algorithm="RS256")


class _CachedInstallationAuth(Auth.Auth):
    """PyGithub auth that asks the app's token cache on every request."""

    def __init__(self, app: GitHubApp, installation_id: int) -> None:
        self._app = app
        self._installation_id = installation_id

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self._app.installation_token(self._installation_id)

    @property
    def _masked_token(self) -> str:
        return "token (installation token removed)"


class GitHubApp:
    """One GitHub App: JWT client, installation token cache, slug, connectivity check."""

    def __init__(
        self,
        app_id: str | int,
        private_key: str,
        *,
        base_url: str = DEFAULT_API_URL,
        retry: Retry | None = None,
        timeout: int = 15,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.app_id = str(app_id)
        self.base_url = base_url.rstrip("/")
        self._retry = retry if retry is not None else GitHubRetry()
        self._timeout = timeout
        self._auth = Auth.AppAuth(self.app_id, sign_func=_AppJwtSigner(private_key))
        self._integration = GithubIntegration(
            auth=self._auth, base_url=self.base_url, retry=self._retry, timeout=timeout
        )
        self._clock = clock
        self._wall_clock = wall_clock
        self._tokens: dict[int, tuple[str, datetime]] = {}
        self._lock = threading.Lock()
        self._last_check: tuple[float, bool] | None = None
        self.slug = ""
        self._log = get_logger("kodiai.github.app")

    # ------------------------------------------------------------------ start-up
    def initialize(self) -> str:
        """``GET /app`` as the app; cache the slug (or the id when there is none). Fail fast otherwise."""
        try:
            app = self._integration.get_app()
        except Exception as exc:
            raise GitHubAppError(
                f"GitHub App authentication failed against {self.base_url} (app id {self.app_id}): "
                f"{_describe(exc)}. Check GITHUB_APP_ID, GITHUB_PRIVATE_KEY and GITHUB_API_URL."
            ) from None
        self.slug = app.slug or str(app.id)
        self._last_check = (self._clock(), True)
        self._log.info(f"GitHub App authenticated as {self.slug}", appSlug=self.slug)
        return self.slug

    # ------------------------------------------------------------------ tokens and clients
    def installation_token(self, installation_id: int) -> str:
        """A valid installation access token, minted at most once per expiry window."""
        now = self._wall_clock()
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached and cached[1] - TOKEN_REFRESH_MARGIN > now:
                return cached[0]
            try:
                access = self._integration.get_access_token(installation_id)
            except Exception as exc:
                raise GitHubAppError(
                    f"Could not mint an installation token for installation {installation_id}: {_describe(exc)}"
                ) from None
            token, expires = _validated_token(access, installation_id)
            register_installation_token(token, expires)  # the outbound scanner redacts it from now on
            self._tokens[installation_id] = (token, expires)
            return token

    def installation_client(self, installation_id: int) -> Github:
        """A PyGithub client acting as the installation (same base URL and retry policy).

        PyGithub spaces every request 0.25 s apart by default, which made a review's dozen reads cost
        seconds; reads go out at once here (rate limits are met by the retry policy, which honours
        ``Retry-After`` and the primary limit's reset). Writes keep PyGithub's spacing unless a caller
        paces them itself (the MCP tools' ``WritePacer``).
        """
        return Github(
            auth=_CachedInstallationAuth(self, installation_id),
            base_url=self.base_url,
            retry=self._retry,
            timeout=self._timeout,
            seconds_between_requests=None,
        )

    # ------------------------------------------------------------------ readiness
    def check_connectivity(self) -> bool:
        """``GET /app`` with the app JWT, at most once per 30 s; any error means unreachable."""
        now = self._clock()
        with self._lock:
            if self._last_check and now - self._last_check[0] < CONNECTIVITY_TTL_SECONDS:
                return self._last_check[1]
        try:
            self._integration.get_app()
            ok = True
        except Exception as exc:
            self._log.warning("GitHub connectivity check failed", err=_describe(exc))
            ok = False
        with self._lock:
            self._last_check = (self._clock(), ok)
        return ok


def _validated_token(access: Any, installation_id: int) -> tuple[str, datetime]:
    """``(token, expires_at)`` of a token response, or :class:`GitHubAppError`.

    A 201 without a usable ``token`` (a proxy's or a broken GitHub's answer) must not be cached: every
    client would then send no credentials until it expired, and clones would run anonymously."""
    problem = f"GitHub's token response for installation {installation_id} is unusable"
    token, expires = _attribute(access, "token"), _attribute(access, "expires_at")
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        raise GitHubAppError(f"{problem}: no token (or not a token string); nothing was cached")
    if not isinstance(expires, datetime):
        raise GitHubAppError(f"{problem}: expires_at missing or not a timestamp; nothing was cached")
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    return token, expires


def _attribute(access: Any, name: str) -> Any:
    """PyGithub raises on reading a malformed attribute (an unparseable ``expires_at``): that is ``None``."""
    try:
        return getattr(access, name)
    except Exception:
        return None


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    data = getattr(exc, "data", None)
    message = data.get("message") if isinstance(data, dict) else None
    if status is not None:
        text = f"HTTP {status}" + (f" {message}" if message else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return redact(text)[:500]
