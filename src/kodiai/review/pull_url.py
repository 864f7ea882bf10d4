"""Parsing a pull request URL for ``kodiai review URL`` (pure: no I/O, no settings).

``https://github.com/OWNER/REPO/pull/N`` and the same on a GitHub Enterprise host; a trailing
``/files``, ``/commits``, query or fragment (what a browser's address bar holds) is accepted. The API a
URL is fetched from is ``GITHUB_API_URL``; :func:`check_api_matches` refuses a URL on another host, so a
GHES PR is never looked up on github.com (or a token sent to the wrong host).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

_PATH = re.compile(
    r"^/([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/([A-Za-z0-9._-]+)/pulls?/(\d+)(?:/[\w/-]*)?/?$"
)


class PullUrlError(ValueError):
    """Not a pull request URL, or one on a host the configured API does not serve."""


@dataclass(frozen=True)
class PullRef:
    """One pull request: the web origin it was named on (``https://host``), owner, repository, number."""

    web_url: str
    owner: str
    repo: str
    number: int

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def html_url(self) -> str:
        return f"{self.web_url}/{self.owner}/{self.repo}/pull/{self.number}"


def parse_pull_url(url: str) -> PullRef:
    """``https://HOST/OWNER/REPO/pull/N[/...]`` → :class:`PullRef`; :class:`PullUrlError` otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PullUrlError(f"not a pull request URL: {url!r} (expected https://github.com/OWNER/REPO/pull/N)")
    match = _PATH.match(parts.path)
    if match is None:
        raise PullUrlError(
            f"not a pull request URL: {url!r} (expected {parts.scheme}://{parts.netloc}/OWNER/REPO/pull/N)"
        )
    owner, repo, number = match.group(1), match.group(2), int(match.group(3))
    if repo.endswith(".git"):
        repo = repo[: -len(".git")]
    if repo in ("", ".", "..") or number <= 0:
        raise PullUrlError(f"not a pull request URL: {url!r}")
    host = parts.netloc.lower()
    if host == "www.github.com":
        host = "github.com"
    return PullRef(web_url=f"{parts.scheme}://{host}", owner=owner, repo=repo, number=number)


def web_url_for(api_url: str) -> str:
    """The web origin an API base serves: github.com for api.github.com, ``https://HOST`` for
    ``https://HOST/api/v3`` (GHES), the base itself otherwise."""
    url = api_url.rstrip("/")
    if urlsplit(url).netloc.lower() == "api.github.com":
        return "https://github.com"
    return url[: -len("/api/v3")] if url.endswith("/api/v3") else url


def check_api_matches(ref: PullRef, api_url: str) -> None:
    """Refuse a PR on one host while ``GITHUB_API_URL`` points at another, saying what to set."""
    expected = urlsplit(web_url_for(api_url)).netloc.lower()
    actual = urlsplit(ref.web_url).netloc.lower()
    if expected != actual:
        suggestion = "https://api.github.com" if actual == "github.com" else f"https://{actual}/api/v3"
        raise PullUrlError(
            f"the pull request is on {actual} but GITHUB_API_URL is {api_url}: "
            f"set GITHUB_API_URL={suggestion} to review it"
        )
