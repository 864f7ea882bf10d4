"""Setup mode: App settings missing → the server still runs and offers the App Manifest flow."""

from __future__ import annotations

import base64
import html
import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from dotenv import dotenv_values

from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
from kodiai.server.setup_mode import EVENTS, PERMISSIONS
from support.fake_github import FakeGitHub
from support.live_server import LiveServer

MISSING = ["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]


@pytest.fixture
def setup_server(tmp_path: Path, fake: FakeGitHub) -> Iterator[tuple[LiveServer, Runtime, Path]]:
    env_file = tmp_path / ".env"
    env_file.write_text("LOG_LEVEL=info\n")
    config = ServerConfig(missing_settings=MISSING, github_api_url=fake.url, env_file=str(env_file))
    runtime = build_runtime(config)
    TOKEN["value"] = runtime.setup_token
    with LiveServer(create_app(runtime)) as server:
        yield server, runtime, env_file


def test_setup_mode_health_ok_readiness_503_webhooks_503(setup_server) -> None:  # type: ignore[no-untyped-def]
    server, runtime, _ = setup_server
    assert runtime.setup_mode
    assert httpx.get(f"{server.url}/health").json() == {"status": "ok"}
    r = httpx.get(f"{server.url}/readiness")
    assert r.status_code == 503 and r.json()["status"] == "not ready"
    assert httpx.post(f"{server.url}/webhooks/github", content=b"{}").status_code == 503


def test_setup_index_lists_missing_settings(setup_server) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = setup_server
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for name in MISSING:
        assert f"<code>{name}</code>" in page.text
    assert "action='/setup/start'" in page.text


TOKEN: dict[str, str] = {}


def manifest_form(server: LiveServer, **form: str) -> tuple[str, dict[str, object]]:
    r = httpx.post(f"{server.url}/setup/start", data={"token": TOKEN["value"], **form})
    assert r.status_code == 200, r.text
    action = html.unescape(re.search(r"action='([^']+)'", r.text).group(1))  # type: ignore[union-attr]
    manifest = json.loads(html.unescape(re.search(r"name='manifest' value='([^']+)'", r.text).group(1)))  # type: ignore[union-attr]
    return action, manifest


def test_manifest_prefilled_with_permissions_and_events(setup_server, fake: FakeGitHub) -> None:  # type: ignore[no-untyped-def]
    """The manifest carries the events (P3.3) and permissions (cutover runbook) the bot needs."""
    server, _, _ = setup_server
    action, manifest = manifest_form(server, public_url="https://kodiai.example.com/", org="")
    assert action.startswith(f"{fake.url}/settings/apps/new?state=")
    assert manifest["default_permissions"] == PERMISSIONS
    assert manifest["default_events"] == EVENTS
    assert set(EVENTS) == {
        "issue_comment",
        "issues",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
    }
    assert manifest["hook_attributes"] == {
        "url": "https://kodiai.example.com/webhooks/github",
        "active": True,
    }
    assert manifest["redirect_url"] == "https://kodiai.example.com/setup/callback"
    org_action, _ = manifest_form(server, public_url="https://k.example", org="acme")
    assert f"{fake.url}/organizations/acme/settings/apps/new?state=" in org_action
    bad = httpx.post(
        f"{server.url}/setup/start",
        data={"token": TOKEN["value"], "public_url": "https://k", "org": "../evil"},
    )
    assert bad.status_code == 400


def test_callback_exchanges_code_and_writes_env(setup_server, fake: FakeGitHub) -> None:  # type: ignore[no-untyped-def]
    """GitHub's redirect → POST /app-manifests/{code}/conversions → credentials in .env (0600), none on the page."""
    server, _, env_file = setup_server
    action, _ = manifest_form(server, public_url="https://k.example")
    state = action.split("state=")[1]
    creds = fake.add_manifest_code("code123")
    r = httpx.get(f"{server.url}/setup/callback", params={"code": "code123", "state": state})
    assert r.status_code == 200, r.text
    assert fake.calls_to("POST", "/app-manifests/code123/conversions")
    values = dotenv_values(env_file)
    assert values["LOG_LEVEL"] == "info"  # other lines kept
    assert values["GITHUB_APP_ID"] == str(creds["id"])
    assert values["GITHUB_WEBHOOK_SECRET"] == creds["webhook_secret"]
    assert base64.b64decode(values["GITHUB_PRIVATE_KEY"] or "").decode() == creds["pem"]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert creds["webhook_secret"] not in r.text and "PRIVATE KEY" not in r.text
    # the state is single-use
    again = httpx.get(f"{server.url}/setup/callback", params={"code": "code123", "state": state})
    assert again.status_code == 400


def test_written_env_loads_as_valid_settings(setup_server, fake: FakeGitHub, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The .env the callback writes is accepted by Settings (base64 private key form) and authenticates."""
    from kodiai.github.app_auth import GitHubApp
    from kodiai.settings import Settings

    server, _, env_file = setup_server
    action, _ = manifest_form(server, public_url="https://k.example")
    fake.add_manifest_code("code-ok")
    httpx.get(f"{server.url}/setup/callback", params={"code": "code-ok", "state": action.split("state=")[1]})
    settings = Settings.load(env_file=env_file, require_github_app=True)
    config = ServerConfig.from_settings(settings)
    assert config.private_key is not None and config.app_id == str(fake.app_id)
    assert (
        GitHubApp(config.app_id, config.private_key.get_secret_value(), base_url=fake.url).initialize()
        == "kodiai"
    )


def test_callback_rejects_unknown_state_and_bad_code(setup_server) -> None:  # type: ignore[no-untyped-def]
    server, _, env_file = setup_server
    assert (
        httpx.get(f"{server.url}/setup/callback", params={"code": "x", "state": "forged"}).status_code == 400
    )
    action, _ = manifest_form(server, public_url="https://k.example")
    r = httpx.get(
        f"{server.url}/setup/callback", params={"code": "unknown-code", "state": action.split("state=")[1]}
    )
    assert r.status_code == 502 and "HTTP 404" in r.text
    assert "GITHUB_APP_ID" not in env_file.read_text()


def test_setup_flow_requires_the_logged_setup_token(setup_server) -> None:  # type: ignore[no-untyped-def]
    """Only whoever can read the server log can start the registration (no hijack of an exposed server)."""
    server, runtime, env_file = setup_server
    assert len(runtime.setup_token) >= 16
    for form in ({"public_url": "https://k.example"}, {"public_url": "https://k.example", "token": "guess"}):
        r = httpx.post(f"{server.url}/setup/start", data=form)
        assert r.status_code == 403 and "manifest" not in r.text
    assert runtime.setup_state == set()
    page = httpx.get(f"{server.url}/", params={"token": runtime.setup_token}).text
    assert f"value='{runtime.setup_token}'" in page  # the link from the log pre-fills it
    assert runtime.setup_token not in httpx.get(f"{server.url}/", params={"token": "wrong"}).text
    assert "GITHUB_APP_ID" not in env_file.read_text()
