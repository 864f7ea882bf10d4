"""Dependency-bump context (behaviour R1 steps 21–25): detection, advisories and release notes, merge
confidence, where the workspace uses the package's changed APIs, and scoped packages bumped together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from kodiai.github.workspace import Workspace
from kodiai.handler_kit.deps import UsageAnalyzer
from kodiai.handler_kit.fail_open import fail_open
from kodiai.handler_kit.usage_scan import UsageAnalysisResult
from kodiai.log import Logger
from kodiai.review.dep_bumps.detect import (
    DepBumpClassification,
    DepBumpDetails,
    DepBumpDetection,
    classify_dep_bump,
    detect_dep_bump,
    extract_dep_bump_details,
)
from kodiai.review.dep_bumps.enrichment import ChangelogContext, SecurityContext
from kodiai.review.dep_bumps.enrichment_fetch import DepEnricher
from kodiai.review.dep_bumps.merge_confidence import DepBumpContext, MergeConfidence, compute_merge_confidence
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.scope import ScopeGroup, detect_scope_coordination, extract_scoped_packages

USAGE_TIME_BUDGET_MS = 3000


class DepBumpSources(Protocol):
    """What this stage reads of the review's :class:`kodiai.review.sources.GatherSources` (named here, so the
    dependency-bump package does not import the review's sources back)."""

    @property
    def enrich_dep_bump(self) -> DepEnricher | None: ...

    @property
    def usage_analyzer(self) -> UsageAnalyzer: ...


class DepBumpFindings(BaseModel):
    """Steps 21–25; read by the prompt builder (``DepBumpPromptContext``) and by the approval text."""

    model_config = ConfigDict(frozen=True)

    detection: DepBumpDetection
    details: DepBumpDetails
    classification: DepBumpClassification
    security: SecurityContext | None = None
    changelog: ChangelogContext | None = None
    merge_confidence: MergeConfidence | None = None
    usage_evidence: UsageAnalysisResult | None = None
    scope_groups: list[ScopeGroup] | None = None


async def gather_dep_bump(
    facts: PullRequestFacts, all_changed: Sequence[str], ws: Workspace, sources: DepBumpSources, log: Logger
) -> DepBumpFindings | None:
    """Steps 21–25: detection, enrichment, merge confidence, usage and scope (each fail-open)."""

    async def detect() -> DepBumpFindings | None:
        detection = detect_dep_bump(facts.title, list(facts.labels), facts.head_ref, facts.author)
        if detection is None:
            return None
        details = extract_dep_bump_details(detection, facts.title, facts.body, all_changed, facts.head_ref)
        return DepBumpFindings(
            detection=detection,
            details=details,
            classification=classify_dep_bump(details.old_version, details.new_version),
        )

    found = await fail_open(log, "dep-bump-detect", detect, None)
    if found is None:
        return None
    update: dict[str, Any] = {}
    details = found.details
    enriched = False
    enrich = sources.enrich_dep_bump
    if details.package_name and not details.is_group and enrich is not None:
        nothing: tuple[SecurityContext | None, ChangelogContext | None] = (None, None)
        security, changelog = await fail_open(log, "dep-bump-enrich", lambda: enrich(details), nothing)
        update.update(security=security, changelog=changelog)
        enriched = True
    context = DepBumpContext(
        detection=found.detection,
        details=details,
        classification=found.classification,
        **({"security": update["security"], "changelog": update["changelog"]} if enriched else {}),
    )
    update["merge_confidence"] = compute_merge_confidence(context)
    changelog = update.get("changelog")
    breaking = changelog.breaking_changes if isinstance(changelog, ChangelogContext) else []
    if details.package_name and not details.is_group and breaking:
        package = details.package_name

        ecosystem = details.ecosystem or "npm"

        async def usage() -> UsageAnalysisResult | None:
            log.info(
                "Usage analysis",
                gate="usage-analysis",
                packageName=package,
                ecosystem=ecosystem,
                timeBudgetMs=USAGE_TIME_BUDGET_MS,
                snippets=len(breaking),
            )
            return await sources.usage_analyzer(
                str(ws.dir), package, breaking, ecosystem, USAGE_TIME_BUDGET_MS
            )

        update["usage_evidence"] = await fail_open(log, "usage-analysis", usage, None)
    if details.is_group:

        async def scope() -> list[ScopeGroup] | None:
            packages = extract_scoped_packages(facts.body)
            return (detect_scope_coordination(packages) or None) if packages else None

        update["scope_groups"] = await fail_open(log, "scope-coordination", scope, None)
    return found.model_copy(update=update)
