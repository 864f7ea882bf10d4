"""Settings behind the HTTP hardening (issue 15, item 12): webhook secret length, limits, metrics token."""

from __future__ import annotations

from pathlib import Path

import pytest

from kodiai.server.http_limits import HttpOptions, uvicorn_options
from kodiai.settings import GITHUB_APP_SETTINGS, Settings, SettingsError

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_APP_ID", "1")
    monkeypatch.setenv("GITHUB_PRIVATE_KEY", PEM)
    return monkeypatch


@pytest.mark.parametrize("secret", ["s", "x" * 15])
def test_a_short_webhook_secret_is_refused_at_load(env: pytest.MonkeyPatch, secret: str) -> None:
    env.setenv("GITHUB_WEBHOOK_SECRET", secret)
    with pytest.raises(SettingsError) as info:
        Settings.load(env_file=None)
    assert info.value.problems == [
        "GITHUB_WEBHOOK_SECRET: must be at least 16 characters (generate one with `openssl rand -hex 32` "
        "and set the same value in the GitHub App's webhook settings)"
    ]


def test_a_16_character_secret_loads_and_an_empty_one_still_means_setup_mode(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_WEBHOOK_SECRET", "x" * 16)
    assert Settings.load(env_file=None).github_webhook_secret is not None
    env.setenv("GITHUB_WEBHOOK_SECRET", "")
    settings = Settings.load(env_file=None, require_github_app=False)
    assert settings.missing_github_app_settings() == [GITHUB_APP_SETTINGS[2]]


def test_http_limits_come_from_the_settings(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_WEBHOOK_SECRET", "x" * 32)
    defaults = HttpOptions.from_settings(Settings.load(env_file=None))
    assert defaults == HttpOptions()  # the settings' defaults are the production defaults
    env.setenv("HTTP_MAX_HEADER_BYTES", "8192")
    env.setenv("HTTP_REQUEST_TIMEOUT_SECONDS", "3")
    env.setenv("HTTP_MAX_CONNECTIONS", "50")
    env.setenv("HTTP_KEEP_ALIVE_SECONDS", "2")
    env.setenv("METRICS_TOKEN", "t" * 20)
    options = HttpOptions.from_settings(Settings.load(env_file=None))
    uv = uvicorn_options(options)
    assert uv["h11_max_incomplete_event_size"] == 8192
    assert uv["limit_concurrency"] == 50 and uv["timeout_keep_alive"] == 2
    assert uv["http"].request_timeout == 3
    assert options.metrics_authorized("Bearer " + "t" * 20)
    assert not options.metrics_authorized(None) and not options.metrics_authorized("Bearer t")
    assert HttpOptions().metrics_authorized(None)  # no token: open, as before


def test_an_empty_metrics_token_means_open(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_WEBHOOK_SECRET", "x" * 32)
    env.setenv("METRICS_TOKEN", "  ")
    assert Settings.load(env_file=None).metrics_token is None
