"""A fake GitHub REST server for tests: a real FastAPI app served by uvicorn on 127.0.0.1.

The real PyGithub client (and httpx, and ``git`` where relevant) talk to it over HTTP. It keeps
in-memory state, records every request in :attr:`FakeGitHub.calls`, and can inject faults (403,
429, 5xx, primary/secondary rate limits with their headers) ahead of the real routes.

Core endpoints (what the platform layer uses):

- ``GET /app`` (app JWT, RS256, verified against the fake's own key pair)
- ``GET /app/installations``, ``GET /app/installations/{id}``, ``GET /repos/{o}/{r}/installation``
- ``POST /app/installations/{id}/access_tokens`` (mints ``ghs_…`` tokens with ``token_ttl``)
- ``GET /installation/repositories``, ``GET /repos/{o}/{r}`` (installation token)
- ``GET /rate_limit``
- ``POST /app-manifests/{code}/conversions`` (the App Manifest flow)

Extending it (e.g. ``tests/support/fake_github_pr.py``)::

    def install_pr_routes(fake: FakeGitHub) -> None:
        router = APIRouter()

        @router.post("/repos/{owner}/{repo}/issues/{number}/comments", status_code=201)
        async def create_comment(owner: str, repo: str, number: int, request: Request) -> dict:
            fake.require_installation(request)          # 401 unless a minted token is presented
            body = await request.json()
            comments = fake.data.setdefault("comments", [])
            comment = {"id": fake.next_id(), "body": body["body"], ...}
            comments.append(comment)
            return comment

        fake.register(router)

    fake.register(install_pr_routes)   # a callable receiving the fake, or an APIRouter directly

Routes may be registered before or after :meth:`FakeGitHub.start`. Everything in ``fake.data`` is
free-form state for extensions; guard multi-step updates with ``fake.lock``.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from support.loopback import LoopbackServer

Call = tuple[str, str, Any]


def generate_private_key_pem() -> str:
    """A fresh 2048-bit RSA private key in PKCS#1 PEM (the form GitHub hands out)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


@dataclass
class Fault:
    """One queued fault: returned instead of the real route for the next matching request."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    method: str | None = None
    path: str | None = None  # a regular expression searched in the request path

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method.upper() != method.upper():
            return False
        return not (self.path and not re.search(self.path, path))


@dataclass
class CallRecord:
    """A request as the fake saw it (``calls`` holds the (method, path, json) triple of each)."""

    method: str
    path: str
    json: Any
    headers: dict[str, str]
    query: str
    status: int = 0
    faulted: bool = False


class _RecordAndFault:
    """ASGI middleware: buffer the body, record the call, serve a queued fault if one matches."""

    def __init__(self, app: ASGIApp, fake: FakeGitHub) -> None:
        self.app = app
        self.fake = fake

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        record = CallRecord(
            method=scope["method"],
            path=scope["path"],
            json=parsed,
            headers=headers,
            query=scope.get("query_string", b"").decode("latin-1"),
        )
        self.fake._record(record)

        fault = self.fake._take_fault(record.method, record.path)
        if fault is not None:
            record.faulted = True
            record.status = fault.status
            body = fault.body if fault.body is not None else {"message": f"Injected fault {fault.status}"}
            response = JSONResponse(body, status_code=fault.status, headers=fault.headers)
            await response(scope, receive, send)
            return

        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            # Later calls wait for the real disconnect: a streaming response listens for it while it
            # streams, and an immediate "disconnect" would cut the response short.
            return await receive()

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
            await send(message)

        await self.app(scope, replay, capture)


class FakeGitHub:
    """A fake GitHub REST API on loopback. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        *,
        app_id: int = 4242,
        app_slug: str = "kodiai",
        private_key_pem: str | None = None,
        token_ttl: timedelta = timedelta(hours=1),
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.private_key_pem = private_key_pem or generate_private_key_pem()
        self._public_key = serialization.load_pem_private_key(
            self.private_key_pem.encode(), password=None
        ).public_key()
        self.token_ttl = token_ttl
        self.lock = threading.RLock()
        self.calls: list[Call] = []
        self.records: list[CallRecord] = []
        self.faults: list[Fault] = []
        self.installations: dict[int, dict[str, Any]] = {}
        self.repos: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, tuple[int, datetime]] = {}
        self.manifest_codes: dict[str, dict[str, Any]] = {}
        self.data: dict[str, Any] = {}
        self._ids = itertools.count(1000)
        self.app = FastAPI(title="fake-github")
        self._install_core_routes()
        self._server: LoopbackServer | None = None
        self.port = 0

    # ----------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        """Base URL to pass as ``GITHUB_API_URL`` / PyGithub ``base_url``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeGitHub:
        self._server = LoopbackServer(
            _RecordAndFault(self.app, self), lifespan="off", name="fake GitHub server"
        )
        self.port = self._server.start(timeout=10).port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(timeout=10)
        self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- extension
    def register(self, extension: APIRouter | Callable[[FakeGitHub], None]) -> None:
        """Add routes: an ``APIRouter`` is included; a callable is called with this fake."""
        if isinstance(extension, APIRouter):
            self.app.include_router(extension)
        else:
            extension(self)

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    # ----------------------------------------------------------------- state helpers
    def add_installation(self, installation_id: int, account: str = "acme", **extra: Any) -> dict[str, Any]:
        inst = {
            "id": installation_id,
            "account": {"login": account, "id": self.next_id(), "type": "Organization"},
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_type": "Organization",
            "permissions": {"contents": "write", "issues": "write", "pull_requests": "write"},
            "events": ["issue_comment", "pull_request"],
            **extra,
        }
        with self.lock:
            self.installations[installation_id] = inst
        return inst

    def add_repo(
        self, owner: str, name: str, *, installation_id: int | None = None, **extra: Any
    ) -> dict[str, Any]:
        full = f"{owner}/{name}"
        repo = {
            "id": self.next_id(),
            "name": name,
            "full_name": full,
            "owner": {"login": owner, "id": self.next_id(), "type": "Organization"},
            "private": False,
            "default_branch": "main",
            "url": f"{self.url}/repos/{full}",
            "clone_url": f"https://github.com/{full}.git",
            "html_url": f"https://github.com/{full}",
            "_installation_id": installation_id,
            **extra,
        }
        with self.lock:
            self.repos[full.lower()] = repo
        return repo

    def add_manifest_code(self, code: str, **overrides: Any) -> dict[str, Any]:
        """Make ``POST /app-manifests/{code}/conversions`` succeed once with these credentials."""
        conversion = {
            "id": self.app_id,
            "slug": self.app_slug,
            "name": "Kodiai",
            "client_id": "Iv1.fakeclientid",
            "client_secret": "fake-client-secret-" + secrets.token_hex(8),
            "webhook_secret": "fake-webhook-secret-" + secrets.token_hex(8),
            "pem": self.private_key_pem,
            "html_url": f"https://github.com/apps/{self.app_slug}",
            "owner": {"login": "acme", "type": "Organization"},
            **overrides,
        }
        with self.lock:
            self.manifest_codes[code] = conversion
        return conversion

    # ----------------------------------------------------------------- faults
    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Queue ``times`` responses with ``status`` for requests matching method/path (regex)."""
        with self.lock:
            for _ in range(times):
                self.faults.append(Fault(status, dict(headers or {}), body, method, path))

    def fail_primary_rate_limit(
        self, *, times: int = 1, reset_in: float = 1.0, status: int = 403, path: str | None = None
    ) -> None:
        """Primary rate limit: ``X-RateLimit-Remaining: 0`` and ``X-RateLimit-Reset`` (epoch s)."""
        reset = int(time.time() + reset_in)
        self.fail(
            status,
            times=times,
            path=path,
            headers={
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Reset": str(reset),
            },
            body={
                "message": f"API rate limit exceeded for installation ID {self.app_id}.",
                "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
            },
        )

    def fail_secondary_rate_limit(
        self, *, times: int = 1, retry_after: int = 1, status: int = 403, path: str | None = None
    ) -> None:
        """Secondary rate limit: ``Retry-After`` seconds."""
        self.fail(
            status,
            times=times,
            path=path,
            headers={"Retry-After": str(retry_after)},
            body={
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
            },
        )

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for i, fault in enumerate(self.faults):
                if fault.matches(method, path):
                    return self.faults.pop(i)
        return None

    def _record(self, record: CallRecord) -> None:
        with self.lock:
            self.records.append(record)
            self.calls.append((record.method, record.path, record.json))

    def calls_to(self, method: str, path_regex: str) -> list[CallRecord]:
        """Recorded requests with this method whose path fully matches ``path_regex``."""
        with self.lock:
            return [r for r in self.records if r.method == method and re.fullmatch(path_regex, r.path)]

    def reset_calls(self) -> None:
        with self.lock:
            self.calls.clear()
            self.records.clear()

    # ----------------------------------------------------------------- auth helpers
    def require_app_jwt(self, request: Request) -> dict[str, Any]:
        """Verify the RS256 app JWT in ``Authorization: Bearer``; 401 like GitHub otherwise."""
        token = _bearer(request)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._public_key,  # type: ignore[arg-type]
                algorithms=["RS256"],
                options={"require": ["exp", "iat", "iss"]},
                leeway=60,
            )
        except jwt.PyJWTError as exc:
            raise HTTPException(401, detail=f"A JSON web token could not be decoded: {exc}") from exc
        if str(claims.get("iss")) != str(self.app_id):
            raise HTTPException(401, detail="Integration not found")
        return claims

    def require_installation(self, request: Request) -> int:
        """The installation id of a minted, unexpired token in ``Authorization``; 401 otherwise."""
        token = _bearer(request)
        with self.lock:
            entry = self.tokens.get(token)
        if entry is None or entry[1] <= datetime.now(UTC):
            raise HTTPException(401, detail="Bad credentials")
        return entry[0]

    # ----------------------------------------------------------------- routes
    def _install_core_routes(self) -> None:
        app = self.app

        @app.exception_handler(HTTPException)
        async def _github_error(_request: Request, exc: HTTPException) -> JSONResponse:
            return JSONResponse(
                {"message": exc.detail, "documentation_url": "https://docs.github.com/rest"},
                status_code=exc.status_code,
            )

        @app.get("/app")
        async def get_app(request: Request) -> dict[str, Any]:
            self.require_app_jwt(request)
            return {
                "id": self.app_id,
                "slug": self.app_slug,
                "name": self.app_slug.capitalize(),
                "owner": {"login": "acme", "type": "Organization"},
                "permissions": {"contents": "write", "issues": "write", "pull_requests": "write"},
                "events": ["issue_comment", "pull_request"],
            }

        @app.get("/app/installations")
        async def list_installations(request: Request) -> list[dict[str, Any]]:
            self.require_app_jwt(request)
            with self.lock:
                return list(self.installations.values())

        @app.get("/app/installations/{installation_id}")
        async def get_installation(installation_id: int, request: Request) -> dict[str, Any]:
            self.require_app_jwt(request)
            return self._installation(installation_id)

        @app.get("/repos/{owner}/{repo}/installation")
        async def repo_installation(owner: str, repo: str, request: Request) -> dict[str, Any]:
            self.require_app_jwt(request)
            found = self._repo(owner, repo)
            if found.get("_installation_id") is None:
                raise HTTPException(404, detail="Not Found")
            return self._installation(int(found["_installation_id"]))

        @app.post("/app/installations/{installation_id}/access_tokens", status_code=201)
        async def access_token(installation_id: int, request: Request) -> dict[str, Any]:
            self.require_app_jwt(request)
            self._installation(installation_id)
            token = "ghs_" + secrets.token_hex(18)
            expires = datetime.now(UTC) + self.token_ttl
            with self.lock:
                self.tokens[token] = (installation_id, expires)
            return {
                "token": token,
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"contents": "write", "issues": "write", "pull_requests": "write"},
                "repository_selection": "all",
            }

        @app.get("/installation/repositories")
        async def installation_repos(request: Request) -> dict[str, Any]:
            installation_id = self.require_installation(request)
            with self.lock:
                repos = [
                    _public(r) for r in self.repos.values() if r.get("_installation_id") == installation_id
                ]
            return {"total_count": len(repos), "repositories": repos}

        @app.get("/repos/{owner}/{repo}")
        async def get_repo(owner: str, repo: str, request: Request) -> dict[str, Any]:
            self.require_installation(request)
            return _public(self._repo(owner, repo))

        @app.get("/rate_limit")
        async def rate_limit() -> dict[str, Any]:
            reset = int(time.time()) + 3600
            core = {"limit": 5000, "remaining": 4999, "reset": reset, "used": 1}
            return {"resources": {"core": core}, "rate": core}

        @app.post("/app-manifests/{code}/conversions", status_code=201)
        async def manifest_conversion(code: str) -> dict[str, Any]:
            with self.lock:
                conversion = self.manifest_codes.pop(code, None)
            if conversion is None:
                raise HTTPException(404, detail="Not Found")
            return conversion

        @app.api_route("/__ping", methods=["GET", "HEAD"])
        async def ping() -> Response:
            return Response("pong", media_type="text/plain")

    def _installation(self, installation_id: int) -> dict[str, Any]:
        with self.lock:
            inst = self.installations.get(installation_id)
        if inst is None:
            raise HTTPException(404, detail="Not Found")
        return inst

    def _repo(self, owner: str, repo: str) -> dict[str, Any]:
        with self.lock:
            found = self.repos.get(f"{owner}/{repo}".lower())
        if found is None:
            raise HTTPException(404, detail="Not Found")
        return found


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() not in {"bearer", "token"} or not value:
        raise HTTPException(401, detail="Requires authentication")
    return value.strip()


def _public(repo: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in repo.items() if not k.startswith("_")}
