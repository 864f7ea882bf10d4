"""What every MCP tool shares: its environment, the publish flag, input validation and results.

Conventions (behaviour E2.0): success is one text item of compact JSON with ``None`` values
dropped; any failure is ``Error: <message>`` with the error flag set, so validation problems go back to
the model and nothing is posted.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kodiai.execution.pacing import WritePacer
from kodiai.github.rest import GitHubClientFactory, GitHubRest, RestApi
from kodiai.log import Logger, get_logger

M = TypeVar("M", bound=BaseModel)
ToolResult = dict[str, Any]

SERVER_VERSION = "0.1.0"


class PublishFlag:
    """Shared by a run's tools; flips to true after the first successful GitHub write."""

    def __init__(self) -> None:
        self.published = False

    def mark(self) -> None:
        self.published = True


@dataclass
class ToolEnv:
    """Everything a tool needs for one execution; built by the executor, never global."""

    owner: str
    repo: str
    client_factory: GitHubClientFactory | None
    pacer: WritePacer
    publish: PublishFlag
    bot_handles: list[str] = field(default_factory=list)
    review_output_key: str | None = None
    pr_number: int | None = None
    delivery_id: str | None = None
    #: The triggering event's issue/PR when it is not ``pr_number`` (an issue mention).
    issue_number: int | None = None
    #: The review comment that triggered the run: thread replies stay in its thread.
    thread_comment_id: int | None = None
    #: Replaces GitHub altogether (``kodiai review`` records what would be posted).
    rest_factory: Callable[[], RestApi] | None = None
    #: The checkout the ``git`` tools read (None: no git tools).
    workspace_dir: Path | None = None
    #: False on an untrusted author's PR: an approval becomes a COMMENT review.
    may_approve: bool = True

    @property
    def target_number(self) -> int | None:
        """The one issue/PR the write tools may target (None: every write is refused)."""
        return self.issue_number if self.issue_number is not None else self.pr_number

    def rest(self) -> RestApi:
        """A REST façade over a *fresh* installation client (one per tool call)."""
        if self.rest_factory is not None:
            return self.rest_factory()
        if self.client_factory is None:
            raise RuntimeError("No GitHub client configured for the tools")
        return GitHubRest(self.client_factory(), self.owner, self.repo)

    def logger(self, tool: str) -> Logger:
        return get_logger("kodiai.execution.tools", tool=tool, delivery_id=self.delivery_id)


def compact_json(value: dict[str, Any]) -> str:
    """``JSON.stringify`` output: no spaces, keys with undefined (``None``) values omitted."""
    return json.dumps({k: v for k, v in value.items() if v is not None}, separators=(",", ":"))


def ok(value: dict[str, Any]) -> ToolResult:
    return {"content": [{"type": "text", "text": compact_json(value)}]}


def error(text: str) -> ToolResult:
    return {"content": [{"type": "text", "text": text}], "is_error": True}


def parse_args(model: type[M], args: dict[str, Any]) -> M:
    """Validate tool arguments; raise ``ValueError`` with a readable message on bad input."""
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"Invalid arguments: {problems}") from None


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema the model sees (camelCase names, as in the original)."""
    return model.model_json_schema(by_alias=True)


def guarded(
    handler: Callable[[dict[str, Any]], Awaitable[ToolResult]], prefix: str = "Error: "
) -> Callable[[dict[str, Any]], Awaitable[ToolResult]]:
    """Turn any exception of ``handler`` into an error result ``<prefix><message>``."""

    async def run(args: dict[str, Any]) -> ToolResult:
        try:
            return await handler(args)
        except Exception as exc:  # every failure goes back to the model, never up the stack
            return error(f"{prefix}{exc}")

    return run
