"""Dependency-bump enrichment over the network (behaviour R2.10): advisories, repo resolution, changelogs.

Everything here is fail-open and returns ``None`` on any error, as the original does. GitHub calls go
through a PyGithub ``Github`` client (its requester, for the REST shapes the original reads); package
registries through an ``httpx.Client`` with the original's 3-second timeout. Both are passed in.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from github import Github
from kodiai.compat.js import js_trim
from kodiai.log import Logger
from kodiai.review.dep_bumps.detect import DepBumpDetails, SemverParts, parse_semver
from kodiai.review.dep_bumps.enrichment import (
    ADVISORY_ECOSYSTEMS,
    AdvisoryInfo,
    ChangelogContext,
    ReleaseNote,
    SecurityContext,
    extract_breaking_changes,
)

__all__ = [
    "GitHubRepoRef",
    "fetch_changelog",
    "fetch_security_advisories",
    "resolve_github_repo",
    "truncate_release_notes",
]

REGISTRY_TIMEOUT_SECONDS = 3.0
NOTE_BODY_CAP = 500
NOTES_TOTAL_CAP = 1500
RELEASE_PAGES = 2
RELEASES_PER_PAGE = 30
_GITHUB_REPO_RE = re.compile(r"github\.com/([^/\s]+)/([^/.#?\s]+)")
_CHANGELOG_HEADING_RE = re.compile(r"^#{1,3}\s+\[?v?(\d+\.\d+\.\d+)")


class GitHubRepoRef(BaseModel):
    owner: str
    repo: str


def _encode_uri_component(text: str) -> str:
    return quote(text, safe="-_.!~*'()")


def _advisory(raw: dict[str, Any], package_name: str, ecosystem: str) -> AdvisoryInfo:
    vulnerable_range, first_patched = "", None
    for vuln in raw.get("vulnerabilities") or []:
        package = vuln.get("package") or {}
        if package.get("name") == package_name and package.get("ecosystem") == ecosystem:
            vulnerable_range = vuln.get("vulnerable_version_range") or ""
            patched = vuln.get("first_patched_version")
            first_patched = patched.get("identifier") if isinstance(patched, dict) else patched
            break
    ghsa = raw["ghsa_id"]
    return AdvisoryInfo(
        ghsa_id=ghsa,
        cve_id=raw.get("cve_id"),
        severity=raw.get("severity") or "unknown",
        summary=raw.get("summary") or "",
        vulnerable_version_range=vulnerable_range,
        first_patched_version=first_patched,
        url=raw.get("html_url") or f"https://github.com/advisories/{ghsa}",
    )


def fetch_security_advisories(
    github: Github,
    package_name: str,
    ecosystem: str,
    old_version: str | None,
    new_version: str | None,
) -> SecurityContext | None:
    """Reviewed advisories affecting the old and the new version, merged by GHSA id; ``None`` on failure."""
    advisory_ecosystem = ADVISORY_ECOSYSTEMS.get(ecosystem)
    if advisory_ecosystem is None:
        return None
    try:

        def query(version: str | None) -> list[dict[str, Any]]:
            if not version:
                return []
            _, data = github.requester.requestJsonAndCheck(
                "GET",
                "/advisories",
                parameters={
                    "ecosystem": advisory_ecosystem,
                    "affects": f"{package_name}@{version}",
                    "per_page": 10,
                },
            )
            return list(data or [])

        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(query, old_version), pool.submit(query, new_version)]
        outcomes: list[list[dict[str, Any]] | None] = []
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception:
                outcomes.append(None)
        if outcomes[0] is None and outcomes[1] is None:
            return None
        old_raw, new_raw = (o or [] for o in outcomes)
        old = [_advisory(a, package_name, advisory_ecosystem) for a in old_raw if a.get("type") == "reviewed"]
        new = [_advisory(a, package_name, advisory_ecosystem) for a in new_raw if a.get("type") == "reviewed"]
        new_ids = {a.ghsa_id for a in new}
        merged: dict[str, AdvisoryInfo] = {}
        for adv in old:
            merged.setdefault(
                adv.ghsa_id,
                adv.model_copy(update={"affects_old": True, "affects_new": adv.ghsa_id in new_ids}),
            )
        for adv in new:
            if adv.ghsa_id not in merged:
                merged[adv.ghsa_id] = adv.model_copy(update={"affects_old": False, "affects_new": True})
        is_security_bump = bool(old) and any(a.ghsa_id not in new_ids for a in old)
        return SecurityContext(advisories=list(merged.values()), is_security_bump=is_security_bump)
    except Exception:
        return None


def _repo_from_url(url: object) -> GitHubRepoRef | None:
    if not isinstance(url, str):
        return None
    match = _GITHUB_REPO_RE.search(url)
    return GitHubRepoRef(owner=match.group(1), repo=match.group(2)) if match else None


def _registry_url(package_name: str, ecosystem: str) -> tuple[str, Callable[[Any], object]] | None:
    enc = _encode_uri_component(package_name)
    if ecosystem == "npm":

        def npm(data: Any) -> object:
            repository = data.get("repository")
            return repository.get("url") if isinstance(repository, dict) else repository

        return f"https://registry.npmjs.org/{enc}/latest", npm
    if ecosystem == "python":

        def pypi(data: Any) -> object:
            info = data.get("info") or {}
            urls = info.get("project_urls") or {}
            return (
                urls.get("Source") or urls.get("Repository") or urls.get("Homepage") or info.get("home_page")
            )

        return f"https://pypi.org/pypi/{enc}/json", pypi
    if ecosystem == "ruby":
        return f"https://rubygems.org/api/v1/gems/{enc}.json", lambda data: data.get("source_code_uri")
    return None


def resolve_github_repo(http: httpx.Client, package_name: str, ecosystem: str) -> GitHubRepoRef | None:
    """The package's GitHub repository from its registry metadata (npm, PyPI, RubyGems); else ``None``."""
    target = _registry_url(package_name, ecosystem)
    if target is None:
        return None
    url, pick = target
    try:
        response = http.get(url, timeout=REGISTRY_TIMEOUT_SECONDS)
        if not response.is_success:
            return None
        return _repo_from_url(pick(response.json()))
    except Exception:
        return None


def truncate_release_notes(notes: list[ReleaseNote]) -> list[ReleaseNote]:
    """Cap each body at 500 characters plus ``...`` and all of them at 1500 (the last one is cut to fit)."""
    out: list[ReleaseNote] = []
    total = 0
    for note in notes:
        if total >= NOTES_TOTAL_CAP:
            break
        body = note.body if len(note.body) <= NOTE_BODY_CAP else note.body[:NOTE_BODY_CAP] + "..."
        body = body[: NOTES_TOTAL_CAP - total]
        out.append(ReleaseNote(body=body, tag=note.tag))
        total += len(body)
    return out


def _key(parts: SemverParts) -> tuple[float, float, float]:
    return (parts.major, parts.minor, parts.patch)


def _in_range(version: str, old: SemverParts, new: SemverParts) -> bool:
    parsed = parse_semver(version)
    return parsed is not None and _key(old) < _key(parsed) <= _key(new)


def _releases(github: Github, ref: GitHubRepoRef, old: SemverParts, new: SemverParts) -> list[ReleaseNote]:
    notes: list[ReleaseNote] = []
    for page in range(1, RELEASE_PAGES + 1):
        _, data = github.requester.requestJsonAndCheck(
            "GET",
            f"/repos/{ref.owner}/{ref.repo}/releases",
            parameters={"per_page": RELEASES_PER_PAGE, "page": page},
        )
        if not data:
            break
        for release in data:
            tag = release.get("tag_name")
            if release.get("draft") or not tag:
                continue
            if _in_range(re.sub(r"^v", "", tag), old, new):
                notes.append(ReleaseNote(body=release.get("body") or "", tag=tag))
    return notes


def _changelog_file(
    github: Github, ref: GitHubRepoRef, old: SemverParts, new: SemverParts
) -> list[ReleaseNote]:
    try:
        _, data = github.requester.requestJsonAndCheck(
            "GET", f"/repos/{ref.owner}/{ref.repo}/contents/CHANGELOG.md"
        )
    except Exception:
        return []
    content = data.get("content") or ""
    text = (
        base64.b64decode(content).decode("utf-8", "replace") if data.get("encoding") == "base64" else content
    )
    sections: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        match = _CHANGELOG_HEADING_RE.match(line)
        if match:
            sections.append((match.group(1), [line]))
        elif sections:
            sections[-1][1].append(line)
    return [
        ReleaseNote(body=js_trim("\n".join(lines)), tag=f"v{version}")
        for version, lines in sections
        if _in_range(version, old, new)
    ]


def fetch_changelog(
    github: Github,
    http: httpx.Client,
    package_name: str,
    ecosystem: str,
    old_version: str | None,
    new_version: str | None,
) -> ChangelogContext | None:
    """Release notes between the versions (releases, then CHANGELOG.md, then just a compare URL)."""
    try:
        ref = resolve_github_repo(http, package_name, ecosystem)
        if ref is None:
            return None
        compare_url = (
            f"https://github.com/{ref.owner}/{ref.repo}/compare/v{old_version}...v{new_version}"
            if old_version and new_version
            else None
        )
        old = parse_semver(old_version) if old_version else None
        new = parse_semver(new_version) if new_version else None
        if old is not None and new is not None:
            for source, fetch in (("releases", _releases), ("changelog-file", _changelog_file)):
                notes = fetch(github, ref, old, new)
                if notes:
                    truncated = truncate_release_notes(notes)
                    return ChangelogContext(
                        release_notes=truncated,
                        breaking_changes=extract_breaking_changes(truncated),
                        compare_url=compare_url,
                        source=source,
                    )
        return ChangelogContext(
            release_notes=[], breaking_changes=[], compare_url=compare_url, source="compare-url-only"
        )
    except Exception:
        return None


DepEnricher = Callable[[DepBumpDetails], Awaitable[tuple[SecurityContext | None, ChangelogContext | None]]]


def dep_enricher(client: Github, registry: Callable[[], httpx.Client], log: Logger) -> DepEnricher:
    """Step 22: advisories and changelog in parallel; each failure alone becomes None."""

    async def enrich(details: DepBumpDetails) -> tuple[SecurityContext | None, ChangelogContext | None]:
        package = details.package_name or ""
        ecosystem = details.ecosystem or "npm"

        def changelog() -> ChangelogContext | None:
            with registry() as http:
                return fetch_changelog(
                    client, http, package, ecosystem, details.old_version, details.new_version
                )

        security, notes = await asyncio.gather(
            asyncio.to_thread(
                fetch_security_advisories,
                client,
                package,
                ecosystem,
                details.old_version,
                details.new_version,
            ),
            asyncio.to_thread(changelog),
            return_exceptions=True,
        )
        for name, value in (("security", security), ("changelog", notes)):
            if isinstance(value, BaseException):
                log.warning(
                    "Dependency enrichment failed (fail-open)",
                    gate="dep-bump-enrich",
                    part=name,
                    err=str(value),
                )
        return (
            security if isinstance(security, SecurityContext) else None,
            notes if isinstance(notes, ChangelogContext) else None,
        )

    return enrich
