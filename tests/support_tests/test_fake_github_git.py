"""Git smart HTTP on the fake GitHub server, driven by the app's own workspace code and real ``git``."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from kodiai.github.app_auth import GitHubApp
from kodiai.github.workspace import GitCommandError, WorkspaceManager, auth_env
from support.fake_github import FakeGitHub
from support.fake_github_git import GitRoutes, install_git_routes
from support.gitrepo import GIT_ENV, BareRepo, git

OWNER, REPO, INSTALLATION, OTHER_INSTALLATION = "acme", "widgets", 1, 2


@dataclass
class GitServer:
    fake: FakeGitHub
    routes: GitRoutes
    bare: BareRepo
    app: GitHubApp
    root: Path

    def manager(self, token: str | None = None) -> WorkspaceManager:
        """A workspace manager as the app builds it: tokens from the fake via the app's own client."""

        async def provider(installation_id: int) -> str:
            if token is not None:
                return token
            return await asyncio.to_thread(self.app.installation_token, installation_id)

        return WorkspaceManager(provider, root=self.root / "ws", git_base_url=self.fake.url)


@pytest.fixture(scope="module")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitServer]:
    root = tmp_path_factory.mktemp("git-http")
    repos = root / "repos"
    repos.mkdir()
    bare = BareRepo(repos, OWNER, REPO)
    bare.commit({"README.md": "hello\n", "src/app.py": "print('hi')\n"}, "initial")
    with FakeGitHub() as fake:
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_installation(OTHER_INSTALLATION, account="other")
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        routes = install_git_routes(fake, repos)
        app = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url)
        yield GitServer(fake, routes, bare, app, root)


@pytest.fixture
def server(_server: GitServer) -> GitServer:
    _server.fake.faults.clear()
    _server.fake.reset_calls()
    _server.routes.clear()
    return _server


async def test_clone_goes_over_http_with_the_installation_token(server: GitServer) -> None:
    ws = await server.manager().create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    try:
        assert (ws.dir / "README.md").read_text() == "hello\n"
        assert await ws.head_sha() == git("rev-parse", "main", cwd=server.bare.path)
        seen = server.routes.requests_for(OWNER, REPO, "git-upload-pack")
        assert [(r.phase, r.status) for r in seen][:2] == [("advertise", 200), ("rpc", 200)]
        assert {r.installation_id for r in seen} == {INSTALLATION}
        assert {r.username for r in seen} == {"x-access-token"}
        token = server.app.installation_token(INSTALLATION)
        expected = "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
        records = server.fake.calls_to("GET", rf"/{OWNER}/{REPO}\.git/info/refs")
        assert records and all(r.headers.get("authorization") == expected for r in records)
        # The token went in a header only: not in the remote URL, not in .git/config.
        assert token not in (ws.dir / ".git" / "config").read_text()
        assert await ws.git("remote", "get-url", "origin") == f"{server.fake.url}/{OWNER}/{REPO}.git\n"
    finally:
        await ws.cleanup()


async def test_fetch_of_a_pull_request_head(server: GitServer) -> None:
    sha = server.bare.add_pull_head(11, {"src/app.py": "print('changed')\n"})
    ws = await server.manager().create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    try:
        await ws.fetch_pull_request_head(11)
        assert await ws.head_sha() == sha
        assert (ws.dir / "src/app.py").read_text() == "print('changed')\n"
        await ws.fetch_base_ref("main")
        assert (await ws.git("rev-parse", "origin/main")).strip() == git(
            "rev-parse", "main", cwd=server.bare.path
        )
    finally:
        await ws.cleanup()


async def test_push_goes_through_receive_pack(server: GitServer) -> None:
    ws = await server.manager().create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    try:
        (ws.dir / "NEW.md").write_text("pushed\n")
        assert await ws.staged_paths() == ["NEW.md"]
        sha = await ws.commit("add NEW.md")
        assert await ws.push_head("kodiai/fix-1") == sha
    finally:
        await ws.cleanup()
    assert git("rev-parse", "refs/heads/kodiai/fix-1", cwd=server.bare.path) == sha
    pushes = server.routes.requests_for(OWNER, REPO, "git-receive-pack")
    assert [(r.phase, r.status, r.installation_id) for r in pushes] == [
        ("advertise", 200, INSTALLATION),
        ("rpc", 200, INSTALLATION),
    ]


@pytest.mark.parametrize("token", ["ghs_not-a-minted-token", ""], ids=["wrong", "missing"])
async def test_bad_or_missing_token_is_refused_and_not_leaked(server: GitServer, token: str) -> None:
    with pytest.raises(GitCommandError) as caught:
        await server.manager(token).create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    assert "ghs_not-a-minted-token" not in str(caught.value)
    assert [(r.status, r.installation_id) for r in server.routes.requests] == [(401, None)]
    assert list((server.root / "ws").iterdir()) == []


def test_unauthenticated_answer_looks_like_github(server: GitServer) -> None:
    response = httpx.get(f"{server.fake.url}/{OWNER}/{REPO}.git/info/refs?service=git-upload-pack")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="GitHub"'


async def test_token_of_another_installation_sees_no_repository(server: GitServer) -> None:
    token = server.app.installation_token(OTHER_INSTALLATION)
    with pytest.raises(GitCommandError, match="not found"):
        await server.manager(token).create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    assert [r.status for r in server.routes.requests] == [404]


async def test_injected_fault_fails_the_clone(server: GitServer) -> None:
    server.fake.fail(500, path=r"\.git/info/refs$")
    with pytest.raises(GitCommandError, match="500"):
        await server.manager().create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    # The fault answered ahead of the route, so http-backend never ran; the next clone works again.
    assert server.routes.requests == []
    ws = await server.manager().create(INSTALLATION, owner=OWNER, repo=REPO, ref="main")
    await ws.cleanup()


def _plain_git(*args: str, cwd: Path, token: str, base_url: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd), **auth_env(base_url, token)}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _local_commits(work: Path, count: int) -> None:
    """``count`` empty commits on top of HEAD in one ``git fast-import`` run (hundreds of git calls otherwise)."""
    head = git("rev-parse", "HEAD", cwd=work)
    now = int(time.time())  # newer than the remote's commits, so negotiation offers them first
    stream = "".join(
        f"commit refs/heads/main\ncommitter T <t@example.com> {now + i} +0000\n"
        f"data {len(f'local {i}')}\nlocal {i}\n" + (f"from {head}\n" if i == 0 else "") + "\n"
        for i in range(count)
    )
    env = {**os.environ, **GIT_ENV, "HOME": str(work)}
    subprocess.run(
        ["git", "fast-import", "--quiet", "--force"], cwd=work, env=env, input=stream, text=True, check=True
    )
    git("reset", "-q", "--hard", "main", cwd=work)


def test_multi_megabyte_clone_and_gzip_negotiation(tmp_path: Path) -> None:
    """A few MB of incompressible content, then a fetch with many ``have`` lines (gzip request body)."""
    repos = tmp_path / "repos"
    bare = BareRepo(repos, OWNER, "big")
    blob = base64.b64encode(os.urandom(3 * 1024 * 1024)).decode()
    bare.commit({"blob.txt": blob}, "big")
    with FakeGitHub() as fake:
        fake.add_installation(INSTALLATION, account=OWNER)
        routes = install_git_routes(fake, repos)
        token = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url).installation_token(1)
        url = f"{fake.url}/{OWNER}/big.git"
        _plain_git("clone", "-q", url, "clone", cwd=tmp_path, token=token, base_url=fake.url)
        assert (tmp_path / "clone" / "blob.txt").read_text() == blob
        # Local commits the server lacks make the next fetch negotiate with many "have" lines.
        work = tmp_path / "clone"
        _local_commits(work, 300)
        bare.commit({"late.txt": "late"}, "late")
        _plain_git("fetch", "-q", "origin", cwd=work, token=token, base_url=fake.url)
        assert git("rev-parse", "origin/main", cwd=work) == git("rev-parse", "main", cwd=bare.path)
        assert any(r.content_encoding == "gzip" for r in routes.requests)
