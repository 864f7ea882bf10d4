"""What the dashboard needs from the settings, and whether it is enabled at all.

Sign-in is configured when the App's OAuth client (``GITHUB_CLIENT_ID`` + ``GITHUB_CLIENT_SECRET``) or an
operator token (``DASHBOARD_TOKEN``) is set; with neither, ``/dashboard`` answers 404 (a dashboard nobody
can sign in to would only be an attack surface).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pydantic import SecretStr

from kodiai.settings import Settings

DEFAULT_API_URL = "https://api.github.com"
ENABLE_HINT = (
    "Dashboard disabled: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (GitHub sign-in; register"
    " <public URL>/dashboard/callback as the App's callback URL) or DASHBOARD_TOKEN (operator token)"
    " to serve /dashboard"
)


@dataclass(frozen=True)
class DashboardOptions:
    client_id: str | None = None
    client_secret: SecretStr | None = None
    token: SecretStr | None = None
    session_key: SecretStr | None = None
    api_url: str = DEFAULT_API_URL
    session_seconds: int = 8 * 3600
    access_cache_seconds: int = 300

    @property
    def github_sign_in(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @property
    def enabled(self) -> bool:
        return self.github_sign_in or self.token is not None

    @property
    def web_url(self) -> str:
        """Where GitHub's sign-in pages live: github.com for the public API, the host for GitHub Enterprise
        Server (``…/api/v3``), the same base otherwise (a test's fake GitHub serves both)."""
        api = self.api_url.rstrip("/")
        if api == DEFAULT_API_URL:
            return "https://github.com"
        return api[: -len("/api/v3")] if api.endswith("/api/v3") else api

    def signing_key(self) -> bytes:
        """The cookie-signing key: ``DASHBOARD_SESSION_SECRET``, else derived from the secrets the operator
        already keeps (so sessions survive a restart without another setting)."""
        if self.session_key is not None:
            return self.session_key.get_secret_value().encode()
        parts = [s.get_secret_value() for s in (self.client_secret, self.token) if s is not None]
        return hashlib.sha256(("kodiai-dashboard\0" + "\0".join(parts)).encode()).digest()

    @classmethod
    def from_settings(cls, settings: Settings) -> DashboardOptions:
        return cls(
            client_id=settings.github_client_id,
            client_secret=settings.github_client_secret,
            token=settings.dashboard_token,
            session_key=settings.dashboard_session_secret,
            api_url=settings.github_api_url or DEFAULT_API_URL,
        )
