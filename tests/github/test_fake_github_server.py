"""The fake GitHub server itself: real PyGithub and httpx against it over loopback HTTP."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, Request

from github import Auth, GithubException, GithubIntegration
from support.fake_github import FakeGitHub, generate_private_key_pem


def test_pygithub_app_auth_and_installation_token(fake_github: FakeGitHub) -> None:
    gi = GithubIntegration(
        auth=Auth.AppAuth(fake_github.app_id, fake_github.private_key_pem), base_url=fake_github.url
    )
    assert gi.get_app().slug == "kodiai"
    token = gi.get_access_token(1)
    assert token.token.startswith("ghs_")
    repo = gi.get_github_for_installation(1).get_repo("acme/widgets")
    assert repo.full_name == "acme/widgets"
    assert ("GET", "/app", None) in fake_github.calls
    assert fake_github.calls_to("POST", r"/app/installations/1/access_tokens")


def test_wrong_key_is_rejected_with_401(fake_github: FakeGitHub) -> None:
    gi = GithubIntegration(
        auth=Auth.AppAuth(fake_github.app_id, generate_private_key_pem()), base_url=fake_github.url
    )
    with pytest.raises(GithubException) as err:
        gi.get_app()
    assert err.value.status == 401


def test_unminted_token_is_rejected(fake_github: FakeGitHub) -> None:
    r = httpx.get(f"{fake_github.url}/repos/acme/widgets", headers={"Authorization": "token ghs_nope"})
    assert r.status_code == 401
    assert r.json()["message"] == "Bad credentials"


def test_fault_injection_is_fifo_and_path_filtered(fake_github: FakeGitHub) -> None:
    fake_github.fail(502, path=r"^/rate_limit$")
    fake_github.fail_secondary_rate_limit(retry_after=7, path=r"^/rate_limit$")
    assert httpx.get(f"{fake_github.url}/__ping").status_code == 200  # not matched by the filter
    first = httpx.get(f"{fake_github.url}/rate_limit")
    second = httpx.get(f"{fake_github.url}/rate_limit")
    third = httpx.get(f"{fake_github.url}/rate_limit")
    assert (first.status_code, second.status_code, third.status_code) == (502, 403, 200)
    assert second.headers["retry-after"] == "7"
    assert [r.faulted for r in fake_github.records] == [False, True, True, False]
    assert [r.status for r in fake_github.records] == [200, 502, 403, 200]


def test_register_router_after_start_and_records_json(fake_github: FakeGitHub) -> None:
    router = APIRouter()

    @router.post("/repos/{owner}/{repo}/echo", status_code=201)
    async def echo(owner: str, repo: str, request: Request) -> dict[str, object]:
        fake_github.require_installation(request)
        return {"owner": owner, "got": await request.json()}

    fake_github.register(router)
    token = (
        GithubIntegration(
            auth=Auth.AppAuth(fake_github.app_id, fake_github.private_key_pem), base_url=fake_github.url
        )
        .get_access_token(1)
        .token
    )
    r = httpx.post(
        f"{fake_github.url}/repos/acme/widgets/echo",
        json={"a": 1},
        headers={"Authorization": f"token {token}"},
    )
    assert r.status_code == 201 and r.json() == {"owner": "acme", "got": {"a": 1}}
    assert ("POST", "/repos/acme/widgets/echo", {"a": 1}) in fake_github.calls


def test_register_callable_gets_the_fake(fake_github: FakeGitHub) -> None:
    seen: list[FakeGitHub] = []
    fake_github.register(seen.append)
    assert seen == [fake_github]


def test_manifest_conversion_is_single_use(fake_github: FakeGitHub) -> None:
    creds = fake_github.add_manifest_code("abc123")
    first = httpx.post(f"{fake_github.url}/app-manifests/abc123/conversions")
    assert first.status_code == 201 and first.json()["pem"] == creds["pem"]
    assert httpx.post(f"{fake_github.url}/app-manifests/abc123/conversions").status_code == 404
