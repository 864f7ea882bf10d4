"""The HTTP app factory (behaviour P2): webhook ingress, health, readiness, metrics, setup pages.

``create_app(runtime)`` is the composition root's last step: the runtime (built by
:func:`kodiai.server.runtime.build_runtime`) already holds every store and client. Routing is strict
as in the original: no trailing-slash redirects, unknown paths and wrong methods get a plain-text
``404 Not Found``; any uncaught error becomes a 500 JSON body, logged as "Unhandled error" (never a
stack trace on the wire).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kodiai.log import Logger, get_logger
from kodiai.server import setup_mode
from kodiai.server.http_limits import HttpOptions
from kodiai.server.runtime import Runtime
from kodiai.server.webhook_asgi import PATH, BodyTooLargeError, WebhookEndpoint, is_webhook_post

if TYPE_CHECKING:
    from kodiai.dashboard.options import DashboardOptions
    from kodiai.dashboard.state import DashboardState

NOT_FOUND = "404 Not Found"
INTERNAL_ERROR = {"error": "Internal Server Error"}
TOO_MANY_HEADERS = b"Request header fields too many or too large"


async def read_limited(request: Request, limit: int) -> bytes:
    """Read the body, refusing early (Content-Length) or as soon as the stream passes ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError
        chunks.append(chunk)
    return b"".join(chunks)


class _ErrorBoundary:
    """Outermost ASGI wrapper: an exception becomes a logged 500 with a fixed JSON body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._log = get_logger("kodiai.server")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            self._log.error(
                "Unhandled error",
                err=f"{type(exc).__name__}: {exc}",
                path=scope.get("path"),
                method=scope.get("method"),
            )
            if not started:
                await JSONResponse(INTERNAL_ERROR, status_code=500)(scope, receive, send)


async def _too_many_headers(send: Send) -> None:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(TOO_MANY_HEADERS)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 431, "headers": headers})
    await send({"type": "http.response.body", "body": TOO_MANY_HEADERS})


class KodiaiApp(FastAPI):
    """FastAPI with the webhook hot path served first, outside the framework stack."""

    webhook_endpoint: WebhookEndpoint | None = None
    max_headers: int = HttpOptions.max_headers
    max_header_bytes: int = HttpOptions.max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._headers_within_limits(scope["headers"]):
            await _too_many_headers(send)
            return
        endpoint = self.webhook_endpoint
        if endpoint is not None and is_webhook_post(scope):
            await endpoint(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    def _headers_within_limits(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """The field count, and the block size again: h11 holds an *incomplete* header block to
        ``h11_max_incomplete_event_size``, but parses a larger one that arrives whole in one read."""
        if len(headers) > self.max_headers:
            return False
        return sum(len(name) + len(value) for name, value in headers) <= self.max_header_bytes


def create_app(
    runtime: Runtime, http: HttpOptions | None = None, dashboard: DashboardOptions | None = None
) -> FastAPI:
    """Build the FastAPI app over ``runtime``. Lifespan: replay the job journal; drain on shutdown.

    ``http``: the per-route limits and the ``/metrics`` token (default: production limits, open metrics).
    ``dashboard``: the operator dashboard's sign-in settings (web role; none configured: no /dashboard).
    """
    log = get_logger("kodiai.server")
    config = runtime.config
    http = http or HttpOptions()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if runtime.dispatcher is not None:
            replayed = await runtime.dispatcher.replay_unfinished()
            if replayed:
                log.info("Replayed unfinished deliveries from the job journal", replayed=replayed)
        if runtime.worker is not None:  # DATABASE_URL, roles worker and all: the queue's jobs run here
            await runtime.worker.start()
        started = {"host": config.host, "port": config.port, "setupMode": runtime.setup_mode}
        if runtime.pg_journal is not None:
            started["role"] = config.role
        log.info("Kodiai server started", **started)
        try:
            yield
        finally:
            if runtime.dispatcher is not None:
                await runtime.dispatcher.drain(config.shutdown_grace_seconds)
            if runtime.worker is not None:  # running jobs get the grace period, then go back in line
                await runtime.worker.stop()
            await runtime.queue.cancel_all()  # jobs still running past the grace period (left for replay)
            if dashboard_state is not None:
                await dashboard_state.aclose()
            runtime.close()
            log.info("Kodiai server stopped")

    app = KodiaiApp(
        title="Kodiai",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        redirect_slashes=False,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.max_headers = http.max_headers
    app.max_header_bytes = http.max_header_bytes

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code in (404, 405):
            return PlainTextResponse(NOT_FOUND, status_code=404)
        return PlainTextResponse(str(exc.detail), status_code=exc.status_code)

    # The hot path is a raw ASGI endpoint that KodiaiApp.__call__ serves before the FastAPI stack: the
    # framework's middleware chain and request/response objects cost several times the signature check
    # (measured with benchmarks/webhook.py under py-spy). The route below serves the same endpoint for
    # any request the shortcut does not match exactly (e.g. under a root_path).
    endpoint = WebhookEndpoint(
        runtime,
        body_timeout=http.body_timeout,
        max_inflight_bodies=http.max_inflight_bodies,
        inflight_body_bytes=http.inflight_body_bytes,
    )
    if config.runs_ingress:  # a worker replica serves /health and /metrics only
        app.webhook_endpoint = endpoint
        app.router.routes.append(Route(PATH, endpoint, methods=["POST"]))

    @app.api_route("/health", methods=["GET", "HEAD"])
    async def health() -> JSONResponse:
        # Liveness: a damaged, deleted or replaced journal would fail every delivery and a restart is the
        # remedy (start-up then stops with one FATAL line naming the problem). A full disk is not: it
        # only makes the server not ready, and a restart would drop the writes held in memory.
        journal = runtime.journal.health() if runtime.journal is not None else None
        if journal is not None and journal.state == "damaged":
            return JSONResponse({"status": "unhealthy", "reason": journal.reason}, 503)
        if runtime.worker is not None and runtime.worker.stopped:  # its loop ended: restart the process
            return JSONResponse({"status": "unhealthy", "reason": "queue worker stopped"}, 503)
        return JSONResponse({"status": "ok"})

    if config.runs_ingress:
        _add_readiness(app, runtime)

    @app.api_route("/metrics", methods=["GET", "HEAD"])
    async def metrics(request: Request) -> Response:
        if not http.metrics_authorized(request.headers.get("authorization")):
            return PlainTextResponse("Unauthorized", 401, headers={"WWW-Authenticate": "Bearer"})
        if runtime.pg_journal is not None:  # queue depth and journal counts, read now from PostgreSQL
            from kodiai.jobs.pg_queue import refresh_queue_metrics

            try:
                await refresh_queue_metrics(runtime.pg_journal, runtime.metrics)
            except Exception as exc:  # the rest of the metrics still answer
                log.warning("Queue metrics not read", err=f"{type(exc).__name__}: {exc}")
        body, content_type = runtime.metrics.render()
        return Response(body, media_type=content_type)

    if runtime.setup_mode:
        _add_setup_routes(app, runtime)
    dashboard_state = _add_dashboard(app, runtime, dashboard, log) if dashboard is not None else None

    app.add_middleware(_ErrorBoundary)  # outermost of the app's own middleware
    return app


def _add_dashboard(app: FastAPI, runtime: Runtime, options: DashboardOptions, log: Logger) -> DashboardState | None:
    """/dashboard on the web role (its pages read the stores; setup mode and workers have none)."""
    config, stores = runtime.config, runtime.stores
    if not config.runs_ingress or stores is None:
        return None
    from kodiai.dashboard.web import mount

    url = config.database_url.get_secret_value() if config.database_url is not None else None
    return mount(
        app,
        options,
        telemetry=url or stores.telemetry.path,
        knowledge=stores.knowledge,
        knowledge_target=url or stores.knowledge.path,
        jobs=url or config.jobs_db_path,
        memory=stores.memory,
        pg_journal=runtime.pg_journal,
        log=log,
        embeddings=stores.embeddings,
    )


def _add_readiness(app: FastAPI, runtime: Runtime) -> None:
    log = get_logger("kodiai.server")

    @app.api_route("/readiness", methods=["GET", "HEAD"])
    async def readiness() -> JSONResponse:
        if runtime.github is None:
            return JSONResponse({"status": "not ready", "reason": "GitHub App not configured"}, 503)
        journal = runtime.journal.health() if runtime.journal is not None else None
        if journal is not None and journal.state != "ok":
            reason = (
                f"job journal has {journal.reason}"  # "no space reserved for completion marks: …"
                if journal.state == "unreserved"
                else f"job journal cannot record deliveries: {journal.reason}"
            )
            log.warning("Readiness check failed: job journal", reason=reason, heldBack=journal.held_back)
            return JSONResponse({"status": "not ready", "reason": reason}, 503)
        if runtime.pg_journal is not None:  # deliveries cannot be journalled without PostgreSQL
            try:
                await runtime.pg_journal.off_loop(runtime.pg_journal.ping)
            except Exception as exc:
                reason = f"job journal cannot record deliveries: PostgreSQL unreachable ({type(exc).__name__})"
                log.warning("Readiness check failed: job journal", reason=reason)
                return JSONResponse({"status": "not ready", "reason": reason}, 503)
        unwritable = _unwritable_stores(runtime)
        if unwritable:  # fail-open writes (reviews still post) are being lost: logged once per change
            return JSONResponse({"status": "not ready", "reason": "; ".join(unwritable)}, 503)
        if await asyncio.to_thread(runtime.github.check_connectivity):
            return JSONResponse({"status": "ready"})
        log.warning("Readiness check failed: GitHub API unreachable")
        return JSONResponse({"status": "not ready", "reason": "GitHub API unreachable"}, 503)


def _unwritable_stores(runtime: Runtime) -> list[str]:
    """Why each store that cannot write now cannot (a full disk or an I/O error), e.g. "knowledge store
    cannot write: database or disk is full" (:mod:`kodiai.storage.write_health`)."""
    if runtime.stores is None:
        return []
    return [failure for h in runtime.stores.write_healths() if (failure := h.failure) is not None]


def _add_setup_routes(app: FastAPI, runtime: Runtime) -> None:
    config = runtime.config
    env_file = Path(config.env_file)
    log = get_logger("kodiai.server.setup")

    @app.api_route("/", methods=["GET", "HEAD"])
    async def index(request: Request) -> HTMLResponse:
        public_url = str(request.base_url).rstrip("/")
        given = request.query_params.get("token", "")
        prefill = given if setup_mode.token_ok(given, runtime.setup_token) else ""
        return HTMLResponse(setup_mode.render_index(config.missing_settings, public_url, prefill))

    @app.post("/setup/start")
    async def start(request: Request) -> Response:
        form = dict(await _form(request))
        if not setup_mode.token_ok(form.get("token", ""), runtime.setup_token):
            log.warning("Setup start refused: wrong or missing setup token")
            return PlainTextResponse("Wrong or missing setup token (see the server log)", 403)
        refusal = setup_mode.registration_refusal(env_file)
        if refusal is not None:
            return PlainTextResponse(refusal, 409)
        public_url = (form.get("public_url") or str(request.base_url)).strip().rstrip("/")
        if not public_url.startswith(("http://", "https://")):
            return PlainTextResponse("The public URL must start with http:// or https://", 400)
        org = (form.get("org") or "").strip() or None
        state = setup_mode.new_state()
        try:
            action = setup_mode.registration_url(config.github_api_url, org, state)
        except setup_mode.SetupError as exc:
            return PlainTextResponse(str(exc), 400)
        runtime.setup_state.add(state)
        problem = setup_mode.public_url_problem(public_url)
        if problem:  # allowed (a tunnel or proxy may forward it), but webhooks will not arrive as entered
            log.warning(
                "Setup: GitHub cannot deliver webhooks to this public URL; use a public address or a tunnel",
                publicUrl=public_url,
                reason=problem,
            )
        manifest = setup_mode.build_manifest(public_url)
        return HTMLResponse(setup_mode.render_manifest_form(action, manifest, problem))

    @app.get("/setup/callback")
    async def callback(code: str = "", state: str = "") -> Response:
        if not state or state not in runtime.setup_state:
            return PlainTextResponse("Unknown or expired setup state; start again from /", 400)
        refusal = setup_mode.registration_refusal(env_file)
        if refusal is not None:
            return PlainTextResponse(refusal, 409)
        try:
            conversion = await setup_mode.exchange_code(config.github_api_url, code)
        except setup_mode.SetupError as exc:
            log.warning("GitHub App manifest conversion failed", err=str(exc))
            return PlainTextResponse(str(exc), 502)
        runtime.setup_state.discard(state)
        try:
            setup_mode.write_env(env_file, conversion)
        except setup_mode.AlreadyRegisteredError as exc:
            return PlainTextResponse(str(exc), 409)
        except setup_mode.SetupError as exc:
            log.warning("GitHub App credentials not written", err=str(exc))
            return PlainTextResponse(str(exc), 502)
        runtime.setup_token = ""  # single use: token_ok never matches an empty token
        runtime.setup_state.clear()
        slug = str(conversion.get("slug") or conversion["id"])
        handle = setup_mode.mention_handle(slug)
        log.info(
            f"GitHub App registered; credentials written. Mention the bot as {handle}",
            appSlug=slug,
            mentionHandle=handle,
            envFile=str(env_file),
        )
        html_url = str(conversion.get("html_url") or f"https://github.com/apps/{slug}")
        return HTMLResponse(setup_mode.render_done(slug, html_url, env_file))


async def _form(request: Request) -> dict[str, str]:
    """URL-encoded form fields (no multipart dependency needed for two text inputs)."""
    raw = (await read_limited(request, 64 * 1024)).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(raw).items()}
