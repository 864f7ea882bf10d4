"""Setup mode guides the operator: a warning when GitHub cannot deliver webhooks to the public URL, the
mention handle after the registration, and the setup link (over the real app on loopback)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import structlog

from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
from kodiai.server.setup_mode import listen_host, public_url_problem, setup_link, setup_link_message
from kodiai.settings import Settings
from support.fake_github import FakeGitHub
from support.live_server import LiveServer

MISSING = ["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]
WARNING = "GitHub cannot deliver webhooks to"
AUTO_SUBMIT = "getElementById('manifest').submit()"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:3000", "loopback"),
        ("http://[::1]:3000", "loopback"),
        ("http://localhost:3000", "local name"),
        ("https://kodiai.local", "local name"),
        ("https://ci.corp.internal/", "local name"),
        ("http://myserver:3000", "without a domain"),
        ("http://10.1.2.3", "private"),
        ("http://172.16.0.9", "private"),
        ("http://192.168.1.20:3000", "private"),
        ("http://100.100.1.1", "carrier-grade NAT"),
        ("http://169.254.10.10", "link-local"),
        ("http://[fd12:3456::1]", "private"),
        ("http://[fe80::1]", "link-local"),
        ("http://[::ffff:192.168.0.1]", "private"),
        ("http://0.0.0.0:3000", "unspecified"),
    ],
)
def test_public_url_problem_names_unreachable_addresses(url: str, reason: str) -> None:
    problem = public_url_problem(url)
    assert problem is not None and reason in problem


@pytest.mark.parametrize(
    "url",
    [
        "https://kodiai.example.com",
        "http://203.0.113.7.nip.io:3000",
        "https://8.8.8.8",
        "http://[2606:4700::1]",
    ],
)
def test_public_url_problem_accepts_public_addresses(url: str) -> None:
    assert public_url_problem(url) is None


def test_setup_link_is_a_whole_url_for_the_bound_interface() -> None:
    assert setup_link("127.0.0.1", 3000, "ab12") == "http://127.0.0.1:3000/?token=ab12"
    assert setup_link("0.0.0.0", 3000, "ab12") == "http://127.0.0.1:3000/?token=ab12"
    assert setup_link("::", 8080, "ab12") == "http://[::1]:8080/?token=ab12"
    assert setup_link("192.168.1.5", 3000, "ab12") == "http://192.168.1.5:3000/?token=ab12"


def test_setup_mode_listens_on_loopback_unless_the_operator_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--host`` wins, then ``HOST`` (environment or ``.env``); only when neither is given does setup mode
    fall back to 127.0.0.1 (a normal start keeps 0.0.0.0)."""
    monkeypatch.setenv("HOST", " 0.0.0.0 ")
    assert Settings.load(env_file=None, require_github_app=False).host == "0.0.0.0"
    monkeypatch.setenv("HOST", "")
    assert Settings.load(env_file=None, require_github_app=False).host is None
    assert listen_host(None, None, setup=True) == "127.0.0.1"
    assert listen_host(None, None, setup=False) == "0.0.0.0"
    assert listen_host(None, "0.0.0.0", setup=True) == "0.0.0.0"
    assert listen_host("::", "0.0.0.0", setup=True) == "::"
    assert "from another machine" in setup_link_message("0.0.0.0", 3000, "ab12")
    assert "from another machine" not in setup_link_message("127.0.0.1", 3000, "ab12")


@pytest.fixture
def setup_server(tmp_path: Path, fake: FakeGitHub) -> Iterator[tuple[LiveServer, Runtime]]:
    env_file = tmp_path / ".env"
    config = ServerConfig(missing_settings=MISSING, github_api_url=fake.url, env_file=str(env_file))
    runtime = build_runtime(config)
    with LiveServer(create_app(runtime)) as server:
        yield server, runtime


def start(server: LiveServer, runtime: Runtime, public_url: str) -> httpx.Response:
    r = httpx.post(f"{server.url}/setup/start", data={"token": runtime.setup_token, "public_url": public_url})
    assert r.status_code == 200, r.text
    return r


def test_private_public_url_is_warned_about_but_allowed(setup_server: tuple[LiveServer, Runtime]) -> None:
    """The page opened at 127.0.0.1 pre-fills a URL GitHub cannot reach: the index says so; submitting it
    shows the warning (and logs it) instead of leaving for GitHub at once, and can still go on."""
    server, runtime = setup_server
    index = httpx.get(f"{server.url}/", params={"token": runtime.setup_token}).text
    assert f"value='{server.url}'" in index and WARNING in index and "loopback" in index
    assert "tunnel" in index and "@&lt;app slug&gt;" in index
    with structlog.testing.capture_logs() as logs:
        page = start(server, runtime, "http://192.168.1.20:3000").text
    assert WARNING in page and "private network address" in page and AUTO_SUBMIT not in page
    assert "name='manifest'" in page and "Continue on GitHub with this URL" in page  # still allowed
    manifest = html.unescape(re.search(r"name='manifest' value='([^']+)'", page).group(1))  # type: ignore[union-attr]
    assert '"url": "http://192.168.1.20:3000/webhooks/github"' in manifest
    warned = [e for e in logs if str(e["event"]).startswith("Setup: GitHub cannot deliver webhooks")]
    assert len(warned) == 1 and warned[0]["publicUrl"] == "http://192.168.1.20:3000"
    assert "private network address" in str(warned[0]["reason"])
    assert not any(runtime.setup_token in repr(e) for e in logs)


def test_public_url_goes_straight_to_github(setup_server: tuple[LiveServer, Runtime]) -> None:
    server, runtime = setup_server
    with structlog.testing.capture_logs() as logs:
        page = start(server, runtime, "https://kodiai.example.com").text
    assert WARNING not in page and AUTO_SUBMIT in page
    assert not [e for e in logs if str(e["event"]).startswith("Setup: GitHub cannot deliver")]


def test_done_page_and_log_name_the_mention_handle(
    setup_server: tuple[LiveServer, Runtime], fake: FakeGitHub
) -> None:
    """The handle is ``@`` + the slug GitHub returned, not ``@kodiai``; ``@claude`` and its switch are named."""
    server, runtime = setup_server
    form = re.search(r"action='([^']+)'", start(server, runtime, "https://k.example").text)
    assert form is not None
    action = html.unescape(form.group(1))
    fake.add_manifest_code("code-handle", slug="kodiai-acme")
    with structlog.testing.capture_logs() as logs:
        done = httpx.get(
            f"{server.url}/setup/callback", params={"code": "code-handle", "state": action.split("state=")[1]}
        )
    assert done.status_code == 200, done.text
    assert "<code>@kodiai-acme</code>" in done.text
    assert "@claude" in done.text and "mention.acceptClaudeAlias: false" in done.text
    registered = [e for e in logs if str(e["event"]).startswith("GitHub App registered")]
    assert len(registered) == 1 and registered[0]["mentionHandle"] == "@kodiai-acme"
    assert "@kodiai-acme" in str(registered[0]["event"])
