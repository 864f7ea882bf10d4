"""behaviour R4.12 (enrichment over the network: DE-01…DE-14, DE-22…DE-28).

GitHub is the fake REST server on loopback, reached by the real PyGithub client; the package
registries (outside HTTP services) are an ``httpx.MockTransport``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, HTTPException, Request

from github import Auth, Github
from kodiai.review.dep_bumps.enrichment import ReleaseNote
from kodiai.review.dep_bumps.enrichment_fetch import (
    GitHubRepoRef,
    fetch_changelog,
    fetch_security_advisories,
    resolve_github_repo,
    truncate_release_notes,
)
from support.fake_github import FakeGitHub


def _install_routes(fake: FakeGitHub) -> None:
    router = APIRouter()

    @router.get("/advisories")
    async def advisories(request: Request) -> list[dict[str, Any]]:
        q = request.query_params
        key = f"{q['ecosystem']}:{q['affects']}"
        return list(fake.data.setdefault("advisories", {}).get(key, []))

    @router.get("/repos/{owner}/{repo}/releases")
    async def releases(owner: str, repo: str, page: int = 1, per_page: int = 30) -> list[dict[str, Any]]:
        items = fake.data.setdefault("releases", {}).get(f"{owner}/{repo}", [])
        return items[(page - 1) * per_page : page * per_page]

    @router.get("/repos/{owner}/{repo}/contents/CHANGELOG.md")
    async def changelog(owner: str, repo: str) -> dict[str, Any]:
        text = fake.data.setdefault("changelogs", {}).get(f"{owner}/{repo}")
        if text is None:
            raise HTTPException(status_code=404, detail="Not Found")
        return {"encoding": "base64", "content": base64.b64encode(text.encode()).decode()}

    fake.register(router)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        _install_routes(fake)
        yield fake


@pytest.fixture
def fake(server: FakeGitHub) -> FakeGitHub:
    with server.lock:
        server.data.clear()
        server.faults.clear()
    server.reset_calls()
    return server


@pytest.fixture
def github(fake: FakeGitHub) -> Github:
    return Github(base_url=fake.url, auth=Auth.Token("ghs_test"), retry=None)


def _registry(routes: dict[str, tuple[int, Any]]) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        status, body = routes.get(str(request.url), (404, {"error": "not found"}))
        return httpx.Response(status, json=body)

    return httpx.Client(transport=httpx.MockTransport(handler))


def _adv(
    ghsa: str, *, kind: str = "reviewed", severity: str = "high", cve: str | None = None
) -> dict[str, Any]:
    return {
        "ghsa_id": ghsa,
        "cve_id": cve,
        "type": kind,
        "severity": severity,
        "summary": "Prototype pollution",
        "html_url": f"https://github.com/advisories/{ghsa}",
        "vulnerabilities": [
            {
                "package": {"ecosystem": "npm", "name": "lodash"},
                "vulnerable_version_range": "< 4.17.21",
                "first_patched_version": "4.17.21",
            }
        ],
    }


def test_de_01_security_bump(fake: FakeGitHub, github: Github) -> None:
    fake.data["advisories"] = {"npm:lodash@4.17.20": [_adv("GHSA-xxxx", cve="CVE-2021-23337")]}
    result = fetch_security_advisories(github, "lodash", "npm", "4.17.20", "4.17.21")
    assert result is not None and result.is_security_bump is True
    (adv,) = result.advisories
    assert (adv.ghsa_id, adv.cve_id, adv.severity) == ("GHSA-xxxx", "CVE-2021-23337", "high")
    assert (adv.vulnerable_version_range, adv.first_patched_version) == ("< 4.17.21", "4.17.21")
    assert adv.affects_old is True and adv.affects_new is False


def test_de_02_no_advisories(github: Github) -> None:
    result = fetch_security_advisories(github, "unknown-pkg", "npm", "1.0.0", "1.0.1")
    assert result is not None and result.advisories == [] and result.is_security_bump is False


def test_de_03_both_queries_fail(fake: FakeGitHub, github: Github) -> None:
    fake.fail(500, times=2, path="/advisories")
    assert fetch_security_advisories(github, "lodash", "npm", "1.0.0", "1.0.1") is None


def test_de_04_unmapped_ecosystem(fake: FakeGitHub, github: Github) -> None:
    assert fetch_security_advisories(github, "alpine", "docker", "1", "2") is None
    assert fake.calls_to("GET", "/advisories") == []


def test_de_05_python_is_queried_as_pip(fake: FakeGitHub, github: Github) -> None:
    fetch_security_advisories(github, "requests", "python", "2.0.0", "2.1.0")
    calls = fake.calls_to("GET", "/advisories")
    assert len(calls) == 2
    assert all("ecosystem=pip" in (c.query or "") for c in calls)


def test_de_06_only_reviewed_advisories(fake: FakeGitHub, github: Github) -> None:
    fake.data["advisories"] = {"npm:lodash@1.0.0": [_adv("GHSA-mal", kind="malware"), _adv("GHSA-rev")]}
    result = fetch_security_advisories(github, "lodash", "npm", "1.0.0", "1.0.1")
    assert result is not None and [a.ghsa_id for a in result.advisories] == ["GHSA-rev"]


def test_de_07_same_advisory_on_both_versions(fake: FakeGitHub, github: Github) -> None:
    fake.data["advisories"] = {"npm:lodash@1.0.0": [_adv("GHSA-a")], "npm:lodash@1.0.1": [_adv("GHSA-a")]}
    result = fetch_security_advisories(github, "lodash", "npm", "1.0.0", "1.0.1")
    assert result is not None and result.is_security_bump is False
    assert result.advisories[0].affects_old and result.advisories[0].affects_new


def test_new_only_advisories_follow_old_ones(fake: FakeGitHub, github: Github) -> None:
    fake.data["advisories"] = {"npm:lodash@1.0.0": [_adv("GHSA-old")], "npm:lodash@1.0.1": [_adv("GHSA-new")]}
    result = fetch_security_advisories(github, "lodash", "npm", "1.0.0", "1.0.1")
    assert result is not None
    assert [(a.ghsa_id, a.affects_old, a.affects_new) for a in result.advisories] == [
        ("GHSA-old", True, False),
        ("GHSA-new", False, True),
    ]


def test_de_08_npm_git_url() -> None:
    http = _registry(
        {
            "https://registry.npmjs.org/express/latest": (
                200,
                {"repository": {"url": "git+https://github.com/expressjs/express.git"}},
            )
        }
    )
    assert resolve_github_repo(http, "express", "npm") == GitHubRepoRef(owner="expressjs", repo="express")


def test_de_09_scoped_npm_package() -> None:
    http = _registry(
        {
            "https://registry.npmjs.org/%40octokit%2Frest/latest": (
                200,
                {"repository": {"url": "https://github.com/octokit/rest.js.git"}},
            )
        }
    )
    assert resolve_github_repo(http, "@octokit/rest", "npm") == GitHubRepoRef(owner="octokit", repo="rest")


def test_de_10_pypi_project_urls_source() -> None:
    body = {
        "info": {"project_urls": {"Source": "https://github.com/psf/requests"}, "home_page": "https://x.org"}
    }
    http = _registry({"https://pypi.org/pypi/requests/json": (200, body)})
    assert resolve_github_repo(http, "requests", "python") == GitHubRepoRef(owner="psf", repo="requests")


def test_de_11_rubygems_source_code_uri() -> None:
    http = _registry(
        {
            "https://rubygems.org/api/v1/gems/rails.json": (
                200,
                {"source_code_uri": "https://github.com/rails/rails/tree/v7.1.0"},
            )
        }
    )
    assert resolve_github_repo(http, "rails", "ruby") == GitHubRepoRef(owner="rails", repo="rails")


def test_de_12_docker_is_not_resolved() -> None:
    assert resolve_github_repo(_registry({}), "alpine", "docker") is None


def test_de_13_registry_404() -> None:
    assert resolve_github_repo(_registry({}), "missing", "npm") is None


def test_de_14_no_github_url() -> None:
    http = _registry(
        {"https://registry.npmjs.org/x/latest": (200, {"repository": {"url": "https://gitlab.com/a/b"}})}
    )
    assert resolve_github_repo(http, "x", "npm") is None


NPM_LODASH = {
    "https://registry.npmjs.org/lodash/latest": (
        200,
        {"repository": {"url": "https://github.com/lodash/lodash"}},
    )
}


def _release(tag: str, body: str, draft: bool = False) -> dict[str, Any]:
    return {"tag_name": tag, "body": body, "draft": draft}


def test_de_22_tier_one_releases(fake: FakeGitHub, github: Github) -> None:
    fake.data["releases"] = {
        "lodash/lodash": [
            _release("v4.18.2", "BREAKING CHANGE: dropped Node 12"),
            _release("v4.18.0", "Features"),
            _release("v4.17.3", "old, excluded"),
            _release("v5.0.0", "too new"),
        ]
    }
    result = fetch_changelog(github, _registry(NPM_LODASH), "lodash", "npm", "4.17.3", "4.18.2")
    assert result is not None and result.source == "releases"
    assert [n.tag for n in result.release_notes] == ["v4.18.2", "v4.18.0"]
    assert result.compare_url is not None and "github.com" in result.compare_url
    assert result.breaking_changes == ["BREAKING CHANGE: dropped Node 12"]


def test_de_23_tier_two_changelog_file(fake: FakeGitHub, github: Github) -> None:
    fake.data["changelogs"] = {
        "lodash/lodash": "# Changelog\n\n## [2.0.0]\n- BREAKING CHANGE: removed x\n\n## 1.1.0\n- added y\n\n## v1.0.0\n- first\n"
    }
    result = fetch_changelog(github, _registry(NPM_LODASH), "lodash", "npm", "1.0.0", "2.0.0")
    assert result is not None and result.source == "changelog-file"
    assert [n.tag for n in result.release_notes] == ["v2.0.0", "v1.1.0"]
    assert result.release_notes[1].body == "## 1.1.0\n- added y"


def test_de_24_tier_three_compare_url_only(github: Github) -> None:
    http = _registry(
        {"https://registry.npmjs.org/repo/latest": (200, {"repository": "https://github.com/owner/repo"})}
    )
    result = fetch_changelog(github, http, "repo", "npm", "1.0.0", "2.0.0")
    assert result is not None and result.source == "compare-url-only" and result.release_notes == []
    assert result.compare_url == "https://github.com/owner/repo/compare/v1.0.0...v2.0.0"


def test_de_25_unresolvable_repo(github: Github) -> None:
    assert fetch_changelog(github, _registry({}), "lodash", "npm", "1.0.0", "2.0.0") is None


def test_de_26_long_body_truncated() -> None:
    (note,) = truncate_release_notes([ReleaseNote(body="x" * 2000, tag="v1")])
    assert len(note.body) <= 503 and note.body.endswith("...")


def test_de_27_total_capped_at_1500(fake: FakeGitHub, github: Github) -> None:
    fake.data["releases"] = {"lodash/lodash": [_release(f"v1.0.{i}", "y" * 400) for i in range(10, 0, -1)]}
    result = fetch_changelog(github, _registry(NPM_LODASH), "lodash", "npm", "1.0.0", "1.0.10")
    assert result is not None and result.source == "releases"
    assert sum(len(n.body) for n in result.release_notes) <= 1500
    assert [len(n.body) for n in result.release_notes] == [400, 400, 400, 300]


def test_de_28_drafts_skipped(fake: FakeGitHub, github: Github) -> None:
    fake.data["releases"] = {
        "lodash/lodash": [_release("v2.0.0", "draft", draft=True), _release("v1.1.0", "ok")]
    }
    result = fetch_changelog(github, _registry(NPM_LODASH), "lodash", "npm", "1.0.0", "2.0.0")
    assert result is not None and [n.tag for n in result.release_notes] == ["v1.1.0"]


def test_release_listing_error_fails_open(fake: FakeGitHub, github: Github) -> None:
    fake.fail(500, path="/repos/lodash/lodash/releases")
    assert fetch_changelog(github, _registry(NPM_LODASH), "lodash", "npm", "1.0.0", "2.0.0") is None


def test_registry_response_bodies_are_parsed_as_json() -> None:
    http = _registry({"https://registry.npmjs.org/a/latest": (200, json.loads('{"repository": null}'))})
    assert resolve_github_repo(http, "a", "npm") is None
