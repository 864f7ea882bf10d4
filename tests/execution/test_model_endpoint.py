"""The model endpoint settings (a gateway, Bedrock, Vertex) reach the Claude Code CLI's environment, and
only it: read from ``.env`` like every setting, never put into the process environment or printed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kodiai.execution.options import cli_env
from kodiai.server.composition import model_credentials
from kodiai.settings import Settings

NAMES = ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "AWS_REGION")


def test_endpoint_from_env_file_reaches_the_cli_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(
        "ANTHROPIC_BASE_URL=http://gateway.internal:4000\nANTHROPIC_AUTH_TOKEN=sk-litellm-secret-token\n"
        "CLAUDE_CODE_USE_BEDROCK=\n",
        encoding="utf-8",
    )
    settings = Settings.load(env_file=env_file, require_github_app=False)
    credentials = model_credentials(settings)
    env = cli_env(credentials, environ={})
    assert env["ANTHROPIC_BASE_URL"] == "http://gateway.internal:4000"
    assert env["ANTHROPIC_AUTH_TOKEN"] == "sk-litellm-secret-token"
    assert "CLAUDE_CODE_USE_BEDROCK" not in env  # blank means unset
    assert "ANTHROPIC_BASE_URL" not in os.environ and "ANTHROPIC_AUTH_TOKEN" not in os.environ
    assert "sk-litellm-secret-token" not in repr(credentials) and "sk-litellm" not in repr(settings)


def test_no_endpoint_settings_add_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    settings = Settings.load(env_file=tmp_path / "absent.env", require_github_app=False)
    env = cli_env(model_credentials(settings), environ={})
    assert not set(NAMES) & set(env)
