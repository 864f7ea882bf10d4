"""Feedback sync (behaviour R1 step 55): on PR activity, read the 👍/👎 humans left on recent
finding comments and store them, so feedback suppression and learned memory see the team's verdicts.

Phase A gates and enqueues on the installation's lane (job type ``feedback-sync``); the job never
raises: every failure is a warning and the sync goes on with what it has. Beyond the original, a
reaction withdrawn on GitHub is dropped from the store, and the finding's learned memory gets (or
loses) its ``thumbs_up`` / ``thumbs_down`` row (:mod:`.memory`). Issue 23: only reactions by users
with write permission are kept (:mod:`.trust`); they also decide the held-back findings of untrusted
authors' PRs, which get no thumbs rows while they wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kodiai.feedback.memory_outcomes import MemorySyncCounts, sync_memory_outcomes
from kodiai.feedback.reactions import (
    MAX_CANDIDATES,
    reaction_records,
    recent_candidates,
    repository_of,
    targets_pull_request,
    unique_by_comment,
)
from kodiai.feedback.trust import (
    DecisionCounts,
    decide_from_feedback,
    reactor_access,
    split_by_access,
)
from kodiai.github.models import Reaction, parse_list
from kodiai.github.permissions import AccessLevel
from kodiai.github.rest import GitHubRest
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory
from kodiai.handler_kit.fail_open import fail_open
from kodiai.jobs.lanes import JobContext
from kodiai.log import get_logger, redact
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingCommentCandidate
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

FEEDBACK_SYNC_EVENT_KEYS = (
    "pull_request.opened",
    "pull_request.ready_for_review",
    "pull_request.review_requested",
    "issue_comment.created",
    "pull_request_review_comment.created",
    "pull_request_review.submitted",
)
JOB_TYPE = "feedback-sync"
REACTIONS_PER_PAGE = 100


@dataclass(frozen=True)
class FeedbackSyncRequest:
    delivery_id: str
    installation_id: int
    owner: str
    repo: str


@dataclass
class SyncCounts:
    """What one sync did, for its summary log line."""

    candidates: int = 0
    fetched_comments: int = 0
    failed_comments: int = 0
    kept_reactions: int = 0
    untrusted_reactions: int = 0
    """Human thumbs not kept: the reactor lacks write permission, or GitHub would not say."""
    added: int = 0
    withdrawn: int = 0
    memory: MemorySyncCounts = field(default_factory=MemorySyncCounts)
    decisions: DecisionCounts = field(default_factory=DecisionCounts)


def _pr_number(payload: Mapping[str, Any]) -> int | None:
    for key in ("pull_request", "issue"):
        item = payload.get(key)
        number = item.get("number") if isinstance(item, dict) else None
        if isinstance(number, int):
            return number
    return None


class FeedbackSyncJob:
    """One sync of one repository's recent finding comments."""

    def __init__(self, deps: HandlerDeps, knowledge: KnowledgeStore, request: FeedbackSyncRequest) -> None:
        self.deps = deps
        self.knowledge = knowledge
        self.req = request
        self.full_name = f"{request.owner}/{request.repo}"
        self.log = get_logger(
            "kodiai.handlers.feedback_sync",
            deliveryId=request.delivery_id,
            installationId=request.installation_id,
            repo=self.full_name,
        )
        self.counts = SyncCounts()
        self.access: dict[str, AccessLevel] = {}
        """Each reactor's permission, asked once per sync (and cached across syncs for a few minutes)."""

    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the sync is best-effort end to end: never fail the delivery
            self.log.warning("Feedback sync failed", err=redact(f"{type(exc).__name__}: {exc}"))

    async def _run(self) -> None:
        try:
            found = await asyncio.to_thread(
                self.knowledge.list_recent_finding_comment_candidates, self.full_name, MAX_CANDIDATES
            )
        except Exception as exc:
            self.log.warning(
                "Feedback sync candidate lookup failed", err=redact(f"{type(exc).__name__}: {exc}")
            )
            return
        candidates = unique_by_comment(recent_candidates(found, self.deps.clock()))
        self.counts.candidates = len(candidates)
        if not candidates:
            self.log.debug("Feedback sync found no recent finding comments")
            return
        rest = GitHubRest(
            self.deps.installation_client(self.req.installation_id), self.req.owner, self.req.repo
        )
        fetched: list[FindingCommentCandidate] = []
        for candidate in candidates:
            reactions = await self.fetch_reactions(rest, candidate.comment_id)
            if reactions is None:
                continue
            fetched.append(candidate)
            human = reaction_records(candidate, reactions, self.deps.app_slug)
            levels = await reactor_access(
                rest, self.req.owner, self.req.repo, {r.reactor_login for r in human}, self.access
            )
            records, unverified = split_by_access(human, levels)
            self.counts.untrusted_reactions += len(human) - len(records)
            # A full page may hide the rest: only a complete listing proves a stored reaction is gone.
            complete = len(reactions) < REACTIONS_PER_PAGE
            await self.persist(candidate.comment_id, records, complete=complete, keep=unverified)
        if fetched:
            await self.decide_held_back(fetched)
        if fetched and self.deps.memory is not None:
            await self.sync_memory(self.deps.memory, fetched)
        self.log_summary()

    async def fetch_reactions(self, rest: GitHubRest, comment_id: int) -> list[Reaction] | None:
        """One page of the comment's reactions; None (and a warning) when GitHub would not say."""
        try:
            data = await rest.get(f"/pulls/comments/{comment_id}/reactions", per_page=REACTIONS_PER_PAGE)
        except Exception as exc:
            self.counts.failed_comments += 1
            self.log.warning(
                "Feedback sync reaction fetch failed for review comment; continuing",
                commentId=comment_id,
                err=redact(f"{type(exc).__name__}: {exc}"),
            )
            return None
        self.counts.fetched_comments += 1
        return parse_list(Reaction, data)

    async def persist(
        self,
        comment_id: int,
        records: list[FeedbackReactionRecord],
        *,
        complete: bool,
        keep: list[int] | None = None,
    ) -> None:
        """Insert the kept reactions (insert-or-ignore), then, when the listing was ``complete``, forget
        stored ones GitHub no longer has (withdrawn, or changed to another reaction) or that no longer count
        (the reactor lost write permission). ``keep``: reaction ids not inserted but not removed either (the
        reactor's permission lookup failed: an outage neither adds nor erases feedback)."""
        self.counts.kept_reactions += len(records)
        store = self.knowledge
        try:
            self.counts.added += await asyncio.to_thread(store.record_feedback_reactions, records)
        except Exception as exc:
            self.log.warning(
                "Feedback sync reaction persistence failed; continuing",
                commentId=comment_id,
                err=redact(f"{type(exc).__name__}: {exc}"),
            )
        if not complete:
            return
        kept_ids = [r.reaction_id for r in records] + list(keep or [])
        self.counts.withdrawn += await fail_open(
            self.log,
            "feedback-withdrawn",
            lambda: asyncio.to_thread(store.remove_withdrawn_reactions, self.full_name, comment_id, kept_ids),
            0,
            "Feedback sync withdrawn-reaction cleanup failed; continuing",
        )

    async def decide_held_back(self, fetched: list[FindingCommentCandidate]) -> None:
        """Writers' thumbs promote or discard the held-back findings of untrusted authors' PRs."""
        knowledge, memory, ids = self.knowledge, self.deps.memory, [c.comment_id for c in fetched]
        self.counts.decisions = await fail_open(
            self.log,
            "feedback-trust",
            lambda: asyncio.to_thread(decide_from_feedback, knowledge, memory, self.full_name, ids),
            DecisionCounts(),
            "Feedback sync could not decide held-back findings; they stay pending",
        )

    async def sync_memory(self, memory: LearnedMemory, fetched: list[FindingCommentCandidate]) -> None:
        self.counts.memory = await fail_open(
            self.log,
            "feedback-memory",
            lambda: asyncio.to_thread(
                sync_memory_outcomes, self.knowledge, memory, self.req.owner, self.full_name, fetched
            ),
            MemorySyncCounts(),
            "Feedback sync learned-memory update failed; continuing",
        )

    def log_summary(self) -> None:
        c = self.counts
        self.log.info(
            "Feedback sync completed",
            candidates=c.candidates,
            fetchedComments=c.fetched_comments,
            failedComments=c.failed_comments,
            keptReactions=c.kept_reactions,
            untrustedReactions=c.untrusted_reactions,
            added=c.added,
            withdrawn=c.withdrawn,
            memoryWritten=c.memory.written,
            memoryRetired=c.memory.retired,
            memoryFailed=c.memory.failed,
            heldBackPromoted=c.decisions.promoted,
            heldBackDiscarded=c.decisions.discarded,
        )


class FeedbackSyncHandler:
    """PR activity → a queued sync of the repository's recent finding reactions."""

    def __init__(self, deps: HandlerDeps) -> None:
        self.deps = deps
        self._log = get_logger("kodiai.handlers.feedback_sync")

    async def __call__(self, event: WebhookEvent) -> None:
        knowledge = self.deps.knowledge
        if knowledge is None:
            return
        payload: dict[str, Any] = event.payload
        if not targets_pull_request(event.name, payload):
            return
        repository = repository_of(payload)
        if repository is None:
            return
        owner, repo = repository
        request = FeedbackSyncRequest(
            delivery_id=event.id, installation_id=event.installation_id, owner=owner, repo=repo
        )
        await self.deps.queue.enqueue(
            event.installation_id,
            FeedbackSyncJob(self.deps, knowledge, request).run,
            JobContext(
                delivery_id=event.id,
                event_name=event.name,
                action=event.action,
                job_type=JOB_TYPE,
                pr_number=_pr_number(payload),
            ),
        )


def register(router: EventRouter, deps: HandlerDeps) -> None:
    """Every event key of feedback sync, in one place."""
    handler = FeedbackSyncHandler(deps)
    for key in FEEDBACK_SYNC_EVENT_KEYS:
        router.register(key, handler, name="feedback-sync")
