"""Dependency-bump merge history (behaviour R1 step 56): when a Dependabot/Renovate PR is merged,
remember what was bumped, how risky it looked and whether advisories were involved.

The record is the raw material for judging future bumps of the same package, so it is written once per
PR (insert-or-ignore on repo + PR number) and never at the cost of anything else: the job has its own
catch that only warns. Detection, details, enrichment and merge confidence are the review's own pure
pieces (:mod:`kodiai.review.dep_bumps.detect`, :mod:`kodiai.review.dep_bumps.merge_confidence`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Literal

from kodiai.github.models import PullRequestFile, parse_list
from kodiai.github.rest import GitHubRest
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.jobs.lanes import JobContext
from kodiai.log import get_logger, redact
from kodiai.review.dep_bumps.detect import classify_dep_bump, detect_dep_bump, extract_dep_bump_details
from kodiai.review.dep_bumps.enrichment import ChangelogContext, SecurityContext
from kodiai.review.dep_bumps.enrichment_fetch import dep_enricher
from kodiai.review.dep_bumps.merge_confidence import SEVERITY_RANK, DepBumpContext, compute_merge_confidence
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import DepBumpMergeHistoryRecord
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

EVENT_KEY = "pull_request.closed"
JOB_TYPE = "dep-bump-merge-history"
FILES_PER_PAGE = 100

AdvisoryStatus = Literal["unknown", "present", "none"]


def advisory_status(security: SecurityContext | None) -> AdvisoryStatus:
    """``unknown`` without advisory data, else whether any advisory was found."""
    if security is None:
        return "unknown"
    return "present" if security.advisories else "none"


def advisory_max_severity(security: SecurityContext | None) -> str | None:
    """The worst of critical > high > medium > low (case-insensitive) among the advisories, if any."""
    if security is None or not security.advisories:
        return None
    ranked = [a.severity.lower() for a in security.advisories if a.severity.lower() in SEVERITY_RANK]
    return max(ranked, key=SEVERITY_RANK.__getitem__) if ranked else None


def _compact(value: Any) -> str:
    """``JSON.stringify`` form: no spaces."""
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class MergedPull:
    """What the job reads from the ``pull_request.closed`` payload."""

    delivery_id: str
    installation_id: int
    owner: str
    repo: str
    number: int
    title: str
    body: str | None
    author: str
    head_ref: str
    labels: tuple[str, ...]
    merged_at: str | None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"


def merged_pull(event: WebhookEvent) -> MergedPull | None:
    """The merged PR of a ``pull_request.closed`` payload; None when it was not merged or the repository
    owner/name is missing."""
    payload = event.payload
    pull, repository = payload.get("pull_request"), payload.get("repository")
    if not isinstance(pull, dict) or pull.get("merged") is not True or not isinstance(repository, dict):
        return None
    owner = repository.get("owner")
    login = owner.get("login") if isinstance(owner, dict) else None
    name = repository.get("name")
    number = pull.get("number", payload.get("number"))
    if not (isinstance(login, str) and login and isinstance(name, str) and name and isinstance(number, int)):
        return None
    user, head = pull.get("user"), pull.get("head")
    author = user.get("login") if isinstance(user, dict) else None
    head_ref = head.get("ref") if isinstance(head, dict) else None
    labels = pull.get("labels")
    body, merged_at, title = pull.get("body"), pull.get("merged_at"), pull.get("title")
    return MergedPull(
        delivery_id=event.id,
        installation_id=event.installation_id,
        owner=login,
        repo=name,
        number=number,
        title=title if isinstance(title, str) else "",
        body=body if isinstance(body, str) else None,
        author=author if isinstance(author, str) else "",
        head_ref=head_ref if isinstance(head_ref, str) else "",
        labels=tuple(
            str(label["name"])
            for label in labels or []
            if isinstance(label, dict) and isinstance(label.get("name"), str)
        ),
        merged_at=merged_at if isinstance(merged_at, str) else None,
    )


class DepBumpHistoryJob:
    def __init__(self, deps: HandlerDeps, knowledge: KnowledgeStore, pull: MergedPull) -> None:
        self.deps = deps
        self.knowledge = knowledge
        self.pull = pull
        self.log = get_logger(
            "kodiai.review.dep_bumps.history",
            deliveryId=pull.delivery_id,
            installationId=pull.installation_id,
            repo=pull.full_name,
            prNumber=pull.number,
        )

    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.log.warning(
                "Failed to record dep bump merge history", err=redact(f"{type(exc).__name__}: {exc}")
            )

    async def _run(self) -> None:
        pull = self.pull
        detection = detect_dep_bump(pull.title, list(pull.labels), pull.head_ref, pull.author)
        if detection is None:
            return
        client = self.deps.installation_client(pull.installation_id)
        files = await self.changed_files(GitHubRest(client, pull.owner, pull.repo))
        details = extract_dep_bump_details(detection, pull.title, pull.body, files, pull.head_ref)
        classification = classify_dep_bump(details.old_version, details.new_version)
        enrichment: dict[str, SecurityContext | ChangelogContext | None] = {}
        if details.package_name and details.ecosystem:  # unlike the review, no npm default
            security, changelog = await dep_enricher(client, self.deps.registry, self.log)(details)
            enrichment = {"security": security, "changelog": changelog}
        context = DepBumpContext(
            detection=detection, details=details, classification=classification, **enrichment
        )
        confidence = compute_merge_confidence(context)
        security = context.security
        record = DepBumpMergeHistoryRecord(
            repo=pull.full_name,
            pr_number=pull.number,
            merged_at=pull.merged_at,
            delivery_id=pull.delivery_id,
            source=detection.source,
            signals_json=_compact(detection.signals),
            package_name=details.package_name,
            old_version=details.old_version,
            new_version=details.new_version,
            semver_bump_type=classification.bump_type,
            merge_confidence_level=confidence.level,
            merge_confidence_rationale_json=_compact(confidence.rationale),
            advisory_status=advisory_status(security),
            advisory_max_severity=advisory_max_severity(security),
            is_security_bump=security.is_security_bump if security is not None else None,
        )
        inserted = await asyncio.to_thread(self.knowledge.record_dep_bump_merge_history, record)
        self.log.info(
            "Dep bump merge history recorded",
            packageName=details.package_name,
            mergeConfidenceLevel=confidence.level,
            inserted=inserted,
        )

    async def changed_files(self, rest: GitHubRest) -> list[str]:
        """One page of the PR's file names; a failure is a warning and no files."""
        try:
            data = await rest.get(f"/pulls/{self.pull.number}/files", per_page=FILES_PER_PAGE)
        except Exception as exc:
            self.log.warning(
                "Dep bump merge history could not list PR files; continuing without them",
                err=redact(f"{type(exc).__name__}: {exc}"),
            )
            return []
        return [f.filename for f in parse_list(PullRequestFile, data) if f.filename is not None]


class DepBumpHistoryHandler:
    """``pull_request.closed`` of a merged PR → a queued merge-history record (dependency bumps only)."""

    def __init__(self, deps: HandlerDeps) -> None:
        self.deps = deps

    async def __call__(self, event: WebhookEvent) -> None:
        knowledge = self.deps.knowledge
        if knowledge is None:
            return
        pull = merged_pull(event)
        if pull is None:
            return
        await self.deps.queue.enqueue(
            event.installation_id,
            DepBumpHistoryJob(self.deps, knowledge, pull).run,
            JobContext(
                delivery_id=event.id,
                event_name=event.name,
                action=event.action,
                job_type=JOB_TYPE,
                pr_number=pull.number,
            ),
        )


def register(router: EventRouter, deps: HandlerDeps) -> None:
    router.register(EVENT_KEY, DepBumpHistoryHandler(deps), name="dep-bump-merge-history")
