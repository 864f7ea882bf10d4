"""Phase A of a mention (behaviour E3.1–E3.3): cheap filters on the dispatcher's task, then enqueue.

Nothing here does I/O: an event that is not a mention, or that the app (or any bot) wrote itself, is
dropped before a job or a workspace exists. The dispatch settles when the job does, like the review's.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from kodiai.jobs.lanes import JobContext
from kodiai.log import get_logger
from kodiai.mention.deps import MentionDeps
from kodiai.mention.job import MentionJob, MentionRequest
from kodiai.mention.surface import MENTION_EVENT_KEYS, normalize_mention, pre_queue_skip
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

JOB_TYPE = "mention"


class MentionHandler:
    """``issue_comment.created``, ``pull_request_review_comment.created``, ``pull_request_review.submitted``
    → a queued mention job."""

    def __init__(self, deps: MentionDeps) -> None:
        self.deps = deps
        self._log = get_logger("kodiai.mention")

    async def __call__(self, event: WebhookEvent) -> None:
        payload: dict[str, Any] = event.payload
        slug = self.deps.review.app_slug
        log = self._log.bind(deliveryId=event.id, installationId=event.installation_id, action=event.action)
        skip = pre_queue_skip(event.name, event.action, payload, slug)
        # At info, as every other skip: "why did the bot not answer?" must be answerable at the default level.
        if skip == "self-or-bot-author":
            log.info("Skipping mention from self (comment-author defense)", skipReason=skip)
            return
        if skip is not None:
            log.info("Mention not started", gateResult="skipped", skipReason=skip)
            return
        try:
            surface = normalize_mention(event.name, payload)
        except (ValidationError, KeyError, TypeError) as exc:
            log.warning("Malformed mention payload; mention not started", err=str(exc)[:500])
            return
        if surface is None:
            return
        if surface.installation_id is None:
            surface = surface.model_copy(update={"installation_id": event.installation_id})
        request = MentionRequest(
            delivery_id=event.id,
            event_name=event.name,
            action=event.action or "",
            installation_id=event.installation_id,
            surface=surface,
        )

        async def job() -> str:
            return await MentionJob(self.deps, request).run()

        log.info("Enqueuing mention", gate="enqueue", surface=surface.surface, prNumber=surface.pr_number)
        await self.deps.review.queue.enqueue(
            event.installation_id,
            job,
            JobContext(
                delivery_id=event.id,
                event_name=event.name,
                action=event.action,
                job_type=JOB_TYPE,
                pr_number=surface.pr_number,
            ),
        )


def register(router: EventRouter, deps: MentionDeps) -> None:
    """The three mention event keys (E3.1); the handler re-checks event and action itself."""
    handler = MentionHandler(deps)
    for key in MENTION_EVENT_KEYS:
        router.register(key, handler, name="mention")
