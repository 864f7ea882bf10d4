"""The dashboard's routes: sign-in (GitHub or operator token), the five pages, CSV/JSON export of every
table under the same access rules, and the two POST actions (CSRF-checked)."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime
from importlib import resources
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from kodiai.dashboard.actions import forget_memory, restore_forgotten, retry_dead
from kodiai.dashboard.auth import OPERATOR_LOGIN, GuessThrottle, Viewer, client_of, guess_failed, viewer_of
from kodiai.dashboard.github_oauth import SignInError, authorize_url, sign_in, writable_access
from kodiai.dashboard.pages import PAGES as PAGE_BUILDERS
from kodiai.dashboard.pages import PageBuilder
from kodiai.dashboard.queries_jobs import installation_of, ledger_repositories
from kodiai.dashboard.scope import (
    NUMBER,
    RANGES,
    REPO_NAME,
    Scope,
    narrow_to_installation,
    query_problem,
    scope_for,
)
from kodiai.dashboard.session import COOKIE, STATE_COOKIE, STATE_SECONDS, Session, tokens_equal
from kodiai.dashboard.state import DashboardState
from kodiai.dashboard.tables import find, to_csv, to_json

PREFIX = "/dashboard"
FORM_LIMIT = 16 * 1024
PAGES = tuple(PAGE_BUILDERS)
FLASH = ("message", "sig")
"""An action's outcome in the redirect's query string (not carried into the page's export links)."""
STATIC = {"dashboard.css": "text/css; charset=utf-8"}
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def build_router(state: DashboardState) -> APIRouter:
    router = APIRouter(prefix=PREFIX)
    throttle = GuessThrottle()

    def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=PREFIX,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )

    async def signed_in(response: Response, request: Request, session: Session) -> Response:
        """Set the new session's cookie; the browser's earlier session (if any) ends: a session planted in
        the browser before sign-in is never the one signed in with, and one browser holds one session."""
        earlier = state.signer.read_session(request.cookies.get(COOKIE))
        if earlier is not None:
            await asyncio.to_thread(state.sessions.drop, earlier["sid"])
        set_cookie(
            response, request, COOKIE, state.signer.session_cookie(session), state.options.session_seconds
        )
        response.delete_cookie(STATE_COOKIE, path=PREFIX)
        return response

    def login_form(request: Request, message: str = "", status: int = 200) -> Response:
        nonce = secrets.token_urlsafe(16)
        body = state.templates.get_template("login.html").render(
            nonce=nonce,
            message=message,
            github=state.options.github_sign_in,
            token=state.options.token is not None,
        )
        response = HTMLResponse(body, status_code=status)
        set_cookie(response, request, STATE_COOKIE, state.signer.state_cookie(nonce), STATE_SECONDS)
        return response

    @router.get("")
    async def root() -> Response:
        return RedirectResponse(f"{PREFIX}/overview", 303)

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in STATIC:
            return PlainTextResponse("Not Found", 404)
        body = resources.files("kodiai.dashboard").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "max-age=3600"})

    @router.get("/login")
    async def login(request: Request, operator: str = "") -> Response:
        if state.options.github_sign_in and not operator:
            nonce = secrets.token_urlsafe(24)
            response = RedirectResponse(authorize_url(state.options, nonce), 302)
            set_cookie(response, request, STATE_COOKIE, state.signer.state_cookie(nonce), STATE_SECONDS)
            return response
        return login_form(request)

    @router.post("/login")
    async def login_token(request: Request) -> Response:
        form = await _form(request)
        expected = state.signer.read_state(request.cookies.get(STATE_COOKIE))
        if expected is None or not tokens_equal(form.get("csrf", ""), expected):
            return PlainTextResponse("Forbidden: missing or stale form token; reload the sign-in page", 403)
        throttle.check(client_of(request))
        if state.options.token is None or not tokens_equal(
            form.get("token", ""), state.options.token.get_secret_value()
        ):
            state.log.warning("Dashboard operator sign-in refused")
            guess_failed(state, throttle, request)
            return login_form(request, "That token is not the operator token.", 401)
        throttle.succeeded(client_of(request))
        session = await asyncio.to_thread(state.sessions.create, OPERATOR_LOGIN, operator=True)
        return await signed_in(RedirectResponse(f"{PREFIX}/overview", 303), request, session)

    @router.get("/callback")
    async def callback(request: Request) -> Response:
        code = request.query_params.get("code", "")
        given = request.query_params.get("state", "")
        expected = state.signer.read_state(request.cookies.get(STATE_COOKIE))
        if (
            not state.options.github_sign_in
            or expected is None
            or not given
            or not tokens_equal(given, expected)
        ):
            return PlainTextResponse(
                "Forbidden: the sign-in state did not match; start again at /dashboard/login", 403
            )
        try:
            user = await sign_in(state.http, state.options, code)
            access = await writable_access(state.http, state.options, user)
        except SignInError as exc:
            state.log.warning("Dashboard sign-in failed", err=str(exc))
            return PlainTextResponse(f"Sign-in failed: {exc}", 502)
        session = await asyncio.to_thread(
            state.sessions.create, user.login, operator=False, user_token=user.token, access=access
        )
        state.log.info("Dashboard sign-in", login=user.login, repositories=len(access.repos))
        return await signed_in(RedirectResponse(f"{PREFIX}/overview", 303), request, session)

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        viewer, refusal = await _checked_post(state, throttle, request)
        if viewer is None:
            return refusal
        if viewer.session is not None:
            await asyncio.to_thread(state.sessions.drop, viewer.session.sid)
        response = RedirectResponse(f"{PREFIX}/login?operator=1", 303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    def page(name: str, build: PageBuilder) -> None:
        async def render(request: Request) -> Response:
            viewer = await viewer_of(state, request, throttle)
            if viewer is None:
                return RedirectResponse(f"{PREFIX}/login", 303)
            problem = query_problem(request.query_params.multi_items())
            if problem is not None:
                return PlainTextResponse(f"Bad Request: {problem}", 400)
            scope = _scope(state, viewer, request)
            context = await build(state, viewer, scope, request)
            body = state.templates.get_template(f"{name}.html").render(
                page=name,
                pages=PAGES,
                viewer=viewer.access,
                csrf=state.signer.csrf_token(viewer.session.sid) if viewer.session else "",
                repo=request.query_params.get("repo", ""),
                installation=request.query_params.get("installation", ""),
                range=request.query_params.get("range", "30d")
                if request.query_params.get("range") in RANGES
                else "30d",
                ranges=list(RANGES),
                query=urlencode([(k, v) for k, v in request.query_params.multi_items() if k not in FLASH]),
                message=_message(state, viewer, request),
                **context,
            )
            return HTMLResponse(body)

        async def export(request: Request, table: str, fmt: str) -> Response:
            viewer = await viewer_of(state, request, throttle)
            if viewer is None:
                return PlainTextResponse("Unauthorized", 401)
            problem = query_problem(request.query_params.multi_items())
            if problem is not None:
                return PlainTextResponse(f"Bad Request: {problem}", 400)
            context = await build(state, viewer, _scope(state, viewer, request), request)
            found = find(context.get("tables", []), table)
            if found is None or fmt not in ("csv", "json"):
                return PlainTextResponse("Not Found", 404)
            if fmt == "csv":
                return Response(
                    to_csv(found),
                    media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{found.name}.csv"'},
                )
            return Response(to_json(found), media_type="application/json")

        router.add_api_route(f"/{name}", render, methods=["GET"])
        router.add_api_route(f"/{name}/export/{{table}}.{{fmt}}", export, methods=["GET"])

    for name, build in PAGE_BUILDERS.items():
        page(name, build)

    async def memory_action(request: Request, action: str) -> Response:
        viewer, refusal = await _checked_post(state, throttle, request)
        if viewer is None:
            return refusal
        form = await _form(request)
        repo = form.get("repo", "")
        if not REPO_NAME.fullmatch(repo) or not NUMBER.fullmatch(form.get("finding_id", "")):
            return PlainTextResponse("Bad Request: repo must be owner/name and finding_id a number", 400)
        finding_id = int(form["finding_id"])
        if not viewer.access.can_see(repo):
            return PlainTextResponse("Forbidden: you have no write access to that repository", 403)
        actor = viewer.access.login if not viewer.access.operator else "dashboard-operator"
        assert state.knowledge_db is not None
        if action == "forget":
            result = await asyncio.to_thread(
                forget_memory,
                state.knowledge,
                state.knowledge_db,
                state.memory,
                repo=repo,
                finding_id=finding_id,
                actor=actor,
            )
        else:
            result = await asyncio.to_thread(
                restore_forgotten,
                state.knowledge_db,
                state.memory,
                state.embeddings,
                repo=repo,
                finding_id=finding_id,
                actor=actor,
            )
        state.log.info(f"Dashboard {action}", repo=repo, finding_id=finding_id, actor=actor, done=result.done)
        return RedirectResponse(f"{PREFIX}/memory?{_flash(state, viewer, result.message)}", 303)

    @router.post("/memory/forget")
    async def forget(request: Request) -> Response:
        return await memory_action(request, "forget")

    @router.post("/memory/restore")
    async def restore(request: Request) -> Response:
        return await memory_action(request, "restore")

    @router.post("/jobs/retry")
    async def retry(request: Request) -> Response:
        viewer, refusal = await _checked_post(state, throttle, request)
        if viewer is None:
            return refusal
        delivery = (await _form(request)).get("delivery_id", "")
        if query_problem([("delivery_id", delivery)]) is not None:
            return PlainTextResponse("Bad Request: delivery_id", 400)
        installation = await asyncio.to_thread(installation_of, state.sources.jobs, delivery)
        if installation is None or not viewer.access.can_see_installation(installation):
            return PlainTextResponse("Forbidden: no such delivery in your installations", 403)
        message = await asyncio.to_thread(retry_dead, state.jobs_target, state.pg_journal, delivery)
        state.log.info("Dashboard retry", delivery_id=delivery, actor=viewer.access.login)
        return RedirectResponse(f"{PREFIX}/jobs?{_flash(state, viewer, message)}", 303)

    return router


def _flash(state: DashboardState, viewer: Viewer, message: str) -> str:
    """The redirect's query string carrying an action's outcome, signed for the viewer's session."""
    sid = viewer.session.sid if viewer.session else ""
    return f"message={quote(message, safe='')}&sig={state.signer.message_sig(sid, message)}"


def _message(state: DashboardState, viewer: Viewer, request: Request) -> str:
    """The outcome to show: only a message this dashboard signed for this session (not a link's text)."""
    message = request.query_params.get("message", "")
    sid = viewer.session.sid if viewer.session else ""
    return message if state.signer.message_ok(sid, message, request.query_params.get("sig")) else ""


def _scope(state: DashboardState, viewer: Viewer, request: Request) -> Scope:
    scope = scope_for(
        viewer.access,
        repo=request.query_params.get("repo", "").strip() or None,
        range_key=request.query_params.get("range"),
        now=datetime.now(UTC),
    )
    installation = request.query_params.get("installation", "").strip()
    if not installation:
        return scope
    if not installation.isdigit():
        return narrow_to_installation(scope, viewer.access, -1, ())
    known = ledger_repositories(state.sources.telemetry, int(installation)) if viewer.access.operator else ()
    return narrow_to_installation(scope, viewer.access, int(installation), known)


async def _checked_post(
    state: DashboardState, throttle: GuessThrottle, request: Request
) -> tuple[Viewer | None, Response]:
    """A POST's viewer when it is signed in and, for a cookie session, carries the session's CSRF token."""
    viewer = await viewer_of(state, request, throttle)
    if viewer is None:
        return None, PlainTextResponse("Unauthorized", 401)
    if viewer.session is not None:
        form = await _form(request)
        if not state.signer.csrf_ok(viewer.session.sid, form.get("csrf")):
            return None, PlainTextResponse("Forbidden: missing or wrong CSRF token", 403)
    return viewer, PlainTextResponse("")


async def _form(request: Request) -> dict[str, str]:
    """The url-encoded form (cached on the request: read once, used by the CSRF check and the action)."""
    cached = getattr(request.state, "dashboard_form", None)
    if cached is not None:
        return dict(cached)
    body = b""
    async for chunk in request.stream():  # the dashboard's forms are tiny: stop reading past the limit
        body += chunk
        if len(body) > FORM_LIMIT:
            break
    form = dict(parse_qsl(body[:FORM_LIMIT].decode("utf-8", "replace")))
    request.state.dashboard_form = form
    return form
