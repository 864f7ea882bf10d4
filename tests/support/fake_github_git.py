"""Git smart HTTP for the fake GitHub server: real ``git http-backend`` (CGI) behind GitHub-style auth.

``install_git_routes(fake, repos_root)`` serves the bare repositories under
``<repos_root>/<owner>/<name>.git`` (the layout of :class:`support.gitrepo.BareRepo`) at::

    GET  /{owner}/{name}.git/info/refs?service=git-upload-pack|git-receive-pack
    POST /{owner}/{name}.git/git-upload-pack        (clone, fetch)
    POST /{owner}/{name}.git/git-receive-pack       (push)

so with ``GITHUB_API_URL=<fake.url>`` the app clones ``<fake.url>/acme/widgets.git`` from the same
server that answers its REST calls (``git_base_url_for`` keeps a non-github.com API URL as the git
base). Like GitHub, every request must carry ``Authorization: Basic base64("x-access-token:<token>")``
with a token the fake minted (unexpired); anything else gets ``401`` with
``WWW-Authenticate: Basic realm="GitHub"``. A token of an installation that does not own a repository
the fake knows (``fake.add_repo(..., installation_id=...)``) gets ``404 Repository not found``, as on
GitHub; repositories present on disk but never registered with ``add_repo`` are open to any valid token.

Each request is recorded as a :class:`GitRequest` (``routes.requests``) so a test can assert the clone
really went over HTTP with the installation's token. Faults queued with ``fake.fail(500, path=r"\\.git/")``
apply, since the fake's fault middleware runs ahead of every route.

Bodies: the fake's middleware buffers each request (so ``CONTENT_LENGTH`` is exact); the response is
streamed from the CGI's stdout. ``Content-Encoding: gzip`` request bodies (git compresses large
upload-pack negotiations) are passed through as ``HTTP_CONTENT_ENCODING``; http-backend inflates them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from support.fake_github import FakeGitHub

SERVICES = ("git-upload-pack", "git-receive-pack")
_CHUNK = 64 * 1024
_UNAUTHORIZED_HEADERS = {"WWW-Authenticate": 'Basic realm="GitHub"'}


@dataclass
class GitRequest:
    """One smart-HTTP request as the fake saw it (``installation_id`` is None when auth failed)."""

    method: str
    owner: str
    repo: str
    service: str  # git-upload-pack or git-receive-pack
    phase: str  # "advertise" (GET info/refs) or "rpc" (POST)
    installation_id: int | None
    username: str | None
    content_encoding: str | None
    status: int = 0


class GitRoutes:
    """Handle returned by :func:`install_git_routes`: the recorded git requests and a few helpers."""

    def __init__(self, fake: FakeGitHub, repos_root: Path, git_binary: str = "git") -> None:
        self.fake = fake
        self.repos_root = Path(repos_root)
        self.git_binary = git_binary
        self.backend = _find_http_backend(git_binary)
        fake.data.setdefault("git_requests", [])

    @property
    def requests(self) -> list[GitRequest]:
        with self.fake.lock:
            return list(self.fake.data["git_requests"])

    def requests_for(self, owner: str, repo: str, service: str | None = None) -> list[GitRequest]:
        """Recorded requests for one repository (optionally one service)."""
        return [
            r
            for r in self.requests
            if r.owner.lower() == owner.lower()
            and r.repo.lower() == repo.lower()
            and (service is None or r.service == service)
        ]

    def clear(self) -> None:
        with self.fake.lock:
            self.fake.data["git_requests"].clear()

    # ----------------------------------------------------------------- auth
    def authenticate(self, request: Request) -> tuple[int | None, str | None]:
        """``(installation_id, username)`` of a valid ``x-access-token`` Basic header, else ``(None, user)``."""
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic" or not value:
            return None, None
        try:
            username, _, token = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None, None
        if username != "x-access-token":
            return None, username
        with self.fake.lock:
            entry = self.fake.tokens.get(token)
        if entry is None or entry[1] <= datetime.now(UTC):
            return None, username
        return entry[0], username

    def _owned_elsewhere(self, owner: str, repo: str, installation_id: int) -> bool:
        with self.fake.lock:
            known = self.fake.repos.get(f"{owner}/{repo}".lower())
        owner_installation = known.get("_installation_id") if known else None
        return owner_installation is not None and int(owner_installation) != installation_id

    # ----------------------------------------------------------------- CGI
    def cgi_env(self, request: Request, path_info: str, body_length: int) -> dict[str, str]:
        """The CGI/1.1 variables http-backend reads, plus the git configuration it needs."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            # http-backend must not read the developer's ~/.gitconfig or the system one.
            "HOME": str(self.repos_root),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROJECT_ROOT": str(self.repos_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.receivepack",
            "GIT_CONFIG_VALUE_0": "true",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": request.method,
            "PATH_INFO": path_info,
            "QUERY_STRING": request.url.query,
            "REMOTE_ADDR": request.client.host if request.client else "127.0.0.1",
            "REMOTE_USER": "x-access-token",
            "CONTENT_LENGTH": str(body_length),
        }
        if content_type := request.headers.get("content-type"):
            env["CONTENT_TYPE"] = content_type
        for name, value in request.headers.items():
            if name in {"authorization", "content-type", "content-length"}:
                continue
            env["HTTP_" + name.upper().replace("-", "_")] = value
        return env

    async def serve(self, request: Request, owner: str, repo: str, tail: str) -> Response:
        """Authenticate, record, then hand the request to ``git http-backend`` and stream its answer."""
        if tail == "info/refs":
            service, phase = request.query_params.get("service", ""), "advertise"
        else:
            service, phase = tail, "rpc"
        installation_id, username = self.authenticate(request)
        record = GitRequest(
            method=request.method,
            owner=owner,
            repo=repo,
            service=service,
            phase=phase,
            installation_id=installation_id,
            username=username,
            content_encoding=request.headers.get("content-encoding"),
        )
        with self.fake.lock:
            self.fake.data["git_requests"].append(record)

        if service not in SERVICES:
            record.status = 403
            return Response("Service not enabled\n", status_code=403, media_type="text/plain")
        if installation_id is None:
            record.status = 401
            return Response(
                "Invalid username or password.\n",
                status_code=401,
                headers=_UNAUTHORIZED_HEADERS,
                media_type="text/plain",
            )
        path = self.repos_root / owner / f"{repo}.git"
        if self._owned_elsewhere(owner, repo, installation_id) or not path.is_dir():
            record.status = 404
            return Response("Repository not found.\n", status_code=404, media_type="text/plain")

        body = await request.body()
        env = self.cgi_env(request, f"/{owner}/{repo}.git/{tail}", len(body))
        proc = await asyncio.create_subprocess_exec(
            self.backend,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stderr_task = asyncio.ensure_future(proc.stderr.read())
        feeder = asyncio.ensure_future(_feed(proc.stdin, body))
        status, headers, first = await _read_cgi_headers(proc.stdout)
        record.status = status

        async def stream() -> AsyncIterator[bytes]:
            assert proc.stdout is not None
            finished = False
            try:
                if first:
                    yield first
                while chunk := await proc.stdout.read(_CHUNK):
                    yield chunk
                finished = True
            finally:
                # A client that hung up mid-pack must not leave http-backend blocked on its stdout.
                if not finished and proc.returncode is None:
                    proc.kill()
                with anyio.CancelScope(shield=True):
                    await proc.wait()
                    await feeder
                    await stderr_task

        return StreamingResponse(stream(), status_code=status, headers=headers)


async def _feed(stdin: asyncio.StreamWriter, body: bytes) -> None:
    """Write the request body and close stdin; a backend that exits early is not an error here.

    ``info/refs`` has no body and http-backend may exit before we touch its stdin: with uvloop, writing
    to (or closing) that finished pipe raises ``RuntimeError`` ("the handler is closed"), not
    ``BrokenPipeError``, so both count as "the backend did not want the body".
    """
    try:
        if body:
            stdin.write(body)
            await stdin.drain()
    except (BrokenPipeError, ConnectionResetError, RuntimeError):
        pass
    finally:
        with contextlib.suppress(RuntimeError):
            stdin.close()


async def _read_cgi_headers(stdout: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """Parse the CGI header block (``Status:`` plus headers); return the rest already read."""
    buffer = b""
    while True:
        for sep in (b"\r\n\r\n", b"\n\n"):
            head, found, rest = buffer.partition(sep)
            if found:
                return (*_parse_cgi_head(head), rest)
        chunk = await stdout.read(_CHUNK)
        if not chunk:
            # The backend died before finishing its headers: a server error, like a broken CGI.
            return 500, {"Content-Type": "text/plain"}, buffer or b"git http-backend failed\n"
        buffer += chunk


def _parse_cgi_head(head: bytes) -> tuple[int, dict[str, str]]:
    status = 200
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "status":
            status = int(value.strip().split()[0])
        elif name.strip():
            headers[name.strip()] = value.strip()
    return status, headers


def _find_http_backend(git_binary: str) -> str:
    """``$(git --exec-path)/git-http-backend``; found once per install (it is not on ``PATH``)."""
    exec_path = subprocess.run(
        [git_binary, "--exec-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    backend = Path(exec_path) / "git-http-backend"
    if not backend.exists():
        raise RuntimeError(f"git-http-backend not found under {exec_path}")
    return str(backend)


def install_git_routes(fake: FakeGitHub, repos_root: Path, *, git_binary: str = "git") -> GitRoutes:
    """Serve ``<repos_root>/<owner>/<name>.git`` over smart HTTP on ``fake``; return the handle."""
    routes = GitRoutes(fake, repos_root, git_binary)
    router = APIRouter()

    @router.get("/{owner}/{repo}.git/info/refs")
    async def advertise(owner: str, repo: str, request: Request) -> Response:
        return await routes.serve(request, owner, repo, "info/refs")

    @router.post("/{owner}/{repo}.git/{service}")
    async def rpc(owner: str, repo: str, service: str, request: Request) -> Response:
        return await routes.serve(request, owner, repo, service)

    fake.register(router)
    return routes
