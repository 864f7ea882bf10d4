"""``pull_request.closed`` → decide the PR's held-back findings (issue 23, a port addition).

Merging needs write permission on the repository, so a merge is a writer's confirmation of the PR: its
findings that waited in ``pending_memories`` (the author lacked write permission) become learned memories,
recorded as confirmed by the user who merged. Closing unmerged discards them. The job runs on the
installation's lane like feedback sync and never raises: a failure is a warning and the findings stay
pending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kodiai.feedback.reactions import repository_of
from kodiai.feedback.trust import DecisionCounts, decide_on_close
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.jobs.lanes import JobContext
from kodiai.log import get_logger, redact
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

EVENT_KEY = "pull_request.closed"
JOB_TYPE = "memory-trust"


@dataclass(frozen=True)
class ClosedPull:
    """What the decision reads from the payload."""

    owner: str
    repo: str
    number: int
    merged: bool
    closed_by: str | None
    """``merged_by.login`` for a merge, the sender for a plain close."""

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"


def _login(value: object) -> str | None:
    login = value.get("login") if isinstance(value, dict) else None
    return login if isinstance(login, str) and login else None


def closed_pull(payload: Mapping[str, Any]) -> ClosedPull | None:
    """The closed PR of a ``pull_request.closed`` payload; None when the repository or number is missing."""
    pull = payload.get("pull_request")
    repository = repository_of(payload)
    if not isinstance(pull, dict) or repository is None:
        return None
    number = pull.get("number", payload.get("number"))
    if not isinstance(number, int):
        return None
    merged = pull.get("merged") is True
    closed_by = _login(pull.get("merged_by")) if merged else None
    return ClosedPull(
        owner=repository[0],
        repo=repository[1],
        number=number,
        merged=merged,
        closed_by=closed_by or _login(payload.get("sender")),
    )


class ClosedPullHandler:
    """Queues the decision; nothing to do without a knowledge store (no finding was held back)."""

    def __init__(self, deps: HandlerDeps) -> None:
        self.deps = deps

    async def __call__(self, event: WebhookEvent) -> None:
        knowledge = self.deps.knowledge
        pull = closed_pull(event.payload)
        if knowledge is None or pull is None:
            return
        await self.deps.queue.enqueue(
            event.installation_id,
            lambda: self.run(knowledge, pull, event.id),
            JobContext(
                delivery_id=event.id,
                event_name=event.name,
                action=event.action,
                job_type=JOB_TYPE,
                pr_number=pull.number,
            ),
        )

    async def run(self, knowledge: KnowledgeStore, pull: ClosedPull, delivery_id: str) -> None:
        log = get_logger(
            "kodiai.handlers.memory_trust", deliveryId=delivery_id, repo=pull.full_name, prNumber=pull.number
        )
        try:
            counts: DecisionCounts = await asyncio.to_thread(
                decide_on_close,
                knowledge,
                self.deps.memory,
                pull.full_name,
                pull.number,
                merged=pull.merged,
                by=pull.closed_by,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning(
                "Held-back findings not decided; they stay pending",
                err=redact(f"{type(exc).__name__}: {exc}"),
            )
            return
        if counts.promoted or counts.discarded:
            log.info(
                "Held-back findings decided",
                merged=pull.merged,
                by=pull.closed_by,
                promoted=counts.promoted,
                discarded=counts.discarded,
            )


def register(router: EventRouter, deps: HandlerDeps) -> None:
    router.register(EVENT_KEY, ClosedPullHandler(deps), name="memory-trust")
