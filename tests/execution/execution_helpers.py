"""Constants and helpers shared by the execution tests (imported by name: ``from conftest import`` would
pick up whichever directory's conftest was imported first when several test directories run together)."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

from github import Auth, Github
from kodiai.execution.sandbox import AgentSandbox
from support.fake_github import FakeGitHub

FAKE_CLI = Path(__file__).with_name("fake_claude_cli.py")
#: The fake CLI is a Python script of this checkout: it cannot run inside the agent sandbox.
UNSANDBOXED = AgentSandbox(enabled=False)
OWNER, REPO, INSTALLATION, PR = "acme", "widgets", 42, 7
KEY = "kodiai-review-output:v1:inst-42:acme/widgets:pr-7:action-opened:delivery-d-1:head-abc123def456"


class RecordingSleep:
    """An awaitable sleep that records the waits instead of blocking the test."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(fake: FakeGitHub) -> Github:
    """A fresh client per call, as in production; the installation token is minted once per server
    (PyGithub's installation auth caches it until expiry), like the platform's token cache."""
    auth = fake.data.get("_exec_installation_auth")
    if auth is None:
        auth = Auth.AppAuth(fake.app_id, fake.private_key_pem).get_installation_auth(INSTALLATION)
        fake.data["_exec_installation_auth"] = auth
    return Github(base_url=fake.url, auth=auth, retry=None)


def fake_cli(tmp_path: Path) -> Path:
    """A ``claude`` wrapper around ``fake_claude_cli.py``. The test's ``FAKE_CLI_*`` variables are written
    into it: the executor's launcher passes the CLI only its allow-listed variables."""
    names = ("FAKE_CLI_RECORD", "FAKE_CLI_MODE", "FAKE_CLI_TOOL")
    exports = "".join(f"export {n}={shlex.quote(os.environ[n])}\n" for n in names if n in os.environ)
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\n{exports}exec "{sys.executable}" "{FAKE_CLI}" "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script
