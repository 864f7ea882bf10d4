"""Executor input and output (behaviour E1.1, E1.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kodiai.execution.config_view import ExecutorConfig

MENTION_EVENTS = frozenset(
    {"issue_comment.created", "pull_request_review_comment.created", "pull_request_review.submitted"}
)


class ExecutionContext(BaseModel):
    """One run of the model on a cloned workspace (the handler owns the workspace's cleanup)."""

    model_config = ConfigDict(frozen=True)

    workspace_dir: Path
    installation_id: int
    owner: str
    repo: str
    event_type: str = Field(description="'<event>.<action>', e.g. 'pull_request.opened'")
    pr_number: int | None = None
    comment_id: int | None = Field(default=None, description="Inline review-comment surface only")
    trigger_body: str = ""
    prompt: str | None = None
    review_output_key: str | None = None
    delivery_id: str | None = None
    dynamic_timeout_seconds: float | None = None
    bot_handles: list[str] = Field(default_factory=list)
    write_mode: bool = False
    issue_number: int | None = Field(
        default=None,
        description="The issue or PR of the triggering event: the only one the GitHub tools may target "
        "(None: the PR number)",
    )
    executor_config: ExecutorConfig | None = Field(
        default=None,
        description="The trusted configuration the handler chose (base or head); None: read the workspace's",
    )
    may_approve: bool = Field(
        default=True,
        description="False: an approval the model asks for is posted as a COMMENT review (untrusted PR author)",
    )
    allowed_domains: tuple[str, ...] = Field(
        default=(), description="Domains WebFetch may reach (mentions only; from the trusted config)"
    )

    @property
    def is_mention(self) -> bool:
        return self.event_type in MENTION_EVENTS

    @property
    def target_number(self) -> int | None:
        """The one issue/PR number the run's GitHub tools may write to."""
        return self.issue_number if self.issue_number is not None else self.pr_number


class ExecutionResult(BaseModel):
    """What a run produced. Numeric and identity fields are ``None`` on every ``error`` path."""

    conclusion: Literal["success", "failure", "error"]
    published: bool = False
    cost_usd: float | None = None
    num_turns: int | None = None
    duration_ms: int | None = None
    session_id: str | None = None
    error_message: str | None = None
    is_timeout: bool | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    stop_reason: str | None = None
