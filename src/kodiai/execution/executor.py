"""The executor: runs Claude Code (Claude Agent SDK) on a workspace with our MCP tools (behaviour E1).

Handlers depend on the :class:`Executor` protocol; :class:`ClaudeAgentExecutor` is the implementation.
The SDK transport is the test seam: pass ``transport_factory`` to replay a scripted message stream
through the real SDK client (tool calls reach our in-process MCP servers exactly as in production).

Timeouts use an anyio cancel scope: on expiry the SDK stream is cancelled, the query is closed and the
SDK's subprocess transport closes stdin, then terminates (and if need be kills) the CLI process inside
its shielded cleanup — an ``asyncio.timeout`` would skip that escalation (see the SDK's
``Transport.close`` contract), which is why it is not used here.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio

from github import Github
from kodiai.execution.config_view import ExecutorConfig, load_executor_config
from kodiai.execution.generic_prompt import build_generic_prompt
from kodiai.execution.options import ModelCredentials, build_agent_options
from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.result_mapping import NO_RESULT_MESSAGE, error_result, map_result, timeout_result
from kodiai.execution.sandbox import AgentSandbox
from kodiai.execution.sandbox_run import SandboxUnavailable, agent_run
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.github.rest import RestApi
from kodiai.log import Logger, get_logger, redact

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, Transport

    from kodiai.execution.tools import PublishFlag

#: Installation id → a fresh authenticated PyGithub client.
InstallationClientFactory = Callable[[int], Github]
TransportFactory = Callable[["ClaudeAgentOptions"], "Transport"]
#: Per run: a factory of REST façades replacing GitHub (local reviews record instead of posting).
RestFactoryForRun = Callable[[ExecutionContext], Callable[[], RestApi]]
ConfigLoader = Callable[[Path, Logger], ExecutorConfig]


class Executor(Protocol):
    """What handlers call. Implementations never raise: failures come back as ``conclusion='error'``."""

    async def execute(self, context: ExecutionContext) -> ExecutionResult: ...


class ClaudeAgentExecutor:
    """:class:`Executor` backed by ``claude_agent_sdk.query``."""

    def __init__(
        self,
        *,
        installation_client: InstallationClientFactory | None,
        credentials: ModelCredentials,
        rest_factory: RestFactoryForRun | None = None,
        config_loader: ConfigLoader = load_executor_config,
        transport_factory: TransportFactory | None = None,
        cli_path: str | Path | None = None,
        pacing: PacingPolicy | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        sandbox: AgentSandbox | None = None,
        on_sandbox_failure: Callable[[], None] | None = None,
    ) -> None:
        """``sandbox``: how the CLI is confined (default: bubblewrap on); ``on_sandbox_failure`` counts
        runs refused because the sandbox could not start."""
        self._installation_client = installation_client
        self._rest_factory = rest_factory
        self._credentials = credentials
        self._config_loader = config_loader
        self._transport_factory = transport_factory
        self._cli_path = cli_path
        self._pacing = pacing
        self._monotonic = monotonic
        self._sandbox = sandbox if sandbox is not None else AgentSandbox()
        self._on_sandbox_failure = on_sandbox_failure

    async def execute(self, context: ExecutionContext) -> ExecutionResult:
        from kodiai.execution.tools import PublishFlag  # the agent SDK: see load_agent_sdk

        started = self._monotonic()
        log = get_logger(
            "kodiai.execution.executor",
            delivery_id=context.delivery_id,
            repo=f"{context.owner}/{context.repo}",
            pr_number=context.pr_number,
            event_type=context.event_type,
        )
        publish = PublishFlag()
        scope: anyio.CancelScope | None = None
        timeout_seconds: float = 0
        try:
            # The handler's trusted choice (base or head) wins: the workspace's own `.kodiai.yml` may be a
            # fork's. Without one (the local `kodiai review` CLI) the workspace's file is read; parsing a
            # large one is seconds of pure Python: never on the event loop.
            config = context.executor_config
            if config is None:
                config = await anyio.to_thread.run_sync(self._config_loader, context.workspace_dir, log)
            timeout_seconds = (
                context.dynamic_timeout_seconds
                if context.dynamic_timeout_seconds is not None
                else config.timeout_seconds
            )
            log.info(
                "Execution timeout configured",
                timeout_seconds=timeout_seconds,
                source="dynamic" if context.dynamic_timeout_seconds else "config",
            )
            prompt = context.prompt if context.prompt is not None else build_generic_prompt(context)
            result: ResultMessage | None = None
            # a private HOME and launcher per run (sandboxed unless AGENT_SANDBOX=off), removed afterwards
            async with agent_run(
                self._sandbox,
                workspace=context.workspace_dir,
                write_mode=context.write_mode,
                cli_path=self._cli_path,
                endpoint_names=self._credentials.endpoint,
            ) as run:
                options = self._options(context, config, publish, run.launcher)
                with anyio.move_on_after(timeout_seconds) as scope:
                    result = await self._stream(prompt, options, log)
            if scope.cancelled_caught:
                log.warning(
                    "Execution timed out", timeout_seconds=timeout_seconds, published=publish.published
                )
                return timeout_result(timeout_seconds, published=publish.published)
        except SandboxUnavailable as exc:  # fail closed: the model is never called unconfined
            log.error("Agent sandbox unavailable: run refused", error=redact(exc.reason))
            if self._on_sandbox_failure is not None:
                self._on_sandbox_failure()
            return error_result(str(exc))
        except Exception as exc:
            if scope is not None and scope.cancel_called:
                log.warning(
                    "Execution timed out", timeout_seconds=timeout_seconds, published=publish.published
                )
                return timeout_result(timeout_seconds, published=publish.published)
            message = str(exc) or type(exc).__name__
            log.error("Execution failed", error=redact(message))
            return error_result(message)
        if result is None:
            log.error("Execution failed", error=NO_RESULT_MESSAGE)
            return error_result(NO_RESULT_MESSAGE)
        wall_ms = int((self._monotonic() - started) * 1000)
        mapped = map_result(result, published=publish.published, wall_clock_ms=wall_ms)
        log.info(
            "Execution completed",
            conclusion=mapped.conclusion,
            num_turns=mapped.num_turns,
            cost_usd=mapped.cost_usd,
            published=mapped.published,
        )
        return mapped

    def _options(
        self, context: ExecutionContext, config: ExecutorConfig, publish: PublishFlag, launcher: Path
    ) -> ClaudeAgentOptions:
        from kodiai.execution.tools import ToolEnv, build_mcp_servers

        client = self._installation_client
        env = ToolEnv(
            owner=context.owner,
            repo=context.repo,
            client_factory=(lambda: client(context.installation_id)) if client is not None else None,
            rest_factory=self._rest_factory(context) if self._rest_factory is not None else None,
            pacer=WritePacer(self._pacing),
            publish=publish,
            bot_handles=list(context.bot_handles),
            review_output_key=context.review_output_key,
            pr_number=context.pr_number,
            delivery_id=context.delivery_id,
            issue_number=context.target_number,
            thread_comment_id=context.comment_id,
            workspace_dir=context.workspace_dir,
            may_approve=context.may_approve,
        )
        servers = build_mcp_servers(
            env,
            comment_id=context.comment_id,
            enable_comment_tools=not context.write_mode,
            enable_inline_tools=not context.is_mention and not context.write_mode,
        )
        return build_agent_options(context, config, servers, self._credentials, cli_path=launcher)

    async def _stream(self, prompt: str, options: ClaudeAgentOptions, log: Logger) -> ResultMessage | None:
        from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, query

        from kodiai.execution.cli_transport import ClosingCLITransport

        transport: Transport = (
            self._transport_factory(options)
            if self._transport_factory
            else ClosingCLITransport(prompt=prompt, options=options)
        )
        result: ResultMessage | None = None
        stream = cast(AsyncGenerator[Any, None], query(prompt=prompt, options=options, transport=transport))
        try:
            async with aclosing(stream) as messages:
                async for message in messages:
                    if isinstance(message, SystemMessage) and message.subtype == "init":
                        log.info("Claude Code session started", session_id=message.data.get("session_id"))
                    elif isinstance(message, AssistantMessage):
                        log.debug("Assistant message", model=message.model)
                    elif isinstance(message, ResultMessage):
                        result = message
        except Exception as exc:
            # The CLI exits non-zero after an error result (error_max_turns, ...); the SDK then raises.
            # The result already received is what the run produced (conclusion "failure"), as in the TS SDK.
            if result is None:
                raise
            log.warning("Claude Code exited with an error after its result", error=redact(str(exc)))
        return result


def load_agent_sdk() -> None:
    """Import the Claude Agent SDK and the MCP tool servers: a few CPU-seconds that :class:`ClaudeAgentExecutor`
    pays at its first run otherwise. ``kodiai serve`` calls this on its warm-up thread when the model has
    credentials (without them no run can succeed, and a server that never runs the CLI never loads it)."""
    import kodiai.execution.cli_transport
    import kodiai.execution.tools  # noqa: F401
