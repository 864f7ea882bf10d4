"""Issue 15 item 12: git children get an allow-listed environment — never the webhook secret, the App
private key or an API key — but keep what git needs (PATH, HOME, locale) and what an operator may set to
reach GitHub (proxy and CA variables).

A ``git`` wrapper first on ``PATH`` records the environment of every git process the app starts (a real
clone, fetch-free status runs, ``git grep`` for usage analysis, the incremental-diff runner) and then
execs the real git.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from kodiai.github.git_env import HARDENING_CONFIG, git_child_env
from kodiai.github.workspace import WorkspaceManager
from kodiai.handler_kit import usage_scan
from kodiai.review import incremental
from support.gitrepo import BareRepo

TOKEN = "ghs_" + "t0k3n" * 7
SECRETS = {
    "GITHUB_WEBHOOK_SECRET": "sentinel-webhook-secret-5d41402a",
    "GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----sentinel-private-key",
    "GITHUB_PRIVATE_KEY_BASE64": "c2VudGluZWwtYmFzZTY0LWtleQ==",
    "ANTHROPIC_API_KEY": "sk-ant-api03-sentinel-anthropic",
    "VOYAGE_API_KEY": "pa-sentinel-voyage",
    "METRICS_TOKEN": "sentinel-metrics-token",
    "SOME_UNRELATED_VARIABLE": "sentinel-unrelated",
}
NEEDED = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HTTPS_PROXY": "http://proxy.invalid:3128",
    "https_proxy": "http://proxy.invalid:3128",
    "NO_PROXY": "*",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    "GIT_SSL_CAINFO": "/etc/ssl/certs/ca-certificates.crt",
}


async def token_provider(_installation_id: int) -> str:
    return TOKEN


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A recording ``git`` first on PATH; the secrets and the operator's variables in ``os.environ``."""
    real_git = shutil.which("git")
    assert real_git
    log_dir = tmp_path / "git-envs"
    log_dir.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(
        f'#!/bin/sh\n/usr/bin/env > "{log_dir}/env.$$"\nexec "{real_git}" "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(real_git).parent}:/usr/bin:/bin")
    for name, value in {**SECRETS, **NEEDED}.items():
        monkeypatch.setenv(name, value)
    return log_dir


def environments(log_dir: Path) -> list[dict[str, str]]:
    envs = []
    for dump in sorted(log_dir.iterdir()):
        lines = dump.read_text(encoding="utf-8").splitlines()
        envs.append(dict(line.split("=", 1) for line in lines if "=" in line))
    return envs


def config_entries(env: dict[str, str]) -> list[tuple[str, str]]:
    count = int(env.get("GIT_CONFIG_COUNT", "0"))
    return [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(count)]


def assert_minimal(env: dict[str, str]) -> None:
    dump = repr(env)
    for name, value in SECRETS.items():
        assert name not in env and value not in dump, name
    for name, value in NEEDED.items():
        assert env.get(name) == value, name
    assert env.get("HOME") and env.get("PATH", "").split(":")[0].endswith("/bin")


async def test_workspace_git_children_get_a_minimal_environment(tmp_path: Path, recorded: Path) -> None:
    """Clone, async and blocking git runs of a workspace: secrets absent; proxy, CA, locale kept; the
    app's own auth header (GIT_CONFIG_*) present."""
    remote = tmp_path / "remote"
    repo = BareRepo(remote, "acme", "widgets")  # built with the recording git: its runs are dropped below
    repo.commit({"README.md": "hi\n", "src/app.py": "import requests\n"}, "init")
    for dump in recorded.iterdir():
        dump.unlink()

    mgr = WorkspaceManager(token_provider, root=tmp_path / "ws", git_base_url=remote.as_uri())
    async with mgr.workspace(1, owner="acme", repo="widgets", ref="main") as ws:
        await ws.git("status", "--short")
        assert ws.git_blocking("rev-parse", "HEAD")[0] == 0
        envs = environments(recorded)
        # clone, status, rev-parse — and before each of the last two, the listing of the repository's
        # configuration keys (no token: it only reads files)
        assert len(envs) == 5
        for env in envs:
            assert_minimal(env)
            assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_CONFIG_NOSYSTEM"] == "1"
            assert config_entries(env)[: len(HARDENING_CONFIG)] == list(HARDENING_CONFIG)
        headers = [e for e in envs if config_entries(e)[-1][0].endswith(".extraHeader")]
        assert len(headers) == 3

        for dump in recorded.iterdir():
            dump.unlink()
        grep = await usage_scan.run_git(usage_scan.build_grep_command(str(ws.dir), ["requests"]))
        assert grep.exit_code == 0 and "src/app.py" in grep.stdout
        assert incremental.run_git(["rev-parse", "HEAD"], str(ws.dir)).returncode == 0
        envs = environments(recorded)
        assert len(envs) == 3  # git grep (usage analysis), incremental diff (after its config listing)
        for env in envs:
            assert_minimal(env)
            assert config_entries(env) == list(HARDENING_CONFIG)  # the hardening, no credentials


def test_allow_list_keeps_operator_variables_and_app_overrides_win() -> None:
    environ = {
        **SECRETS,
        **NEEDED,
        "PATH": "/usr/bin",
        "HOME": "/home/kodiai",
        "LC_MESSAGES": "C",
        "GIT_CONFIG_COUNT": "5",  # an operator's leftover must not merge with the app's header config
        "GIT_DIR": "/elsewhere/.git",  # would redirect every command away from the workspace
    }
    env = git_child_env({"GIT_TERMINAL_PROMPT": "0"}, environ=environ)
    assert_minimal(env)
    assert env["LC_MESSAGES"] == "C" and env["HOME"] == "/home/kodiai"
    assert config_entries(env) == list(HARDENING_CONFIG) and "GIT_DIR" not in env
    assert config_entries(git_child_env(environ={"GIT_CONFIG_COUNT": "5"})) == list(HARDENING_CONFIG)
