"""Phase A of the review (behaviour R1 steps 1–7): gate the webhook, then enqueue the job.

Runs on the dispatcher's task; everything slow happens in the job on the installation's lane, under
the global review cap. The dispatch settles when the job does, so the job journal knows whether the
review finished (a crash mid-review replays the delivery; the output key makes the replay idempotent).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from kodiai.execution.output_key import build_review_output_key
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.jobs.lanes import JobContext
from kodiai.log import get_logger
from kodiai.review.job import ReviewJob, ReviewRequest
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.trigger import REVIEW_ACTIONS, clone_plan, phase_a_skip
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.payloads import PullRequestEvent
from kodiai.webhook.router import EventRouter

REVIEW_EVENT_KEYS = tuple(f"pull_request.{action}" for action in REVIEW_ACTIONS)
JOB_TYPE = "pull-request-review"


def facts_from_payload(event: PullRequestEvent) -> PullRequestFacts:
    pull, repository = event.pull_request, event.repository
    return PullRequestFacts(
        owner=repository.owner.login,
        repo=repository.name,
        number=pull.number,
        title=pull.title,
        body=pull.body,
        author=pull.user.login if pull.user else "",
        author_association=pull.author_association or "NONE",
        base_ref=pull.base.ref,
        base_sha=pull.base.sha,
        head_ref=pull.head.ref,
        head_sha=pull.head.sha,
        labels=tuple(label.name for label in pull.labels),
        additions=pull.additions,
        deletions=pull.deletions,
        commit_count=pull.commits,
    )


class ReviewHandler:
    """``pull_request.{opened,ready_for_review,review_requested,synchronize}`` → a queued review."""

    def __init__(self, deps: HandlerDeps) -> None:
        self.deps = deps
        self._log = get_logger("kodiai.handlers.review")

    async def __call__(self, event: WebhookEvent) -> None:
        payload: dict[str, Any] = event.payload
        action = event.action or ""
        log = self._log.bind(deliveryId=event.id, installationId=event.installation_id, action=action)
        skip = phase_a_skip(action, payload, self.deps.app_slug)
        if skip is not None:
            level = log.warning if skip == "missing-or-malformed-reviewer-payload" else log.info
            level(
                "Review not started", gate="review_requested_reviewer", gateResult="skipped", skipReason=skip
            )
            self.deps.metrics.reviews.labels(f"skipped:{skip}").inc()
            return
        try:
            parsed = PullRequestEvent.model_validate(payload)
            facts = facts_from_payload(parsed)
            clone = clone_plan(payload)
        except (ValidationError, KeyError, TypeError) as exc:
            log.warning("Malformed pull_request payload; review not started", err=str(exc)[:500])
            self.deps.metrics.reviews.labels("skipped:malformed-payload").inc()
            return
        key = build_review_output_key(
            installation_id=event.installation_id,
            owner=facts.owner,
            repo=facts.repo,
            pr_number=facts.number,
            action=action,
            delivery_id=event.id,
            head_sha=facts.head_sha or None,
        )
        request = ReviewRequest(
            delivery_id=event.id,
            event_name=event.name,
            action=action,
            installation_id=event.installation_id,
            facts=facts,
            clone=clone,
            review_output_key=key,
        )

        async def job() -> str:
            async with self.deps.review_limit.slot():
                outcome = await ReviewJob(self.deps, request).run()
            self.deps.metrics.reviews.labels(
                outcome.split(":", 1)[0] if outcome.startswith("error") else outcome
            ).inc()
            return outcome

        log.info("Enqueuing review", gate="enqueue", prNumber=facts.number)
        await self.deps.queue.enqueue(
            event.installation_id,
            job,
            JobContext(
                delivery_id=event.id,
                event_name=event.name,
                action=action,
                job_type=JOB_TYPE,
                pr_number=facts.number,
            ),
        )
        log.info("Review job finished", gate="enqueue", prNumber=facts.number)


def register(router: EventRouter, deps: HandlerDeps) -> None:
    """Every event key of the review, in one place."""
    handler = ReviewHandler(deps)
    for key in REVIEW_EVENT_KEYS:
        router.register(key, handler, name="review")
