"""Issue 23 item 2: a workspace's ``.git`` is untrusted input — the server's own git never runs what it
plants (``core.fsmonitor``, hooks, ``diff.external``, textconv, filter and process drivers, credential
helpers, ``ext::``, a proxy), and a dependency name never becomes a ``git grep`` option.

Every test runs real git on a checkout prepared by :mod:`support.hostile_git`; the control cases run the
same commands with plain git and show each planted program *does* run there, so the assertions can fail.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from kodiai.github.git_env import (
    HARDENING_CONFIG,
    UnsafeGitConfigError,
    git_child_env,
    neutralizing_config,
    parse_config_listing,
)
from kodiai.github.workspace import GitCommandError, Workspace, WorkspaceManager, auth_env, run_git
from kodiai.handler_kit import usage_scan
from kodiai.review import incremental
from kodiai.review import local_branch as local
from support.hostile_git import (
    LOCAL_ROLES,
    HostileRepo,
    make_remote,
    plain_git,
    plant,
    recording_http_server,
)

TOKEN = "ghs_" + "h4rd3n" * 6

Runner = Callable[..., Awaitable[str]]


async def _token(_installation_id: int) -> str:
    return TOKEN


async def _clone(root: Path, name: str) -> tuple[Path, str, HostileRepo]:
    """A fresh server clone of ``root``'s remote (made on first use) under ``root/name``, plants wired in."""
    remote_root = root / "remote"
    remote = make_remote(root) if not remote_root.exists() else None
    manager = WorkspaceManager(_token, root=root / name, git_base_url=remote_root.as_uri())
    ws = await manager.create(1, owner="acme", repo="widgets", ref="main", depth=5)
    repo = HostileRepo(dir=ws.dir, marker=root / name / "marker.log")
    plant(ws.dir, repo.marker)
    del remote
    return ws.dir, remote_root.as_uri(), repo


async def _exercise(checkout: Path, run: Runner) -> dict[str, str]:
    """status, diffs, log -p, show, add (filters), commit (hooks), checkout (hook, smudge), push (hook)."""
    out = {
        "status": await run("status", "--porcelain"),
        "diff": await run("diff", "HEAD~1", "HEAD"),
        "log": await run("log", "-p", "-1"),
        "show": await run("show", "HEAD"),
    }
    (checkout / "a.x").write_text("one\ntwo\nthree\n", encoding="utf-8")
    await run("add", "-A")
    await run("commit", "-q", "--allow-empty", "-m", "change")
    await run("checkout", "-q", "-b", "topic")
    (checkout / "a.x").unlink()
    await run("checkout", "-q", "--", "a.x")
    await run("push", "-q", "origin", "HEAD:refs/heads/topic")
    # last: plain git dies on the broken process filter
    (checkout / "b.y").write_text("one\ntwo\nthree\n", encoding="utf-8")
    await run("add", "b.y")
    return out


def _plain_runner(checkout: Path) -> Runner:
    async def run(*args: str) -> str:
        return plain_git(checkout, *args).stdout

    return run


async def test_control_plain_git_runs_every_planted_program(tmp_path: Path) -> None:
    """The plants are live: git as a user runs it executes every one of them in this checkout."""
    checkout, _base, repo = await _clone(tmp_path, "control")
    await _exercise(checkout, _plain_runner(checkout))
    assert repo.ran() >= LOCAL_ROLES, sorted(LOCAL_ROLES - repo.ran())


async def test_workspace_git_runs_none_of_them_and_still_works(tmp_path: Path) -> None:
    """The server's own ``Workspace.git`` (status, diff, log -p, show, add, commit, checkout, push to the
    bare remote) on the planted checkout: no planted program runs, the diffs are git's own, the push
    lands."""
    checkout, base, repo = await _clone(tmp_path, "hardened")
    ws = Workspace(checkout, base_url=base, token=TOKEN)  # handed over as it is now (plants included)
    out = await _exercise(checkout, ws.git)
    assert repo.ran() == set()
    assert "+two" in out["diff"] and "+two" in out["log"] and "+two" in out["show"]
    pushed = plain_git(checkout, "ls-remote", "origin", "refs/heads/topic").stdout.split()[0]
    assert pushed == (await ws.head_sha())
    assert repo.ran() == set()


async def test_blocking_incremental_local_review_and_usage_scan_run_none_of_them(tmp_path: Path) -> None:
    """``Workspace.git_blocking``, incremental's ``run_git``, the local review's ``git`` and the usage
    scan's ``git grep``: same checkout, no planted program."""
    checkout, base, repo = await _clone(tmp_path, "others")
    ws = Workspace(checkout, base_url=base, token=TOKEN)
    for args in (("status", "--porcelain"), ("diff", "HEAD~1", "HEAD"), ("log", "-p", "-1")):
        code, out = ws.git_blocking(*args)
        assert code == 0, args
        result = incremental.run_git(list(args), str(checkout))
        assert result.returncode == 0 and result.stdout == out, args
        assert local.git(checkout, *args) == out
    assert "+two" in ws.git_blocking("diff", "HEAD~1", "HEAD")[1]
    scan = await usage_scan.analyze_package_usage(str(checkout), "requests", [])
    assert [e.file_path for e in scan.evidence] == ["app.py"]
    assert repo.ran() == set()


async def test_network_plants_credential_helper_proxy_and_ext_transport(tmp_path: Path) -> None:
    """A 401 from the remote asks the credential helpers (plain and URL-scoped); ``http.proxy`` would route
    the token through someone else; ``protocol.ext.allow=always`` would run a command as a "remote".
    Plain git honours all three here; the server's ``run_git`` none."""
    checkout, _base, repo = await _clone(tmp_path, "network")
    with recording_http_server() as (target, target_seen), recording_http_server() as (proxy, proxy_seen):
        config = str(checkout / ".git" / "config")
        plain_git(checkout, "config", "--file", config, "http.proxy", proxy)
        url = f"{target}/acme/widgets.git"
        ext = f"ext::{repo.script('ext')}"

        plain_git(checkout, "ls-remote", url)
        plain_git(checkout, "ls-remote", ext)
        assert {"credential", "ext"} <= repo.ran() and proxy_seen, (repo.ran(), proxy_seen)
        repo.reset()
        proxy_seen.clear()
        target_seen.clear()

        with pytest.raises(GitCommandError, match=r"could not read Username|401"):
            await run_git(["ls-remote", url], cwd=checkout, base_url=target, token=TOKEN)
        with pytest.raises(GitCommandError, match="not allowed"):
            await run_git(["ls-remote", ext], cwd=checkout, base_url=target, token=TOKEN)
    assert repo.ran() == set()
    assert proxy_seen == [] and target_seen, "the request went straight to the remote, not the proxy"


async def test_workspace_refuses_git_after_its_metadata_changed(tmp_path: Path) -> None:
    """A workspace the server cloned refuses every further git command once ``.git/config`` changes
    behind its back (or ``.git`` is replaced by a pointer to another repository): fail closed."""
    remote = make_remote(tmp_path)
    manager = WorkspaceManager(_token, root=tmp_path / "ws", git_base_url=(tmp_path / "remote").as_uri())
    ws = await manager.create(1, owner="acme", repo="widgets", ref="main")
    await ws.git("checkout", "-q", "-B", "pr-head")  # the server's own config writes are fine
    assert (await ws.git("status", "--porcelain")) == ""
    marker = tmp_path / "marker.log"
    plant(ws.dir, marker)
    with pytest.raises(GitCommandError, match="changed outside the server's own git commands"):
        await ws.git("status", "--porcelain")
    assert ws.git_blocking("status", "--porcelain") == (1, "")
    with pytest.raises(GitCommandError, match="changed outside"):
        await ws.push_head("topic")
    assert not marker.exists()

    other = await manager.create(1, owner="acme", repo="widgets", ref="main")
    elsewhere = tmp_path / "elsewhere.git"
    shutil.move(str(other.dir / ".git"), elsewhere)
    (other.dir / ".git").write_text(f"gitdir: {elsewhere}\n", encoding="utf-8")
    with pytest.raises(GitCommandError, match="changed outside"):
        await other.git("status")
    del remote


async def test_core_worktree_is_refused_everywhere(tmp_path: Path) -> None:
    """``core.worktree`` would point ``git add -A`` (then a push) at files outside the checkout: no git the
    server runs accepts a repository that sets it."""
    make_remote(tmp_path)
    manager = WorkspaceManager(_token, root=tmp_path / "ws", git_base_url=(tmp_path / "remote").as_uri())
    ws = await manager.create(1, owner="acme", repo="widgets", ref="main")
    plain_git(ws.dir, "config", "core.worktree", str(tmp_path))
    handed_over = Workspace(ws.dir, base_url=(tmp_path / "remote").as_uri(), token=TOKEN)
    with pytest.raises(GitCommandError, match=r"core\.worktree"):
        await handed_over.git("add", "-A")
    assert handed_over.git_blocking("status")[0] == 1
    assert incremental.run_git(["status"], str(ws.dir)).returncode == 128
    with pytest.raises(local.LocalReviewError, match=r"core\.worktree"):
        local.git(ws.dir, "status")


async def test_dependency_names_are_patterns_never_git_grep_options(tmp_path: Path) -> None:
    """A dependency named ``--output=/tmp/x`` is searched for (and found) as text; one named
    ``-f<file>`` no longer makes git grep read its patterns from a file outside the workspace."""
    remote = make_remote(tmp_path)
    remote.commit({"notes.txt": "run with --output=/tmp/x to export\n"}, "notes")
    manager = WorkspaceManager(_token, root=tmp_path / "ws", git_base_url=(tmp_path / "remote").as_uri())
    ws = await manager.create(1, owner="acme", repo="widgets", ref="main")
    target = tmp_path / "x"

    scan = await usage_scan.analyze_package_usage(str(ws.dir), f"--output={target}", [])
    assert not target.exists()
    scan = await usage_scan.analyze_package_usage(str(ws.dir), "--output=/tmp/x", [])
    assert [e.file_path for e in scan.evidence] == ["notes.txt"]

    outside = tmp_path / "patterns.txt"
    outside.write_text("requests\n", encoding="utf-8")
    old_style = ["git", "-C", str(ws.dir), "grep", "-rn", "--max-count=20", f"-f{outside}"]
    assert "app.py" in (await usage_scan.run_git(old_style)).stdout  # control: an option, read outside
    scan = await usage_scan.analyze_package_usage(str(ws.dir), f"-f{outside}", [])
    assert scan.evidence == [] and scan.search_terms == [f"-f{outside}"]


# ----------------------------------------------------------------------------- the environment itself


def _entries(env: dict[str, str]) -> list[tuple[str, str]]:
    count = int(env["GIT_CONFIG_COUNT"])
    return [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(count)]


def test_one_counter_hardening_first_then_the_callers_entries() -> None:
    """The auth header (through ``auth_env``'s own ``GIT_CONFIG_*``) is appended after the hardening, not
    written over entry 0; an operator's leftover counter or protocol list never gets through."""
    environ = {"PATH": "/usr/bin", "GIT_CONFIG_COUNT": "3", "GIT_ALLOW_PROTOCOL": "ext:file", "HOME": "/h"}
    env = git_child_env(auth_env("https://github.com", TOKEN), environ=environ)
    entries = _entries(env)
    assert entries[: len(HARDENING_CONFIG)] == list(HARDENING_CONFIG)
    assert entries[-1][0] == "http.https://github.com/.extraHeader"
    assert len(entries) == len(HARDENING_CONFIG) + 1
    assert env["GIT_ALLOW_PROTOCOL"] == "https:http" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert dict(entries)["core.fsmonitor"] == "false" and dict(entries)["core.hooksPath"] == "/dev/null"


def test_neutralizing_config_names_each_planted_key() -> None:
    listing = parse_config_listing(
        b"global\x00filter.lfs.clean\x00"  # the operator's own driver is left alone
        b"local\x00filter.Evil.clean\x00local\x00filter.p.process\x00"
        b"local\x00credential.https://github.com.helper\x00"
        b"local\x00http.https://github.com/.proxy\x00local\x00http.sslverify\x00"
        b"worktree\x00remote.origin.proxy\x00local\x00user.name\x00"
    )
    assert dict(neutralizing_config(listing)) == {
        "filter.Evil.clean": "",
        "filter.p.process": "",
        "credential.https://github.com.helper": "",
        "http.https://github.com/.proxy": "",
        "http.sslverify": "true",
        "remote.origin.proxy": "",
    }
    with pytest.raises(UnsafeGitConfigError, match=r"core\.worktree"):
        neutralizing_config([("local", "core.worktree")])
