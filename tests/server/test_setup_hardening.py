"""Issue 15 item 9: setup mode over real HTTP — the `.env` it writes cannot be made to carry another
setting, a second registration never overwrites the credentials already there, and the setup token is
spent by a successful registration.

The manifest conversion comes from the fake GitHub, so its values are whatever a test makes them.
"""

from __future__ import annotations

import html
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from dotenv import dotenv_values

from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
from kodiai.server.setup_mode import AlreadyRegisteredError, SetupError, registration_refusal, write_env
from kodiai.settings import DEFAULT_GITHUB_API_URL, Settings
from support.fake_github import FakeGitHub
from support.live_server import LiveServer

MISSING = ["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]
ORIGINAL = "LOG_LEVEL=info\n# operator's comment\nGITHUB_APP_ID=\n"


@pytest.fixture
def server(
    tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[LiveServer, Runtime, Path]]:
    for name in ("GITHUB_API_URL", "GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(ORIGINAL, encoding="utf-8")
    config = ServerConfig(missing_settings=MISSING, github_api_url=fake.url, env_file=str(env_file))
    runtime = build_runtime(config)
    with LiveServer(create_app(runtime)) as live:
        yield live, runtime, env_file


def start(live: LiveServer, token: str) -> httpx.Response:
    return httpx.post(f"{live.url}/setup/start", data={"token": token, "public_url": "https://k.example"})


def state_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    action = html.unescape(re.search(r"action='([^']+)'", response.text).group(1))  # type: ignore[union-attr]
    return action.split("state=")[1]


def register(
    live: LiveServer, runtime: Runtime, fake: FakeGitHub, code: str, **values: object
) -> httpx.Response:
    """One whole registration: start with the setup token, GitHub's redirect back with ``code``."""
    state = state_of(start(live, runtime.setup_token))
    fake.add_manifest_code(code, **values)
    return httpx.get(f"{live.url}/setup/callback", params={"code": code, "state": state})


def settings_from(env_file: Path) -> Settings:
    return Settings.load(env_file=env_file, require_github_app=False)


def test_newline_in_a_manifest_value_cannot_inject_a_setting(
    server: tuple[LiveServer, Runtime, Path], fake: FakeGitHub
) -> None:
    live, runtime, env_file = server
    hostile = "s3cret\nGITHUB_API_URL=http://evil.example\nLOG_LEVEL=trace"
    r = register(live, runtime, fake, "code-newline", webhook_secret=hostile)
    assert r.status_code != 200
    assert env_file.read_text(encoding="utf-8") == ORIGINAL  # nothing written at all
    settings = settings_from(env_file)
    assert settings.github_api_url == DEFAULT_GITHUB_API_URL and settings.log_level == "info"
    assert settings.github_app_id in (None, "")


@pytest.mark.parametrize(
    "value",
    ["x${GITHUB_APP_ID}", "a\rb", "a\x00b", "a\u2028b", "tab\there"],
    ids=["interpolation", "carriage-return", "nul", "line-separator", "tab"],
)
def test_values_that_could_change_another_setting_are_refused(
    server: tuple[LiveServer, Runtime, Path], fake: FakeGitHub, value: str
) -> None:
    live, runtime, env_file = server
    r = register(live, runtime, fake, "code-refused", client_id=value)
    assert r.status_code != 200
    assert env_file.read_text(encoding="utf-8") == ORIGINAL


def test_quotes_backslashes_and_hashes_read_back_exactly(
    server: tuple[LiveServer, Runtime, Path], fake: FakeGitHub
) -> None:
    """Every value is quoted with python-dotenv's rules; the settings loader reads back the exact bytes."""
    live, runtime, env_file = server
    secret = "it's a \\'tricky\\\\ one' #not-a-comment = x"
    client_id = 'Iv1.\'\\"quoted"'
    r = register(live, runtime, fake, "code-quotes", webhook_secret=secret, client_id=client_id)
    assert r.status_code == 200, r.text
    settings = settings_from(env_file)
    assert settings.github_webhook_secret is not None
    assert settings.github_webhook_secret.get_secret_value() == secret
    assert settings.github_app_id == str(fake.app_id)
    values = dotenv_values(env_file)
    assert values["GITHUB_CLIENT_ID"] == client_id and values["LOG_LEVEL"] == "info"
    text = env_file.read_text(encoding="utf-8")
    assert "# operator's comment\n" in text and text.count("GITHUB_APP_ID=") == 1  # placeholder replaced
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600


def test_second_registration_never_overwrites_the_credentials(
    server: tuple[LiveServer, Runtime, Path], fake: FakeGitHub
) -> None:
    live, runtime, env_file = server
    first = register(live, runtime, fake, "code-first", webhook_secret="first-secret")
    assert first.status_code == 200, first.text
    written = env_file.read_text(encoding="utf-8")
    token = runtime.setup_token or "spent"
    response = start(live, token)
    if response.status_code == 200:  # until app.py refuses at the start, the flow reaches write_env
        fake.add_manifest_code("code-second", id=999, webhook_secret="second-secret")
        second = httpx.get(
            f"{live.url}/setup/callback", params={"code": "code-second", "state": state_of(response)}
        )
        assert second.status_code != 200
    assert env_file.read_text(encoding="utf-8") == written
    assert dotenv_values(env_file)["GITHUB_WEBHOOK_SECRET"] == "first-secret"


def test_setup_token_is_single_use(server: tuple[LiveServer, Runtime, Path], fake: FakeGitHub) -> None:
    live, runtime, _ = server
    token = runtime.setup_token
    assert register(live, runtime, fake, "code-once").status_code == 200
    assert start(live, token).status_code == 403


def test_registration_refused_with_a_clear_message_when_env_has_credentials(
    server: tuple[LiveServer, Runtime, Path],
) -> None:
    live, runtime, env_file = server
    env_file.write_text("GITHUB_APP_ID=123\n", encoding="utf-8")
    r = start(live, runtime.setup_token)
    assert r.status_code == 409 and "already holds GitHub App credentials (GITHUB_APP_ID)" in r.text


def test_write_env_refusal_and_symlinked_env(tmp_path: Path, fake: FakeGitHub) -> None:
    """``write_env`` itself: refuses a file with credentials; follows an operator's symbolic link."""
    conversion = fake.add_manifest_code("unused")
    real = tmp_path / "etc" / "kodiai.env"
    real.parent.mkdir()
    real.write_text("PORT=3000\n", encoding="utf-8")
    link = tmp_path / ".env"
    link.symlink_to(real)
    assert registration_refusal(link) is None
    write_env(link, conversion)
    assert link.is_symlink() and dotenv_values(real)["GITHUB_APP_ID"] == str(conversion["id"])
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    message = registration_refusal(link)
    assert message is not None and "GITHUB_APP_ID" in message and conversion["webhook_secret"] not in message
    with pytest.raises(AlreadyRegisteredError):
        write_env(link, conversion)
    with pytest.raises(SetupError, match="numeric app id"):
        write_env(tmp_path / "new.env", {**conversion, "id": "1\nX=1"})
    assert not (tmp_path / "new.env").exists()
