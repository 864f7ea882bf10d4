"""Run the executor on a local review with GitHub replaced by a recorder (``kodiai review`` without
``--dry-run``): the model works on the local checkout, every tool runs for real, and what would have
been posted is returned instead of published."""

from __future__ import annotations

from pathlib import Path

from kodiai.execution.executor import ClaudeAgentExecutor, TransportFactory
from kodiai.execution.local_rest import RecordingGitHub
from kodiai.execution.local_review import LocalReview
from kodiai.execution.options import ModelCredentials
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.review.output_key import build_review_output_key

LOCAL_PR_NUMBER = 0
BOT_HANDLES = ["kodiai", "claude"]


def local_output_key(review: LocalReview) -> str:
    """A review-output key in the handler's format, with ``local`` for the action and delivery."""
    return build_review_output_key(
        installation_id=0,
        owner=review.owner,
        repo=review.repo,
        pr_number=LOCAL_PR_NUMBER,
        action="local",
        delivery_id="local",
        head_sha=review.head_sha,
    )


async def run_local_review(
    review: LocalReview,
    workspace: Path,
    *,
    credentials: ModelCredentials,
    transport_factory: TransportFactory | None = None,
    cli_path: str | Path | None = None,
) -> tuple[ExecutionResult, RecordingGitHub]:
    """Execute the review prompt on ``workspace``; return the result and the recorded output."""
    recorder = RecordingGitHub(LOCAL_PR_NUMBER, review.head_sha)
    executor = ClaudeAgentExecutor(
        installation_client=None,
        credentials=credentials,
        rest_factory=lambda _ctx: recorder.rest,
        transport_factory=transport_factory,
        cli_path=cli_path,
        pacing=PacingPolicy(min_write_interval=0.0),
    )
    context = ExecutionContext(
        workspace_dir=workspace,
        installation_id=0,
        owner=review.owner,
        repo=review.repo,
        event_type="pull_request.opened",
        pr_number=LOCAL_PR_NUMBER,
        prompt=review.prompt,
        trigger_body=review.prompt,
        review_output_key=local_output_key(review),
        delivery_id="local",
        dynamic_timeout_seconds=review.timeout_seconds,
        bot_handles=BOT_HANDLES,
    )
    return await executor.execute(context), recorder
