"""The composition root's handler half: build :class:`~kodiai.handler_kit.deps.HandlerDeps` once from the
runtime and the settings, and register the built-in handlers (``kodiai serve`` does this by default)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import SecretStr

from kodiai import outbound
from kodiai.execution.executor import ClaudeAgentExecutor, Executor, load_agent_sdk
from kodiai.execution.options import ModelCredentials
from kodiai.execution.sandbox import AgentSandbox
from kodiai.execution.sandbox_run import log_startup_status
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory, OperatorCaps
from kodiai.jobs.limit import ConcurrencyLimit, default_review_concurrency
from kodiai.log import get_logger
from kodiai.mention.state import MentionState
from kodiai.review.diff_analysis import warm_up as warm_up_diff_analysis
from kodiai.server.handlers import register_builtin_handlers
from kodiai.server.runtime import HandlerRegistrar, Runtime
from kodiai.settings import Settings


def model_credentials(settings: Settings) -> ModelCredentials:
    """The model credentials and endpoint variables the Claude Code CLI (and nothing else) receives."""
    return ModelCredentials(
        claude_code_oauth_token=settings.claude_code_oauth_token,
        anthropic_api_key=settings.anthropic_api_key,
        endpoint={name: SecretStr(value) for name, value in settings.model_endpoint_env().items()},
    )


#: Logged at start-up when the CLI would have no way to authenticate (docs/troubleshooting.md).
NO_MODEL_CREDENTIALS = (
    "No model credentials: every review and mention will fail with 'Not logged in'; set "
    "ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (or a gateway, Bedrock or Vertex: docs/model-endpoint.md)"
)


def log_model_credentials_status(credentials: ModelCredentials) -> None:
    """Warn once at start-up instead of letting the first review discover it."""
    if not credentials.configured:
        get_logger("kodiai.server").warning(NO_MODEL_CREDENTIALS)


def agent_sandbox(settings: Settings, run_root: Path | None = None) -> AgentSandbox:
    """The Claude Code CLI's sandbox: on unless the operator set ``AGENT_SANDBOX=off``. Per-run
    directories (``kodiai-agent-*``: HOME, transcripts) go under ``run_root``, the workspace root, so the
    start-up sweep of stale ``kodiai-*`` entries also removes what a killed server left behind."""
    return AgentSandbox(enabled=settings.agent_sandbox != "off", run_root=run_root)


def handler_deps(runtime: Runtime, settings: Settings, *, executor: Executor | None = None) -> HandlerDeps:
    github, workspaces, stores = runtime.github, runtime.workspaces, runtime.stores
    if github is None or workspaces is None:
        raise RuntimeError("handlers need a configured GitHub App (not available in setup mode)")
    memory = None
    if stores is not None and stores.memory is not None and stores.isolation is not None:
        # one LearnedMemory, so one lexical channel, per store: it remembers that its indexes exist
        memory = LearnedMemory(store=stores.memory, isolation=stores.isolation, embeddings=stores.embeddings)
    metrics = runtime.metrics
    limit = settings.review_concurrency or default_review_concurrency()
    return HandlerDeps(
        app_slug=github.slug,
        installation_client=github.installation_client,
        workspaces=workspaces,
        executor=executor
        or ClaudeAgentExecutor(
            installation_client=github.installation_client,
            credentials=model_credentials(settings),
            sandbox=agent_sandbox(settings, workspaces.root),
            on_sandbox_failure=metrics.agent_sandbox_failures.inc,
        ),
        queue=runtime.queue,
        metrics=metrics,
        review_limit=ConcurrencyLimit(
            limit, waiting=metrics.reviews_waiting, running=metrics.reviews_running
        ),
        knowledge=stores.knowledge if stores is not None else None,
        telemetry=stores.telemetry if stores is not None else None,
        memory=memory,
        spend_caps=OperatorCaps(settings.spend_cap_usd_per_day, settings.spend_cap_usd_per_day_overrides),
    )


def warm_review_path(deps: HandlerDeps, *, agent_sdk: bool = True) -> threading.Thread:
    """Load the embedding model, compile the diff-analysis globs and, with ``agent_sdk``, import the Claude
    Agent SDK on a daemon thread at start-up, so the first review does not pay for them on the event loop
    (a failure only means the first review loads them itself)."""
    log = get_logger("kodiai.server")

    def run() -> None:
        started = time.monotonic()
        if agent_sdk:
            load_agent_sdk()
        warm_up_diff_analysis()
        if deps.memory is not None:
            deps.memory.embeddings.generate("warm-up", "query")
        log.info("Review path warmed up", seconds=round(time.monotonic() - started, 2))

    thread = threading.Thread(target=run, name="kodiai-review-warm", daemon=True)
    thread.start()
    return thread


def count_store_write_failures(runtime: Runtime) -> None:
    """Every failed knowledge, telemetry or learned-memory write counts in ``/metrics`` by store and kind."""
    stores, failures = runtime.stores, runtime.metrics.store_write_failures
    if stores is None:
        return
    for health in stores.write_healths():
        health.observe(lambda store, kind: failures.labels(store, kind).inc())


def guard_outbound_secrets(runtime: Runtime, settings: Settings) -> None:
    """The outbound scanner knows the settings' secret values, and its hits count in ``/metrics``, for as
    long as the runtime lives."""
    hits = runtime.metrics.outbound_secret_hits
    runtime.closers.append(outbound.register_settings(settings))
    runtime.closers.append(outbound.observe_hits(lambda surface, action: hits.labels(surface, action).inc()))


def builtin_registrar(
    settings: Settings, extras: list[Callable[[Runtime], object]] | None = None
) -> HandlerRegistrar:
    """Register the built-in handlers, then any extra registrars, and log the handled event keys."""

    def register(runtime: Runtime) -> None:
        deps = handler_deps(runtime, settings)
        if runtime.stores is not None and runtime.stores.memory is not None:
            # index builds (the start-up warm runs already: builds made before this are replayed)
            runtime.stores.memory.observe_builds(runtime.metrics.memory_index.observe)
        count_store_write_failures(runtime)
        runs_jobs = runtime.config.runs_jobs  # a web replica only routes: no sandbox, model or warm-up
        if runs_jobs:
            log_startup_status(agent_sandbox(settings))
            log_model_credentials_status(model_credentials(settings))
        guard_outbound_secrets(runtime, settings)
        # write keys, rate limit, turns: shared by workers (and by every process on DATABASE_URL)
        state = MentionState.open(settings.database() or runtime.config.jobs_db_path)
        runtime.closers.append(state.close)
        register_builtin_handlers(runtime.router, deps, state)
        # without model credentials no run can succeed: the SDK is then imported by the first run only
        if runs_jobs:
            warm_review_path(deps, agent_sdk=model_credentials(settings).configured)
        for extra in extras or []:
            extra(runtime)
        get_logger("kodiai.server").info(
            "Event handlers registered",
            handledEvents=sorted(runtime.router.keys()),
            reviewConcurrency=deps.review_limit.limit,
            learnedMemory=deps.memory is not None,
            spendCapUsdPerDay=deps.spend_caps.default_usd or None,
            spendCapOverrides=len(deps.spend_caps.overrides),
        )

    return register
