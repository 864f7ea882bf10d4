"""Mounting the dashboard on the web app: its routes, its security headers, or — with no sign-in
configured — nothing at all (``/dashboard`` then answers 404) and one log line saying how to enable it."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kodiai.dashboard.auth import TooManyGuesses
from kodiai.dashboard.options import ENABLE_HINT, DashboardOptions
from kodiai.dashboard.routes import CSP, PREFIX, build_router
from kodiai.dashboard.session import CookieSigner, SessionStore
from kodiai.dashboard.sources import open_sources
from kodiai.dashboard.state import DashboardState, template_environment
from kodiai.log import Logger
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.opening import open_migrated

SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class DashboardHeaders:
    """Adds the security headers to every response under ``/dashboard`` (pages, exports, errors). An
    exception before the response started is answered here, 500 with the headers (the app's outer error
    boundary, which logs it, would answer without them)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return

        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {name for name, _ in SECURITY_HEADERS}
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                if path.startswith(PREFIX + "/static/"):
                    headers += [h for h in SECURITY_HEADERS if h[0] != b"cache-control"]
                else:
                    headers += SECURITY_HEADERS
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        except Exception:
            if not started:
                await PlainTextResponse("Internal Server Error", 500)(scope, receive, with_headers)
            raise  # logged by the app's error boundary, which sees the response has started


async def _too_many_guesses(_request: Request, exc: Exception) -> Response:
    wait = exc.retry_after if isinstance(exc, TooManyGuesses) else 60
    return PlainTextResponse(
        "Too Many Requests: too many wrong operator tokens; try again later", 429, {"Retry-After": str(wait)}
    )


def mount(
    app: Any,
    options: DashboardOptions,
    *,
    telemetry: str,
    knowledge: KnowledgeStore,
    knowledge_target: str,
    jobs: str | None,
    memory: Any | None,
    pg_journal: Any | None,
    log: Logger,
    embeddings: Any | None = None,
) -> DashboardState | None:
    """Add the dashboard to ``app`` when sign-in is configured; returns its state (closed by the caller)."""
    if not options.enabled:
        log.info(ENABLE_HINT)
        return None
    key = options.signing_key()
    knowledge_db = open_migrated(knowledge_target, "knowledge", lock="dashboard-sessions")
    state = DashboardState(
        options=options,
        signer=CookieSigner(
            key, options.session_seconds, options.token.get_secret_value() if options.token else None
        ),
        sessions=SessionStore(knowledge_db, key, options.session_seconds),
        sources=open_sources(telemetry, knowledge_target, jobs),
        templates=template_environment(),
        http=httpx.AsyncClient(follow_redirects=False),
        knowledge=knowledge,
        memory=memory,
        jobs_target=jobs or "",
        pg_journal=pg_journal,
        log=log,
        knowledge_db=knowledge_db,
        embeddings=embeddings if memory is not None else None,
    )
    app.include_router(build_router(state))
    app.add_exception_handler(TooManyGuesses, _too_many_guesses)
    app.add_middleware(DashboardHeaders)
    sign_in = ["GitHub" if options.github_sign_in else None, "operator token" if options.token else None]
    log.info("Dashboard enabled at /dashboard", sign_in=", ".join(s for s in sign_in if s))
    return state
