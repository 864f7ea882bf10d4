"""`kodiai serve`: load settings, apply migrations, build the runtime, run uvicorn.

Setup mode when the GitHub App settings are missing (the server still starts; ``GET /`` explains what
to do). With settings present, a bad key or an unreachable GitHub fails fast with one ``FATAL:`` line
and exit code 1, as the original.

uvicorn runs the h11 parser with the limits of :mod:`kodiai.server.http_limits` (bounded headers, a
deadline to receive each request, a connection cap). The socket is bound before the app starts, so
``--port 0`` works and "Kodiai server started" carries the port actually bound.

The interface: ``--host``, else the ``HOST`` setting (environment or ``--env-file``), else 0.0.0.0, or
127.0.0.1 in setup mode (the setup pages can write ``.env``; see :mod:`kodiai.server.setup_mode`).
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import importlib
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kodiai.jobs.pg_queue import WorkerOptions
    from kodiai.server.runtime import Role
    from kodiai.settings import Settings


def _load_registrar(spec: str) -> Callable[..., object]:
    """``module:function`` → the function (used for extra handler sets, e.g. test recorders)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise typer.BadParameter(f"expected module:function, got {spec!r}")
    fn: object = getattr(importlib.import_module(module_name), attr, None)
    if not callable(fn):
        raise typer.BadParameter(f"{spec!r} is not a callable")
    return fn


def _fatal(message: str) -> typer.Exit:
    print(f"FATAL: {message}", file=sys.stderr)
    return typer.Exit(code=1)


def serve(
    host: Annotated[
        str | None,
        typer.Option(help="Interface to listen on (default: HOST, else 0.0.0.0; 127.0.0.1 in setup mode)."),
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: PORT env var, else 3000).")] = None,
    env_file: Annotated[
        Path, typer.Option("--env-file", help="Dotenv file read at start-up (and written by setup).")
    ] = Path(".env"),
    handlers: Annotated[
        list[str] | None,
        typer.Option(
            "--handlers",
            envvar="KODIAI_HANDLERS",
            help="Extra handler registrars as module:function(runtime), after the built-in ones; may be repeated.",
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            envvar="KODIAI_ROLE",
            help="web (webhooks in, jobs queued), worker (runs jobs; /health and /metrics only) or all "
            "(both; the default). web and worker need DATABASE_URL.",
        ),
    ] = None,
) -> None:
    """Start the webhook server."""
    import uvicorn  # here, not at module level: `kodiai serve --help` stays fast

    from kodiai.github.app_auth import GitHubAppError
    from kodiai.log import configure_logging, get_logger, redact
    from kodiai.metrics import Metrics
    from kodiai.server.app import create_app
    from kodiai.server.graceful import GracefulServer
    from kodiai.server.http_limits import HttpOptions, uvicorn_options
    from kodiai.server.runtime import ServerConfig, build_runtime
    from kodiai.settings import Settings, SettingsError
    from kodiai.storage.migrations import apply_migrations, apply_postgres_migrations

    try:
        settings = Settings.load(env_file=env_file, require_github_app=False)
    except SettingsError as exc:
        print(f"FATAL: {exc}", file=sys.stderr)
        raise typer.Exit(code=1) from None
    try:
        configure_logging(settings.log_level)
    except ValueError as exc:
        raise _fatal(str(exc)) from None
    log = get_logger("kodiai.serve")

    from kodiai.server.setup_mode import LOOPBACK_NOTE, listen_host

    config = ServerConfig.from_settings(settings, env_file=str(env_file))
    # --role, else KODIAI_ROLE from the environment or the --env-file (like every other setting), else all
    config.role = _role(
        role or settings.kodiai_role or "all", settings.database() is not None, config.setup_mode
    )
    if port is not None:
        config.port = port
    chosen = bool(host or settings.host)  # the operator picked the interface (even 0.0.0.0)
    host = config.host = listen_host(host, settings.host, config.setup_mode)
    try:
        sock = _bind(host, config.port)  # listens only once uvicorn serves; before any store is opened
    except OSError as exc:
        raise _fatal(f"Cannot listen on {host}:{config.port}: {exc.strerror or exc}") from None
    config.port = sock.getsockname()[1]  # the real one when --port 0
    if config.setup_mode and not chosen:
        log.warning(LOOPBACK_NOTE.format(port=config.port), host=host)
    if config.setup_mode:  # no stores are opened in setup mode; still bring the databases up to date
        try:
            if settings.database():  # DATABASE_URL: telemetry and knowledge live in PostgreSQL
                apply_postgres_migrations(settings.database() or "", "telemetry")
                apply_postgres_migrations(settings.database() or "", "knowledge")
            else:
                apply_migrations(settings.telemetry_db_path, "telemetry")
                apply_migrations(settings.knowledge_db().path, "knowledge")
            if settings.database():
                apply_postgres_migrations(settings.database() or "", "jobs")
            else:
                apply_migrations(config.jobs_db_path, "jobs")
        except Exception as exc:
            raise _fatal(redact(f"Database migration failed: {exc}")) from None
        log.info("Databases migrated (setup mode)")

    extras = [_load_registrar(spec) for spec in handlers or []]
    register = None
    if not config.setup_mode:  # setup mode registers no handler: not importing them saves seconds (LanceDB)
        from kodiai.server.composition import builtin_registrar

        register = builtin_registrar(settings, extras)

    metrics = Metrics(raw_installation_ids=settings.metrics_installation_ids, label_key=_label_key(settings))
    stores = None
    try:
        if not config.setup_mode:  # imported here: the stores' modules (numpy, LanceDB glue) slow setup mode
            from kodiai.server.stores import open_stores

            stores = open_stores(settings, learned_memory=config.runs_jobs)
        runtime = build_runtime(
            config,
            register_handlers=register,
            stores=stores,
            metrics=metrics,
            # only the PostgreSQL queue has workers: importing it (psycopg) costs ~0.3 s of start-up
            worker_options=_worker_options(settings) if settings.database() else None,
        )
    except GitHubAppError as exc:
        if stores is not None:
            stores.close()
        raise _fatal(str(exc)) from None
    except Exception as exc:
        if stores is not None:
            stores.close()
        raise _fatal(redact(f"Start-up failed: {type(exc).__name__}: {exc}")) from None

    http = HttpOptions.from_settings(settings)
    from kodiai.dashboard.options import DashboardOptions

    app = create_app(runtime, http, DashboardOptions.from_settings(settings))
    uv_config = uvicorn.Config(
        app,
        host=host,
        port=config.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        # The standard asyncio loop, not uvloop: uvloop forks the whole process for every git and Claude Code
        # spawn, which runs LanceDB's at-fork hook in the child (a deadlock risk it warns about each time)
        # and costs ~10 ms a spawn; asyncio spawns with vfork. Ack throughput differs by ~7 % (benchmarks/
        # webhook.py, 50 clients: 990 vs 1070 deliveries/s in the same session).
        loop="asyncio",
        # h11, not httptools: httptools bounds neither the header size nor its parse time (one 128 MiB
        # header held the event loop for ~60 s) and hands chunked trailers to the app as headers.
        **uvicorn_options(http, on_timeout=runtime.metrics.http_request_timeouts.inc),
        timeout_graceful_shutdown=max(1, int(config.shutdown_grace_seconds)),
    )
    # Start-up leaves ~300k long-lived objects (modules, stores, compiled globs). Every full collection
    # scanned them all: a 0.6 s pause under load, during which nothing was answered (measured with
    # tests/server/test_hostile_clients.py). Frozen, they are never scanned again.
    gc.collect()
    gc.freeze()
    server = GracefulServer(uv_config)  # a signal stop exits 0, not by the signal (kodiai.server.graceful)
    server.run(sockets=[sock])
    if not server.started:
        raise typer.Exit(code=3)


def _role(role: str, on_postgres: bool, setup_mode: bool) -> Role:
    """``--role`` checked against the deployment: web and worker need the queue on PostgreSQL, and a worker
    the GitHub App (exit 2 with one line otherwise)."""
    from kodiai.server.runtime import ROLES

    if role not in ROLES:
        print(f"FATAL: unknown --role {role!r}; expected web, worker or all", file=sys.stderr)
        raise typer.Exit(code=2)
    if role != "all" and not on_postgres:
        print(
            f"FATAL: --role {role} needs DATABASE_URL (the job queue on PostgreSQL); with the SQLite files"
            " only --role all runs",
            file=sys.stderr,
        )
        raise typer.Exit(code=2)
    if role == "worker" and setup_mode:
        print("FATAL: --role worker needs the GitHub App settings (run a web replica for setup)", file=sys.stderr)
        raise typer.Exit(code=2)
    return role


def _worker_options(settings: Settings) -> WorkerOptions:
    """The queue worker's settings; its concurrency defaults to the review concurrency."""
    from kodiai.jobs.limit import default_review_concurrency
    from kodiai.jobs.pg_queue import WorkerOptions

    return WorkerOptions(
        concurrency=settings.worker_concurrency or settings.review_concurrency or default_review_concurrency(),
        heartbeat_seconds=settings.worker_heartbeat_seconds,
        stalled_seconds=settings.worker_stalled_seconds,
        shutdown_grace_seconds=settings.shutdown_grace_seconds,
        poll_seconds=settings.worker_poll_seconds,
    )


def _bind(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) TCP socket. ``IPPROTO_TCP`` explicitly: asyncio sets ``TCP_NODELAY`` on
    accepted connections only when the listener says TCP (with proto 0, Nagle holds every response's
    body segment for the client's delayed ACK, ~40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _label_key(settings: Settings) -> bytes | None:
    """The key of the installation labels in /metrics: derived from the webhook secret, so labels stay
    the same across restarts without the secret being guessable from them (random in setup mode)."""
    secret = settings.github_webhook_secret
    if secret is None or not secret.get_secret_value():
        return None
    return hmac.new(
        secret.get_secret_value().encode(), b"kodiai metrics installation label", hashlib.sha256
    ).digest()
