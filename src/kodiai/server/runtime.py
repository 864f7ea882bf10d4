"""The composition root's state: every store, client and queue, built once and passed in.

:func:`build_runtime` runs the start-up steps that may fail fast (behaviour P1.2): GitHub App
authentication (one clear message on a bad key or an unreachable GitHub), the jobs database and its
migrations, stale-workspace cleanup. In setup mode (App settings missing) only what the setup pages
need is built. :func:`kodiai.server.app.create_app` turns a runtime into the HTTP app.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, SecretStr

from kodiai.github.workspace import WorkspaceManager, git_base_url_for
from kodiai.jobs.dispatcher import DeliveryDispatcher
from kodiai.jobs.journal import JobJournal
from kodiai.jobs.lanes import JobQueue
from kodiai.log import get_logger
from kodiai.metrics import Metrics
from kodiai.server.ingress import WebhookIngress
from kodiai.server.setup_mode import setup_link_message
from kodiai.settings import Settings
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter

if TYPE_CHECKING:
    from kodiai.github.app_auth import GitHubApp
    from kodiai.jobs.pg_journal import PgJobJournal
    from kodiai.jobs.pg_queue import PgWorker, WorkerOptions
    from kodiai.server.stores import Stores

Role = Literal["web", "worker", "all"]
ROLES: tuple[Role, ...] = ("web", "worker", "all")

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MiB
#: The same as ``kodiai.github.app_auth.DEFAULT_API_URL``, not imported from there: that module loads
#: PyGithub (~1.3 s of CPU), which setup mode never uses; it is imported when a client is built.
DEFAULT_API_URL = "https://api.github.com"


class ServerConfig(BaseModel):
    """What the server needs from the process settings (see :meth:`from_settings`)."""

    app_id: str | None = None
    private_key: SecretStr | None = None
    webhook_secret: SecretStr | None = None
    webhook_secret_previous: SecretStr | None = None  # also accepted during a rotation window
    github_api_url: str = DEFAULT_API_URL
    jobs_db_path: str = "./data/kodiai-jobs.db"
    job_timeout_seconds: float = 3600.0
    max_lane_length: int = 100
    shutdown_grace_seconds: float = 30.0
    workspace_root: str | None = None
    bot_allow_list: list[str] = []
    max_body_bytes: int = MAX_BODY_BYTES
    missing_settings: list[str] = []
    env_file: str = ".env"
    host: str = "0.0.0.0"  # the interface bound (for the setup link in the log)
    port: int = 3000
    role: Role = "all"  # `kodiai serve --role`: web (ingress), worker (runs jobs) or both
    database_url: SecretStr | None = None  # DATABASE_URL: the journal and the queue on PostgreSQL

    @property
    def runs_ingress(self) -> bool:
        return self.role in ("web", "all")

    @property
    def runs_jobs(self) -> bool:
        return self.role in ("worker", "all")

    @property
    def setup_mode(self) -> bool:
        return bool(self.missing_settings)

    @classmethod
    def from_settings(cls, settings: Settings, *, env_file: str = ".env") -> ServerConfig:
        """The server's fields of the process settings."""
        return cls(
            app_id=settings.github_app_id,
            private_key=_secret(settings.private_key_pem or settings.github_private_key),
            webhook_secret=_secret(settings.github_webhook_secret),
            webhook_secret_previous=_secret(settings.github_webhook_secret_previous),
            github_api_url=settings.github_api_url or DEFAULT_API_URL,
            jobs_db_path=settings.jobs_db_path,
            job_timeout_seconds=settings.job_timeout_seconds,
            max_lane_length=settings.max_lane_length,
            shutdown_grace_seconds=settings.shutdown_grace_seconds,
            workspace_root=settings.workspace_root,
            bot_allow_list=list(settings.bot_allow_list or []),
            missing_settings=settings.missing_github_app_settings(),
            env_file=env_file,
            port=settings.port,
            database_url=_secret(settings.database_url),
        )


def _secret(value: SecretStr | None) -> SecretStr | None:
    """An empty secret counts as unset."""
    if value is None:
        return None
    return value if value.get_secret_value() else None


HandlerRegistrar = Callable[["Runtime"], None]


@dataclass
class Runtime:
    """Everything the server runs on. ``setup_mode`` runtimes have no GitHub client, journal or ingress."""

    config: ServerConfig
    metrics: Metrics
    router: EventRouter
    queue: JobQueue
    github: GitHubApp | None = None
    journal: JobJournal | None = None
    dispatcher: DeliveryDispatcher | None = None
    ingress: WebhookIngress | None = None
    workspaces: WorkspaceManager | None = None
    stores: Stores | None = None  # built by `kodiai serve`; None in setup mode and in bare tests
    closers: list[Callable[[], None]] = field(default_factory=list)
    """Closed at shutdown after the journal (e.g. the mention state a registrar opened)."""
    setup_state: set[str] = field(default_factory=set)
    setup_token: str = ""  # one-time token (printed in the log) that guards the setup flow
    pg_journal: PgJobJournal | None = None  # DATABASE_URL: the journal and queue intake on PostgreSQL
    worker: PgWorker | None = None  # DATABASE_URL, roles worker and all: runs the queue's jobs

    @property
    def setup_mode(self) -> bool:
        return self.github is None

    def close(self) -> None:
        for close in self.closers:
            close()
        if self.journal is not None:
            self.journal.close()
        if self.pg_journal is not None:
            self.pg_journal.close()
        if self.stores is not None:
            self.stores.close()


def build_runtime(
    config: ServerConfig,
    *,
    github: GitHubApp | None = None,
    register_handlers: HandlerRegistrar | None = None,
    metrics: Metrics | None = None,
    stores: Stores | None = None,
    worker_options: WorkerOptions | None = None,
) -> Runtime:
    """Run the start-up sequence and return the runtime. Raises ``GitHubAppError`` on a bad app set-up.

    With ``config.database_url`` the journal and the queue are on PostgreSQL (:func:`_build_on_postgres`);
    without, the SQLite journal and the in-process dispatcher (role ``all`` only)."""
    log = get_logger("kodiai.server")
    metrics = metrics or Metrics()
    if config.setup_mode and github is None:
        log.warning("GitHub App settings missing; starting in setup mode", missing=config.missing_settings)
        router = EventRouter(BotFilter(""))
        queue = JobQueue(metrics=metrics)
        token = secrets.token_hex(16)  # hex: a terminal's link detection keeps the whole URL
        # The only place the token is logged: the whole link, once, in the message (no separate field).
        log.warning(setup_link_message(config.host, config.port, token))
        return Runtime(
            config=config, metrics=metrics, router=router, queue=queue, stores=stores, setup_token=token
        )

    if config.webhook_secret is None or not config.webhook_secret.get_secret_value():
        raise ValueError("GITHUB_WEBHOOK_SECRET is required")
    previous = config.webhook_secret_previous.get_secret_value() if config.webhook_secret_previous else None
    if previous == config.webhook_secret.get_secret_value():
        raise ValueError("GITHUB_WEBHOOK_SECRET_PREVIOUS must differ from GITHUB_WEBHOOK_SECRET")
    if previous:
        log.warning(
            "Webhook secret rotation: deliveries signed with GITHUB_WEBHOOK_SECRET_PREVIOUS are also "
            'accepted; remove it once kodiai_webhook_signature_matches_total{secret="previous"} stops growing'
        )
    if github is None:
        from kodiai.github.app_auth import GitHubApp

        assert config.app_id and config.private_key  # guaranteed when not in setup mode
        github = GitHubApp(
            config.app_id, config.private_key.get_secret_value(), base_url=config.github_api_url
        )
    slug = github.slug or github.initialize()

    queue = JobQueue(
        job_timeout=config.job_timeout_seconds, max_lane_length=config.max_lane_length, metrics=metrics
    )

    async def token_for(installation_id: int) -> str:
        return await asyncio.to_thread(github.installation_token, installation_id)

    workspaces = WorkspaceManager(
        token_for,
        root=Path(config.workspace_root) if config.workspace_root else None,
        git_base_url=git_base_url_for(config.github_api_url),
    )
    stale = workspaces.cleanup_stale()
    if stale:
        log.info("Cleaned up stale workspaces from previous run", staleCount=stale)

    secrets_ = (config.webhook_secret.get_secret_value(), previous)
    journal: JobJournal | PgJobJournal
    wire: Wiring
    if config.database_url is not None:
        journal, wire = _on_postgres(config, metrics, stores, secrets_, worker_options)
    else:
        journal, wire = _on_sqlite(config, queue, metrics, secrets_)
    router = EventRouter(BotFilter(slug, config.bot_allow_list))
    pg_journal = None if isinstance(journal, JobJournal) else journal
    runtime = Runtime(
        config=config,
        metrics=metrics,
        router=router,
        queue=queue,
        github=github,
        journal=journal if isinstance(journal, JobJournal) else None,
        workspaces=workspaces,
        stores=stores,
        pg_journal=pg_journal,
    )
    try:
        if register_handlers is not None:
            register_handlers(runtime)
        wire(runtime)
    except BaseException:
        journal.close()  # a refused start leaves no writer thread or open connection behind
        raise
    if pg_journal is not None:
        log.info("Job journal and queue on PostgreSQL", role=config.role, database=pg_journal.describe())
    return runtime


Wiring = Callable[[Runtime], None]
"""How deliveries reach jobs, set on a runtime once its handlers are registered."""


def _on_sqlite(
    config: ServerConfig, queue: JobQueue, metrics: Metrics, secrets_: tuple[str, str | None]
) -> tuple[JobJournal, Wiring]:
    """The SQLite journal and the in-process dispatcher (role ``all`` only): jobs run in this process, and
    the unfinished deliveries of the last run are read for replay."""
    journal = JobJournal.open(config.jobs_db_path)  # damaged, missing or swapped: JournalDamagedError
    journal.start_writer(metrics)

    def wire(runtime: Runtime) -> None:
        runtime.dispatcher = DeliveryDispatcher(runtime.router, journal, metrics=metrics)
        queue.on_job_start = runtime.dispatcher.job_starting  # attempts count when a job really starts
        replay = runtime.dispatcher.prepare_replay()  # read now: an unreadable journal fails start-up here
        if replay:
            get_logger("kodiai.server").info(
                "Unfinished deliveries found in the job journal", toReplay=replay
            )
        runtime.ingress = _ingress(runtime, journal, runtime.dispatcher, secrets_)

    return journal, wire


def _on_postgres(
    config: ServerConfig,
    metrics: Metrics,
    stores: Stores | None,
    secrets_: tuple[str, str | None],
    worker_options: WorkerOptions | None,
) -> tuple[PgJobJournal, Wiring]:
    """The journal, dedup and queue on PostgreSQL: a web role journals and defers (no job runs in it), a
    worker role runs the queue's jobs, ``all`` does both. Handlers are registered in every role: the web
    role needs them to tell deliveries with work from the rest."""
    from kodiai.jobs.pg_journal import PgJobJournal
    from kodiai.jobs.pg_queue import PgWorker

    assert config.database_url is not None
    url = config.database_url.get_secret_value()
    journal = PgJobJournal.open(url)

    def wire(runtime: Runtime) -> None:
        if config.runs_ingress:  # the queue's workers run the jobs: no dispatcher here
            runtime.ingress = _ingress(runtime, journal, None, secrets_)
        if config.runs_jobs:
            runtime.worker = PgWorker(
                url,
                journal,
                runtime.router,
                options=worker_options,
                metrics=metrics,
                memory_store=stores.memory if stores is not None else None,
                governance=_governance(url, stores),
            )

    return journal, wire


def _ingress(
    runtime: Runtime,
    journal: JobJournal | PgJobJournal,
    dispatcher: DeliveryDispatcher | None,
    secrets_: tuple[str, str | None],
) -> WebhookIngress:
    secret, previous = secrets_
    return WebhookIngress(
        secret=secret,
        previous_secret=previous,
        router=runtime.router,
        journal=journal,
        dispatcher=dispatcher,
        metrics=runtime.metrics,
    )


def _governance(url: str, stores: Stores | None) -> Callable[[], object] | None:
    """The workers' half of the dashboard's forget/restore on a ``web`` replica (which has no memory store):
    the periodic maintenance applies the recorded rows."""
    if stores is None or stores.memory is None:
        return None
    from kodiai.learning.governance_apply import sweep_governance

    memory, embeddings = stores.memory, stores.embeddings
    return lambda: sweep_governance(url, memory, embeddings)
