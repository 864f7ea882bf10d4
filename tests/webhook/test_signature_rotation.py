"""Webhook secret rotation: ``GITHUB_WEBHOOK_SECRET_PREVIOUS`` also verifies during the window, says
which secret matched (``kodiai_webhook_signature_matches_total``), and stops verifying once removed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import structlog

from kodiai.server.runtime import Runtime, ServerConfig
from kodiai.settings import Settings, SettingsError
from kodiai.webhook.signature import matching_secret, sign, verify_signature
from support.fake_github import FakeGitHub
from support.live_server import (
    LiveServer,
    Recorder,
    make_github,
    recording_handler,
    signed_headers,
    start_kodiai,
)

OLD = "old-webhook-secret-0123456789"
NEW = "new-webhook-secret-9876543210"
OTHER = "not-our-secret-000000000000"
BODY = json.dumps(
    {"action": "opened", "installation": {"id": 7}, "sender": {"login": "u", "type": "User"}}
).encode()


def test_matching_secret_names_the_secret_that_signed() -> None:
    both = (NEW.encode(), OLD.encode())
    assert matching_secret(both, BODY, sign(NEW, BODY)) == 0
    assert matching_secret(both, BODY, sign(OLD, BODY)) == 1
    assert matching_secret(both, BODY, sign(OTHER, BODY)) is None
    assert matching_secret(both, BODY, None) is None
    assert matching_secret(both, b"", sign(OLD, b"")) is None
    assert matching_secret(both, BODY, sign(OLD, BODY).upper()) is None
    assert matching_secret((NEW,), BODY, sign(OLD, BODY)) is None  # without the previous secret
    assert verify_signature(NEW, BODY, sign(NEW, BODY)) and not verify_signature(NEW, BODY, sign(OLD, BODY))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_BASE64", "GITHUB_WEBHOOK_SECRET",
                 "GITHUB_WEBHOOK_SECRET_PREVIOUS", "GITHUB_API_URL", "JOBS_DB_PATH", "WORKSPACE_ROOT"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def load(tmp_path: Path, fake: FakeGitHub, **values: str) -> Settings:
    """Settings from a ``.env`` as an operator writes it (the previous secret read like any setting)."""
    key = tmp_path / "key.pem"
    key.write_text(fake.private_key_pem)
    lines = {
        "GITHUB_APP_ID": str(fake.app_id),
        "GITHUB_PRIVATE_KEY": str(key),
        "GITHUB_API_URL": fake.url,
        "JOBS_DB_PATH": str(tmp_path / "jobs.db"),
        "WORKSPACE_ROOT": str(tmp_path / "ws"),
        **values,
    }
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return Settings.load(env_file=env_file)


def test_previous_secret_must_differ_and_be_long_enough(
    tmp_path: Path, fake: FakeGitHub, env: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SettingsError, match="GITHUB_WEBHOOK_SECRET_PREVIOUS: must differ"):
        load(tmp_path, fake, GITHUB_WEBHOOK_SECRET=NEW, GITHUB_WEBHOOK_SECRET_PREVIOUS=NEW)
    with pytest.raises(SettingsError, match="GITHUB_WEBHOOK_SECRET_PREVIOUS: must be at least 16"):
        load(tmp_path, fake, GITHUB_WEBHOOK_SECRET=NEW, GITHUB_WEBHOOK_SECRET_PREVIOUS="short")
    blank = load(tmp_path, fake, GITHUB_WEBHOOK_SECRET=NEW, GITHUB_WEBHOOK_SECRET_PREVIOUS="")
    assert blank.github_webhook_secret_previous is None


Serve = Callable[[ServerConfig], tuple[str, Recorder]]


@pytest.fixture
def serve(fake: FakeGitHub, env: pytest.MonkeyPatch) -> Iterator[Serve]:
    """Start the real app over ``config`` (handlers: one recorder on issues.opened); stopped at the end."""
    started: list[LiveServer] = []

    def start(config: ServerConfig) -> tuple[str, Recorder]:
        recorder = Recorder()

        def register(rt: Runtime) -> None:
            rt.router.register("issues.opened", recording_handler(rt, recorder, "ok"), name="ok")

        server, _ = start_kodiai(config, make_github(fake), register)
        started.append(server)
        return server.url, recorder

    yield start
    for server in started:
        server.stop()


def post(url: str, secret: str) -> int:
    """One ``issues.opened`` delivery signed with ``secret`` (a body of its own: same bodies are deduped)."""
    body = BODY.replace(b"{", b'{"issue": {"title": "%s"}, ' % uuid.uuid4().hex.encode(), 1)
    headers = signed_headers(body, event="issues", secret=secret)
    return httpx.post(f"{url}/webhooks/github", content=body, headers=headers).status_code


def test_rotation_window_over_http(tmp_path: Path, fake: FakeGitHub, serve: Serve) -> None:
    """Old-signed and new-signed deliveries are both accepted while the previous secret is set, anything
    else is 401; the start-up says (once, without either value) that a previous secret is active."""
    settings = load(tmp_path, fake, GITHUB_WEBHOOK_SECRET=NEW, GITHUB_WEBHOOK_SECRET_PREVIOUS=OLD)
    with structlog.testing.capture_logs() as logs:
        url, recorder = serve(ServerConfig.from_settings(settings))
        assert post(url, OLD) == 200
        assert post(url, NEW) == 200
        assert post(url, OTHER) == 401
        assert recorder.wait_count(2)
    metrics = httpx.get(f"{url}/metrics").text
    assert 'kodiai_webhook_signature_matches_total{secret="current"} 1.0' in metrics
    assert 'kodiai_webhook_signature_matches_total{secret="previous"} 1.0' in metrics
    rotation = [e for e in logs if str(e["event"]).startswith("Webhook secret rotation")]
    assert len(rotation) == 1 and "GITHUB_WEBHOOK_SECRET_PREVIOUS" in str(rotation[0]["event"])
    assert [
        e["deliveryId"] for e in logs if e["event"] == "Webhook signed with GITHUB_WEBHOOK_SECRET_PREVIOUS"
    ]
    assert not any(OLD in repr(e) or NEW in repr(e) for e in logs)


def test_removing_the_previous_secret_ends_the_window(tmp_path: Path, fake: FakeGitHub, serve: Serve) -> None:
    settings = load(tmp_path, fake, GITHUB_WEBHOOK_SECRET=NEW)
    with structlog.testing.capture_logs() as logs:
        url, _ = serve(ServerConfig.from_settings(settings))
        assert post(url, OLD) == 401
        assert post(url, NEW) == 200
    assert not any(str(e["event"]).startswith("Webhook secret rotation") for e in logs)
    metrics = httpx.get(f"{url}/metrics").text
    assert 'kodiai_webhook_signature_matches_total{secret="previous"} 0.0' in metrics
