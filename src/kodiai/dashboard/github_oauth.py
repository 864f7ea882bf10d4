"""GitHub user sign-in through the App's own OAuth client, and what the signed-in user may push to.

Only three calls: exchange the callback's code for a user token (``POST /login/oauth/access_token`` on
GitHub's web host), read the user (``GET /user``), and list the installations of this App the user can
reach with each repository's permissions (``GET /user/installations`` and
``GET /user/installations/{id}/repositories``: GitHub answers only for installations of the App whose
client issued the token). A repository counts when GitHub says the user may push (push, maintain, admin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from kodiai.dashboard.options import DashboardOptions
from kodiai.dashboard.scope import Access

MAX_PAGES = 10
PER_PAGE = 100
TIMEOUT = 10.0


class SignInError(Exception):
    """GitHub refused or did not answer; the message is safe to show (no token, no secret)."""


@dataclass(frozen=True)
class GitHubUser:
    login: str
    token: str


def authorize_url(options: DashboardOptions, state: str) -> str:
    """Where /dashboard/login sends the browser (GitHub uses the callback URL registered for the App)."""
    query = urlencode({"client_id": options.client_id or "", "state": state, "allow_signup": "false"})
    return f"{options.web_url}/login/oauth/authorize?{query}"


def _headers(token: str | None = None) -> dict[str, str]:
    headers = {"Accept": "application/vnd.github+json", "User-Agent": "kodiai-dashboard"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


async def sign_in(client: httpx.AsyncClient, options: DashboardOptions, code: str) -> GitHubUser:
    secret = options.client_secret.get_secret_value() if options.client_secret else ""
    try:
        response = await client.post(
            f"{options.web_url}/login/oauth/access_token",
            data={"client_id": options.client_id or "", "client_secret": secret, "code": code},
            headers={"Accept": "application/json", "User-Agent": "kodiai-dashboard"},
            timeout=TIMEOUT,
        )
        body = response.json() if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError) as exc:
        raise SignInError(f"GitHub did not answer the sign-in ({type(exc).__name__})") from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        reason = body.get("error") if isinstance(body, dict) else None
        raise SignInError(f"GitHub refused the sign-in ({reason or response.status_code})")
    user = await _get(client, options, "/user", token)
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str) or not login:
        raise SignInError("GitHub did not say who signed in")
    return GitHubUser(login, token)


async def writable_access(client: httpx.AsyncClient, options: DashboardOptions, user: GitHubUser) -> Access:
    """The user's :class:`Access`: repositories they may push to, and the installations holding them."""
    per_installation: dict[int, list[str]] = {}
    for installation in await _paged(client, options, "/user/installations", user.token, "installations"):
        installation_id = installation.get("id")
        if not isinstance(installation_id, int):
            continue
        path = f"/user/installations/{installation_id}/repositories"
        for repo in await _paged(client, options, path, user.token, "repositories"):
            if _may_push(repo) and isinstance(repo.get("full_name"), str):
                per_installation.setdefault(installation_id, []).append(repo["full_name"])
    return Access(
        user.login,
        repos=frozenset(r for repos in per_installation.values() for r in repos),
        installations=frozenset(per_installation),
        installation_repos=tuple((i, tuple(sorted(r))) for i, r in sorted(per_installation.items())),
    )


def _may_push(repo: dict[str, Any]) -> bool:
    permissions = repo.get("permissions") or {}
    return any(permissions.get(p) is True for p in ("push", "maintain", "admin"))


async def _paged(
    client: httpx.AsyncClient, options: DashboardOptions, path: str, token: str, key: str
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in range(1, MAX_PAGES + 1):
        body = await _get(client, options, f"{path}?per_page={PER_PAGE}&page={page}", token)
        batch = body.get(key) if isinstance(body, dict) else None
        if not isinstance(batch, list):
            break
        items.extend(i for i in batch if isinstance(i, dict))
        if len(batch) < PER_PAGE:
            break
    return items


async def _get(client: httpx.AsyncClient, options: DashboardOptions, path: str, token: str) -> Any:
    try:
        response = await client.get(
            options.api_url.rstrip("/") + path, headers=_headers(token), timeout=TIMEOUT
        )
    except httpx.HTTPError as exc:
        raise SignInError(f"GitHub did not answer ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise SignInError(f"GitHub answered {response.status_code} to {path.split('?')[0]}")
    try:
        return response.json()
    except ValueError:
        raise SignInError("GitHub's answer was not JSON") from None
