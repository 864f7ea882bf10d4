"""Publish: what the handler itself posts after the model ran (behaviour R1 steps 44, 46, 47, 52, 53).

Every body goes through the outgoing-mention sanitiser. All of it is fail-open except the marker scan
before an approval, whose errors are logged like the approval's own.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from kodiai.compat.js import js_number_to_string
from kodiai.execution.error_comments import post_or_update_error_comment
from kodiai.execution.errors import classify_error, format_error_comment
from kodiai.execution.output_key import build_review_details_marker, build_review_output_marker
from kodiai.execution.types import ExecutionResult
from kodiai.github.models import IssueComment
from kodiai.github.pulls import PullRequestApi, bodies
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import Logger, redact
from kodiai.review.details import (
    ProfileSelection,
    ReviewDetailsInput,
    embed_review_details,
    find_comment_with_marker,
    format_review_details_summary,
)
from kodiai.review.diff_analysis import DiffAnalysis
from kodiai.review.plan import ReviewPlan
from kodiai.review.posted_texts import build_approval_body, build_cost_warning, should_post_cost_warning
from kodiai.review.postprocess import ProcessedReview
from kodiai.review.pr_intent import ParsedPRIntent, build_keyword_parsing_section
from kodiai.text.sanitizer import sanitize_outgoing_mentions


async def delete_filtered_comments(pr: PullRequestApi, processed: ProcessedReview, log: Logger) -> int:
    """Step 44: delete the inline comments of suppressed, low-confidence and deprioritised findings."""
    deleted = 0
    for comment_id in processed.filtered_comment_ids:
        try:
            await pr.delete_review_comment(comment_id)
            deleted += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning(
                "Failed to delete filtered inline comment",
                gate="inline-policy-filter",
                commentId=comment_id,
                err=redact(str(exc)),
            )
    return deleted


def review_details(
    *,
    key: str,
    plan: ReviewPlan,
    analysis: DiffAnalysis,
    intent: ParsedPRIntent,
    author_tier: str,
    processed: ProcessedReview,
    feedback_patterns: int,
    completed_at: datetime,
) -> ReviewDetailsInput:
    return ReviewDetailsInput(
        review_output_key=key,
        files_reviewed=analysis.metrics.total_files,
        lines_added=analysis.metrics.total_lines_added,
        lines_removed=analysis.metrics.total_lines_removed,
        profile=ProfileSelection(
            selected_profile=plan.profile.selected_profile,
            source=plan.profile.source,
            lines_changed=plan.profile.lines_changed,
        ),
        author_tier=author_tier,
        finding_counts=processed.counts,
        completed_at=completed_at,
        triage=plan.tiered if plan.tiered.is_large_pr else None,
        feedback_suppressed_patterns=feedback_patterns,
        prioritization=processed.prioritization,
        keyword_parsing=build_keyword_parsing_section(intent),
        diff_notes=plan.diff_notes,
    )


def _comment_id(comment: IssueComment) -> int:
    """The id of a comment found by its marker; an answer without one cannot be edited (fail-open step)."""
    if comment.id is None:
        raise LookupError("the comment carrying the marker has no id")
    return comment.id


async def publish_review_details(
    pr: PullRequestApi, details: ReviewDetailsInput, *, published: bool, handles: list[str], log: Logger
) -> None:
    """Step 46 (fail-open): embed into the run's summary comment when one was published, else upsert the
    standalone comment (found by the review-details marker; it carries no output marker)."""
    key = details.review_output_key
    log.info("Review Details attempt", gate="review-details-output", reviewOutputKey=key, attempt=True)

    async def standalone() -> None:
        comments = await pr.issue_comments()
        body = sanitize_outgoing_mentions(format_review_details_summary(details), handles)
        index = find_comment_with_marker(bodies(comments), build_review_details_marker(key))
        if index is None:
            await pr.create_issue_comment(body)
        else:
            await pr.update_issue_comment(_comment_id(comments[index]), body)

    async def embedded() -> None:
        comments = await pr.issue_comments()
        index = find_comment_with_marker(bodies(comments), build_review_output_marker(key))
        if index is None:
            raise LookupError("no summary comment carries this run's review output marker")
        summary = comments[index]
        new_body = embed_review_details(summary.body or "", details)
        await pr.update_issue_comment(_comment_id(summary), sanitize_outgoing_mentions(new_body, handles))

    async def publish() -> None:
        if published:
            try:
                await embedded()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info(
                    "Review Details not embedded; posting a standalone comment",
                    gate="review-details-output",
                    appendFallback=True,
                    reason=redact(str(exc)),
                )
        await standalone()

    await fail_open(log, "review-details-output", publish, None, "Review Details publication failed")


async def post_cost_warning(
    pr: PullRequestApi,
    result: ExecutionResult,
    *,
    enabled: bool,
    threshold: float,
    handles: list[str],
    log: Logger,
) -> bool:
    """Step 47's warning comment when the run cost more than ``telemetry.costWarningUsd``."""
    if not should_post_cost_warning(
        telemetry_enabled=enabled, cost_warning_usd=threshold, cost_usd=result.cost_usd
    ):
        return False
    body = sanitize_outgoing_mentions(build_cost_warning(result.cost_usd or 0.0, threshold), handles)

    async def post() -> bool:
        await pr.create_issue_comment(body)
        return True

    return await fail_open(log, "cost-warning", post, False, "Failed to post cost warning")


def error_detail(result: ExecutionResult, plan: ReviewPlan) -> str:
    """Step 52's detail: the timeout texts quote the estimate (Q4 kept), else the run's message."""
    seconds = js_number_to_string(plan.timeout.dynamic_timeout_seconds)
    if result.is_timeout and result.published:
        return f"Timed out after {seconds}s. PR complexity: {plan.timeout.reasoning}"
    if result.is_timeout:
        return f"Timed out after {seconds}s with no review output. PR complexity: {plan.timeout.reasoning}"
    return result.error_message or "An unexpected error occurred during review."


async def post_run_error(
    pr: PullRequestApi, result: ExecutionResult, plan: ReviewPlan, *, handles: list[str], log: Logger
) -> str:
    """Step 52: the classified error comment of a run that ended in ``error``; returns the category."""
    category = classify_error(
        Exception(result.error_message or "Unknown error"), bool(result.is_timeout), bool(result.published)
    )
    body = format_error_comment(category, error_detail(result, plan))
    await post_or_update_error_comment(
        pr.rest, issue_number=pr.number, body=body, bot_handles=handles, log=log
    )
    return category


async def auto_approve(
    pr: PullRequestApi,
    key: str,
    *,
    published: bool,
    merge_confidence: object | None,
    handles: list[str],
    log: Logger,
    may_approve: bool = True,
) -> bool:
    """Step 53: approve a clean run that published nothing, unless this run's marker is already there.

    ``may_approve=False`` (an untrusted author's PR) posts the same body as a COMMENT review: the PR's own
    text may have talked the model into silence, and the bot's approval could count toward required
    reviews."""
    if published:
        log.info("Auto-approval skipped", gate="auto-approve", skipReason="output-published")
        return False
    try:
        if await pr.find_marker(build_review_output_marker(key)) is not None:
            log.info("Auto-approval skipped", gate="auto-approve", skipReason="output-marker-present")
            return False
        body = sanitize_outgoing_mentions(build_approval_body(key, merge_confidence), handles)
        await pr.approve(body, counts=may_approve)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.error("Failed to submit approval review", gate="auto-approve", err=redact(str(exc)))
        return False
    outcome = "submitted-approval" if may_approve else "submitted-comment-review-untrusted-author"
    log.info("Evidence bundle", outcome=outcome, reviewOutputKey=key)
    return True
