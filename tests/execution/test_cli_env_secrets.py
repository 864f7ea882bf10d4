"""Issue 15 item 12, issue 23: the Claude Code CLI subprocess (a fake ``claude`` started by the real SDK
transport through the run's launcher) gets none of the app's secrets — including settings added after
the original four, such as ``METRICS_TOKEN`` — nor any other variable off the allow-list, while the
model credentials are passed explicitly, ``PATH`` is kept and ``HOME`` is the run's own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from execution_helpers import INSTALLATION, OWNER, PR, REPO, UNSANDBOXED, fake_cli, make_client
from pydantic import SecretStr

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials, app_secret_names, cli_env
from kodiai.execution.types import ExecutionContext
from support.fake_github import FakeGitHub

API_KEY = "sk-ant-api03-" + "e" * 40
SECRETS = {
    "GITHUB_WEBHOOK_SECRET": "sentinel-webhook-secret",
    "GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----sentinel",
    "VOYAGE_API_KEY": "pa-sentinel-voyage",
    "METRICS_TOKEN": "sentinel-metrics-token",
}


async def test_cli_subprocess_gets_no_app_secret(
    tmp_path: Path, fake_gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    monkeypatch.setenv("FAKE_CLI_MODE", "result")
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    script = fake_cli(tmp_path)
    executor = ClaudeAgentExecutor(
        installation_client=lambda _i: make_client(fake_gh),
        credentials=ModelCredentials(anthropic_api_key=SecretStr(API_KEY)),
        cli_path=script,
        sandbox=UNSANDBOXED,
    )
    context = ExecutionContext(
        workspace_dir=workspace,
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        event_type="pull_request.opened",
        pr_number=PR,
        prompt="Review.",
    )
    result = await executor.execute(context)
    assert result.conclusion == "success"
    env = json.loads(record.read_text(encoding="utf-8"))["env"]
    for name in SECRETS:
        assert env[name] is None, name
    assert env["ANTHROPIC_API_KEY"] == API_KEY
    assert env["PATH"] == os.environ["PATH"]
    assert env["HOME"] != os.environ["HOME"] and Path(env["HOME"]).name == "home"
    assert not Path(env["HOME"]).exists(), "the run's HOME is removed afterwards"


def test_every_secret_setting_is_blanked_and_explicit_credentials_win() -> None:
    assert {"GITHUB_WEBHOOK_SECRET", "GITHUB_PRIVATE_KEY", "METRICS_TOKEN", "ANTHROPIC_AUTH_TOKEN"} <= set(
        app_secret_names()
    )
    environ = {**SECRETS, "ANTHROPIC_AUTH_TOKEN": "old", "AWS_PROFILE": "bedrock"}
    credentials = ModelCredentials(
        anthropic_api_key=SecretStr(API_KEY), endpoint={"ANTHROPIC_AUTH_TOKEN": SecretStr("gateway")}
    )
    env = cli_env(credentials, environ)
    assert all(env[name] == "" for name in SECRETS)
    assert env["ANTHROPIC_API_KEY"] == API_KEY and env["ANTHROPIC_AUTH_TOKEN"] == "gateway"
    assert "AWS_PROFILE" not in env  # inherited unchanged: Bedrock/Vertex credentials stay available
