"""The tool surface and the Claude Agent SDK options of a run (behaviour E1.3 steps 4–7, E1.4).

Decision on E1.4: the allow-list is **enforced**. The original ran under ``bypassPermissions`` where the
list was advisory; here the CLI runs in ``dontAsk`` mode, which denies every tool call the allow rules
do not approve. Explicit deny rules (which win over allow rules) say the rest: ``Bash`` always (git is
reached through the ``git`` MCP server's fixed sub-commands, never a shell: ``git log --output=…``
writes anywhere), file edits outside write mode, and ``WebFetch``/``WebSearch`` unless the run is a
mention whose trusted configuration lists allowed domains (then ``WebFetch`` only for those domains).

The CLI loads no settings at all (``setting_sources=[]``): a pull request's ``.claude/settings.json``
hooks, ``CLAUDE.md``, ``.mcp.json`` and agents are untrusted input and must not configure the agent.

The base tool set (``tools``, the CLI's ``--tools``) is the run's own tools and nothing else: without it
the CLI describes every built-in to the model on every request (Agent, Skill, Workflow, ScheduleWakeup,
ToolSearch… with the lists of agent types and skills), about 10,000 tokens a run never uses; with it the
MCP tools are listed directly instead of behind ``ToolSearch``. The deny rules stay as a second guard.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from pydantic import BaseModel, SecretStr

from kodiai.execution.config_view import ExecutorConfig
from kodiai.execution.types import ExecutionContext
from kodiai.settings import Settings

if TYPE_CHECKING:  # imported where options are built: the SDK costs seconds (executor.load_agent_sdk)
    from claude_agent_sdk import ClaudeAgentOptions
    from claude_agent_sdk.types import McpSdkServerConfig, SystemPromptPreset

ENTRYPOINT = "kodiai-github-app"
READ_TOOLS = ["Read", "Grep", "Glob"]
WRITE_TOOLS = ["Edit", "Write", "MultiEdit"]
WEB_TOOLS = ["WebSearch", "WebFetch"]
READ_ONLY_DENY = [*WRITE_TOOLS, "NotebookEdit"]
#: Never allowed: a shell runs anything (git included: see the ``git`` MCP server).
ALWAYS_DENY = ["Bash"]
#: A domain as a ``WebFetch(domain:…)`` rule may carry it: a host name, optionally ``*.``-prefixed
#: (anything else could break the CLI's rule syntax, so it is left out).
_DOMAIN = re.compile(
    r"^(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
#: Process secrets of the app itself, blanked in the CLI's environment (the SDK inherits os.environ and
#: can only override variables, not drop them). Every secret setting is blanked (see `app_secret_names`).
APP_SECRETS = (
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_BASE64",
    "GITHUB_WEBHOOK_SECRET",
    "VOYAGE_API_KEY",
)


def app_secret_names() -> frozenset[str]:
    """``APP_SECRETS`` plus the variable of every ``SecretStr`` setting, so a secret added to
    :class:`~kodiai.settings.Settings` later (e.g. ``METRICS_TOKEN``) is kept from the CLI too. The
    model credentials among them are set again, explicitly, by :func:`cli_env`."""
    names = set(APP_SECRETS)
    for name, field in Settings.model_fields.items():
        if field.annotation is SecretStr or SecretStr in get_args(field.annotation):
            names.add(name.upper())
    return frozenset(names)


class ModelCredentials(BaseModel):
    """The model credentials; they reach the CLI's environment and nothing else."""

    claude_code_oauth_token: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    endpoint: dict[str, SecretStr] = {}
    """Where the CLI sends model calls: ``ANTHROPIC_BASE_URL``, Bedrock or Vertex variables, by name."""

    def __repr__(self) -> str:  # never print even the masked container with values
        return "ModelCredentials(***)"

    @property
    def configured(self) -> bool:
        """True when the CLI has some way to authenticate: a key, an OAuth token, a gateway token, or a
        cloud provider (Bedrock and Vertex read their own cloud credentials). The CLI runs with an empty
        home, so nothing else can log it in."""
        present = {name for name, value in self.endpoint.items() if value.get_secret_value()}
        return bool(
            (self.claude_code_oauth_token and self.claude_code_oauth_token.get_secret_value())
            or (self.anthropic_api_key and self.anthropic_api_key.get_secret_value())
            or present & {"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"}
        )


def web_rules(domains: Sequence[str]) -> list[str]:
    """``WebFetch(domain:…)`` for each well-formed domain, then ``WebSearch``; nothing without one."""
    fetch = [f"WebFetch(domain:{d})" for d in dict.fromkeys(d.strip() for d in domains) if _DOMAIN.match(d)]
    return [*fetch, "WebSearch"] if fetch else []


def base_tools(context: ExecutionContext) -> list[str]:
    """The built-in tools the model is told about at all: read tools, the write tools in write mode, the
    web tools when a mention's trusted configuration allows some domain (MCP tools come on top)."""
    tools = list(READ_TOOLS)
    if context.write_mode:
        tools += WRITE_TOOLS
    if context.is_mention and web_rules(context.allowed_domains):
        tools += WEB_TOOLS
    return tools


def tool_lists(context: ExecutionContext, server_names: list[str]) -> tuple[list[str], list[str]]:
    """``(allowed_tools, disallowed_tools)`` for a run."""
    from kodiai.execution.tools import allowed_tool_patterns

    allowed = list(READ_TOOLS)
    if context.write_mode:
        allowed += WRITE_TOOLS
    web = web_rules(context.allowed_domains) if context.is_mention else []
    allowed += web
    allowed += allowed_tool_patterns(server_names)
    disallowed = list(ALWAYS_DENY)
    if not context.write_mode:
        disallowed += READ_ONLY_DENY
    if not web:
        disallowed += WEB_TOOLS
    return allowed, disallowed


def cli_env(credentials: ModelCredentials, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Overrides for the CLI's environment: entrypoint, no non-essential traffic, model credentials, app
    secrets blanked (the launcher of :mod:`kodiai.execution.sandbox_run` then drops every variable not on
    its allow-list; ``CLAUDE_CODE_*`` is on it)."""
    source = os.environ if environ is None else environ
    env = {name: "" for name in app_secret_names() if name in source}
    env["CLAUDE_CODE_ENTRYPOINT"] = ENTRYPOINT
    # no session-title request to a small model, no /api/hello probe, no telemetry or update checks
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if credentials.claude_code_oauth_token is not None:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = credentials.claude_code_oauth_token.get_secret_value()
    if credentials.anthropic_api_key is not None:
        env["ANTHROPIC_API_KEY"] = credentials.anthropic_api_key.get_secret_value()
    env.update({name: value.get_secret_value() for name, value in credentials.endpoint.items()})
    return env


def build_agent_options(
    context: ExecutionContext,
    config: ExecutorConfig,
    servers: dict[str, McpSdkServerConfig],
    credentials: ModelCredentials,
    *,
    cli_path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClaudeAgentOptions:
    """``ClaudeAgentOptions`` per E1.3 step 7 (with the enforced tool surface above). ``cli_path`` is
    the run's launcher when the executor runs it (sandbox, per-run ``HOME``, allow-listed env)."""
    from claude_agent_sdk import ClaudeAgentOptions

    system_prompt: SystemPromptPreset = {"type": "preset", "preset": "claude_code"}
    if config.system_prompt_append:
        system_prompt["append"] = config.system_prompt_append
    allowed, disallowed = tool_lists(context, list(servers))
    return ClaudeAgentOptions(
        cwd=str(context.workspace_dir),
        model=config.model,
        max_turns=config.max_turns,
        system_prompt=system_prompt,
        mcp_servers=dict(servers),
        tools=base_tools(context),
        allowed_tools=allowed,
        disallowed_tools=disallowed,
        setting_sources=[],
        permission_mode="dontAsk",
        env=cli_env(credentials, environ),
        cli_path=cli_path,
    )
