"""P4.2–P4.3 workspaces with real `git` against local bare repositories (and the fake server over HTTP)."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from kodiai.github.branch_names import InvalidBranchNameError
from kodiai.github.workspace import BOT_EMAIL, BOT_NAME, GitCommandError, WorkspaceManager, git_base_url_for
from support.fake_github import FakeGitHub
from support.gitrepo import BareRepo, git

TOKEN = "ghs_" + "s3cr3tT0k3n" * 3


async def token_provider(_installation_id: int) -> str:
    return TOKEN


@pytest.fixture
def origin(tmp_path: Path) -> BareRepo:
    repo = BareRepo(tmp_path / "remote", "acme", "widgets")
    for i in range(3):
        repo.commit({"README.md": f"v{i}\n", f"src/f{i}.py": "x = 1\n"}, f"commit {i}")
    repo.commit({"feature.txt": "f\n"}, "feature work", branch="feature/x")
    return repo


def manager(tmp_path: Path, base: str, **kw: object) -> WorkspaceManager:
    return WorkspaceManager(token_provider, root=tmp_path / "ws", git_base_url=base, **kw)  # type: ignore[arg-type]


async def test_4_2_shallow_clone_at_ref_with_bot_identity(tmp_path: Path, origin: BareRepo) -> None:
    """P4.2 #2–5, #7: temp dir `kodiai-*`, depth, single branch at ref, repo-local bot identity."""
    mgr = manager(tmp_path, (tmp_path / "remote").as_uri())
    ws = await mgr.create(1, owner="acme", repo="widgets", ref="main", depth=2)
    try:
        assert ws.dir.name.startswith("kodiai-") and ws.dir.parent == tmp_path / "ws"
        assert (ws.dir / "README.md").read_text() == "v2\n"
        assert git("rev-list", "--count", "HEAD", cwd=ws.dir) == "2"
        remote_branches = git(
            "for-each-ref", "--format=%(refname)", "refs/remotes/origin/", cwd=ws.dir
        ).split()
        assert [b for b in remote_branches if b != "refs/remotes/origin/HEAD"] == ["refs/remotes/origin/main"]
        assert git("config", "user.name", cwd=ws.dir) == BOT_NAME
        assert git("config", "user.email", cwd=ws.dir) == BOT_EMAIL
        assert TOKEN not in (ws.dir / ".git" / "config").read_text()
    finally:
        await ws.cleanup()
    assert not ws.dir.exists()


async def test_4_2_fork_pr_strategy_base_clone_plus_pull_ref(tmp_path: Path, origin: BareRepo) -> None:
    """Review/mention fork strategy: clone base at base ref, fetch pull/<n>/head into a local branch, fetch base."""
    pr_sha = origin.add_pull_head(42, {"fork-change.txt": "from a fork\n"})
    mgr = manager(tmp_path, (tmp_path / "remote").as_uri())
    ws = await mgr.create(1, owner="acme", repo="widgets", ref="main", depth=50)
    try:
        await ws.fetch_pull_request_head(42, "pr-review")
        assert git("rev-parse", "HEAD", cwd=ws.dir) == pr_sha
        assert git("symbolic-ref", "--short", "HEAD", cwd=ws.dir) == "pr-review"
        assert (ws.dir / "fork-change.txt").exists()
        await ws.fetch_base_ref("feature/x")
        assert git("rev-parse", "--verify", "refs/remotes/origin/feature/x", cwd=ws.dir)
        with pytest.raises(ValueError, match="PR number must be a positive integer"):
            await ws.fetch_pull_request_head(0)
        with pytest.raises(InvalidBranchNameError):
            await ws.fetch_pull_request_head(42, "bad..branch")
    finally:
        await ws.cleanup()


async def test_4_2_01_invalid_ref_rejected_before_anything_is_created(tmp_path: Path) -> None:
    """P4.2 #1: the ref is validated before the temp dir exists or git runs."""
    mgr = manager(tmp_path, "file:///nonexistent")
    with pytest.raises(InvalidBranchNameError):
        await mgr.create(1, owner="acme", repo="widgets", ref="--upload-pack=evil")
    assert not (tmp_path / "ws").exists() or list((tmp_path / "ws").iterdir()) == []


async def test_4_2_06_failed_clone_removes_dir_and_redacts(tmp_path: Path) -> None:
    """P4.2 #6: on failure the dir is removed and the error never carries the token."""
    mgr = manager(tmp_path, (tmp_path / "nowhere").as_uri())
    with pytest.raises(GitCommandError) as err:
        await mgr.create(1, owner="acme", repo="missing", ref="main")
    assert TOKEN not in str(err.value)
    assert list((tmp_path / "ws").iterdir()) == []


def write_git_wrapper(bin_dir: Path, log: Path, leak: bool = False) -> Path:
    """A `git` on PATH that logs its argv (and optionally echoes its auth env to stderr) then runs git."""
    real = shutil.which("git")
    assert real is not None
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "git"
    leak_line = 'echo "leaking $header and token ghs_s3cr3tT0k3n" >&2; exit 1' if leak else ""
    # the auth header is one of the GIT_CONFIG_* entries (after the hardening ones): find it by its key
    find_header = (
        'i=0; header=""; while [ "$i" -lt "${GIT_CONFIG_COUNT:-0}" ]; do '
        'eval "key=\\$GIT_CONFIG_KEY_$i value=\\$GIT_CONFIG_VALUE_$i"; '
        'case "$key" in *.extraHeader) header=$value; '
        f'printf "ENV %s=%s\\n" "$key" "$value" >> "{log}.env";; esac; i=$((i+1)); done\n'
    )
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        f"{find_header}"
        f"{leak_line}\n"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


async def test_token_never_in_argv_or_config_but_sent_as_header_env(tmp_path: Path, origin: BareRepo) -> None:
    """The token reaches git only via GIT_CONFIG_* env (an extraHeader scoped to the base URL), never argv."""
    log = tmp_path / "argv.log"
    wrapper = write_git_wrapper(tmp_path / "bin", log)
    base = (tmp_path / "remote").as_uri()
    mgr = manager(tmp_path, base, git_binary=str(wrapper))
    ws = await mgr.create(1, owner="acme", repo="widgets", ref="main")
    await ws.git("status")
    await ws.cleanup()
    argv = log.read_text()
    assert "clone --quiet --depth=1 --single-branch --branch main --" in argv
    assert TOKEN not in argv and "x-access-token" not in argv
    envs = (Path(f"{log}.env")).read_text().splitlines()
    expected = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert envs and all(
        line == f"ENV http.{base}/.extraHeader=Authorization: Basic {expected}" for line in envs
    )


async def test_error_output_is_redacted_even_if_git_echoes_the_secret(
    tmp_path: Path, origin: BareRepo
) -> None:
    """Every git error is scrubbed of the token and its Basic-auth form before it is raised."""
    wrapper = write_git_wrapper(tmp_path / "bin", tmp_path / "argv.log", leak=True)
    mgr = manager(tmp_path, (tmp_path / "remote").as_uri(), git_binary=str(wrapper))
    with pytest.raises(GitCommandError) as err:
        await mgr.create(1, owner="acme", repo="widgets", ref="main")
    text = str(err.value)
    assert TOKEN not in text and base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode() not in text
    assert "[REDACTED]" in text
    assert list((tmp_path / "ws").iterdir()) == []


async def test_auth_header_sent_over_http_and_only_to_the_base_url(
    tmp_path: Path, fake_github: FakeGitHub
) -> None:
    """Over real HTTP (git smart protocol against the fake server): `Authorization: Basic` arrives, no token in the URL."""
    mgr = manager(tmp_path, fake_github.url)
    with pytest.raises(
        GitCommandError
    ) as err:  # the fake does not serve git, so the clone fails after the request
        await mgr.create(1, owner="acme", repo="widgets", ref="main")
    [call, *_] = [r for r in fake_github.records if r.path.startswith("/acme/widgets.git/")]
    assert call.path == "/acme/widgets.git/info/refs" and "service=git-upload-pack" in call.query
    expected = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert call.headers["authorization"] == f"Basic {expected}"
    assert TOKEN not in str(err.value) and expected not in str(err.value)


def test_4_3_stale_workspaces_removed(tmp_path: Path) -> None:
    """P4.3: `kodiai-*` entries older than 1 h are removed; newer ones and other names are kept."""
    root = tmp_path / "ws"
    root.mkdir()
    old_dir = root / "kodiai-old"
    (old_dir / "sub").mkdir(parents=True)
    (old_dir / "sub" / "f").write_text("x")
    old_file = root / "kodiai-oldfile"
    old_file.write_text("x")
    new_dir = root / "kodiai-new"
    new_dir.mkdir()
    other = root / "other-old"
    other.mkdir()
    two_hours_ago = time.time() - 7200
    for p in (old_dir, old_file, other):
        os.utime(p, (two_hours_ago, two_hours_ago))
    mgr = WorkspaceManager(token_provider, root=root)
    assert mgr.cleanup_stale() == 2
    assert sorted(p.name for p in root.iterdir()) == ["kodiai-new", "other-old"]
    assert mgr.cleanup_stale() == 0


def test_4_3_missing_root_is_zero(tmp_path: Path) -> None:
    assert WorkspaceManager(token_provider, root=tmp_path / "absent").cleanup_stale() == 0


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
    ],
)
def test_git_base_url_for(api: str, web: str) -> None:
    """GITHUB_API_URL → the host repositories are cloned from (GHES: strip /api/v3)."""
    assert git_base_url_for(api) == web


async def test_invalid_owner_or_repo_rejected(tmp_path: Path) -> None:
    mgr = manager(tmp_path, "file:///x")
    for owner, repo in (("-x", "r"), ("o", "../r"), ("o", "a/b"), ("", "r")):
        with pytest.raises(ValueError, match="Invalid repository name"):
            await mgr.create(1, owner=owner, repo=repo, ref="main")


async def test_commit_and_push_with_the_auth_header_path(tmp_path: Path, origin: BareRepo) -> None:
    """Write helpers: stage, commit as the bot, push HEAD to a validated branch; the remote has it."""
    log = tmp_path / "argv.log"
    wrapper = write_git_wrapper(tmp_path / "bin", log)
    mgr = manager(tmp_path, (tmp_path / "remote").as_uri(), git_binary=str(wrapper))
    ws = await mgr.create(1, owner="acme", repo="widgets", ref="main")
    try:
        (ws.dir / "new.txt").write_text("hello\n")
        (ws.dir / "README.md").unlink()
        assert sorted(await ws.staged_paths()) == ["README.md", "new.txt"]
        sha = await ws.commit("kodiai: apply requested changes")
        assert await ws.push_head("kodiai/fix-1") == sha
        assert git("rev-parse", "refs/heads/kodiai/fix-1", cwd=origin.path) == sha
        assert git("log", "-1", "--format=%an <%ae>", sha, cwd=origin.path) == f"{BOT_NAME} <{BOT_EMAIL}>"
        with pytest.raises(InvalidBranchNameError):
            await ws.push_head("bad..ref")
    finally:
        await ws.cleanup()
    assert TOKEN not in log.read_text()


async def test_workspace_context_always_cleans_up(tmp_path: Path, origin: BareRepo) -> None:
    """`async with manager.workspace(...)`: the clone is removed on success and on error."""
    mgr = manager(tmp_path, (tmp_path / "remote").as_uri())
    async with mgr.workspace(1, owner="acme", repo="widgets", ref="main") as ws:
        assert (ws.dir / "README.md").exists()
        kept = ws.dir
    assert not kept.exists()
    with pytest.raises(RuntimeError, match="handler blew up"):
        async with mgr.workspace(1, owner="acme", repo="widgets", ref="main") as ws:
            kept = ws.dir
            raise RuntimeError("handler blew up")
    assert not kept.exists()
    assert list((tmp_path / "ws").iterdir()) == []
