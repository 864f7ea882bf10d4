"""Gather: everything a review is planned from (spec/review.md §1 steps 15, 18–32).

Shared by the webhook job and ``kodiai review``: what differs between them (where commit messages, the
author tier and dependency advisories come from, whether a knowledge store exists) is a
:class:`GatherSources`; the workspace is a real git checkout either way. The step list below marks each
step fail-open (:func:`fail_open`) or fail-closed (a bare ``await``) as the spec does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.config import RepoConfig
from kodiai.github.workspace import Workspace
from kodiai.handlers.deps import LearnedMemory, UsageAnalyzer
from kodiai.handlers.fail_open import fail_open
from kodiai.handlers.review.diff import DiffCollection, collect_diff
from kodiai.learning.calibration import resolve_cut
from kodiai.learning.pipeline import RetrievalOutcome, retrieve_context, signal_configs
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from kodiai.review.delta import PriorFinding as DeltaPriorFinding
from kodiai.review.dep_bump import (
    DepBumpClassification,
    DepBumpDetails,
    DepBumpDetection,
    classify_dep_bump,
    detect_dep_bump,
    extract_dep_bump_details,
)
from kodiai.review.dep_enrichment import ChangelogContext, SecurityContext
from kodiai.review.diff_analysis import DiffAnalysis, FileLineStats, analyze_diff, parse_numstat_per_file
from kodiai.review.file_risk import TieredFiles, compute_file_risk_scores, triage_files_by_risk
from kodiai.review.incremental import GitResult, IncrementalDiffResult, compute_incremental_diff
from kodiai.review.merge_confidence import DepBumpContext, MergeConfidence, compute_merge_confidence
from kodiai.review.plan import PlanInput
from kodiai.review.pr_intent import DEFAULT_EMPTY_INTENT, CommitMessage, ParsedPRIntent, parse_pr_intent
from kodiai.review.prompt import (
    DepBumpPromptContext,
    PathInstructionMatch,
    build_retrieval_context,
    match_path_instructions,
)
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.scope import ScopeGroup, detect_scope_coordination, extract_scoped_packages
from kodiai.review.usage_scan import UsageAnalysisResult, analyze_package_usage
from kodiai.storage.knowledge_models import PriorFinding
from kodiai.text.glob import compile_glob_set, normalize_skip_paths

USAGE_TIME_BUDGET_MS = 3000
TOP_FILE_PATHS = 15

CommitSource = Callable[[int], Awaitable[list[tuple[str, str]]]]
DepEnricher = Callable[[DepBumpDetails], Awaitable[tuple[SecurityContext | None, ChangelogContext | None]]]


@dataclass(frozen=True)
class GatherSources:
    """Where gather reads what the workspace cannot tell it."""

    commits: CommitSource | None
    """``(sha, message)`` of the PR's commits (None: none available, e.g. a local review reads git)."""
    author_tier: Callable[[], Awaitable[str]] | None = None
    enrich_dep_bump: DepEnricher | None = None
    knowledge_prior_findings: Callable[[str], list[PriorFinding]] | None = None
    """Unsuppressed findings of the review at a head SHA (knowledge store present)."""
    last_reviewed_head_sha: str | None = None
    """The newest completed run's head SHA, read *before* this run's claim (the Q2 fix)."""
    incremental_enabled: bool = False
    memory: LearnedMemory | None = None
    usage_analyzer: UsageAnalyzer = analyze_package_usage
    now: datetime | None = None


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


RetrievalStatus = Literal["used", "disabled", "no-store", "no-embedding", "failed"]


class RetrievalStep(BaseModel):
    """What step 32 did: the outcome when it ran, else why it did not."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    status: RetrievalStatus
    query: str | None = None
    outcome: RetrievalOutcome | None = None
    detail: str | None = None


class Gathered(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    intent: ParsedPRIntent
    author_tier: str
    incremental: IncrementalDiffResult | None
    diff: DiffCollection
    changed_files: list[str]
    """After ``review.skipPaths`` (empty means every file was skipped: no review)."""
    review_files: list[str]
    analysis: DiffAnalysis
    per_file_stats: dict[str, FileLineStats]
    tiered: TieredFiles
    prompt_files: list[str]
    path_matches: list[PathInstructionMatch]
    prior_findings: list[PriorFinding]
    dep_bump: DepBumpFindings | None
    retrieval: RetrievalStep

    @property
    def lines_changed(self) -> int | float:
        """numstat added + removed over *all* changed files (Q6: skipped files included)."""
        return self.analysis.metrics.total_lines_added + self.analysis.metrics.total_lines_removed


async def parse_intent(facts: PullRequestFacts, sources: GatherSources, log: Any) -> ParsedPRIntent:
    """Step 15 (fail-open): bracket tags, conventional type and breaking-change signals."""

    async def work() -> ParsedPRIntent:
        if facts.commit_count is None:
            # Q14 kept: without ``pull_request.commits`` the original's listing fails; empty intent.
            raise ValueError("pull_request.commits is missing")
        listed = await sources.commits(facts.commit_count) if sources.commits and facts.commit_count else []
        commits = [CommitMessage(sha=sha[:7], message=message.split("\n", 1)[0]) for sha, message in listed]
        return parse_pr_intent(facts.title, facts.body, commits)

    return await fail_open(log, "keyword-parse", work, DEFAULT_EMPTY_INTENT)


def skip_filter(config: RepoConfig, changed: Sequence[str]) -> list[str]:
    """Step 26: changed files minus ``review.skipPaths`` matches (normalised, picomatch ``dot: true``)."""
    patterns = normalize_skip_paths(config.review.skip_paths)
    if not patterns:
        return list(changed)
    matcher = compile_glob_set(tuple(patterns))
    return [path for path in changed if not matcher.matches(path)]


async def gather_dep_bump(
    facts: PullRequestFacts, all_changed: Sequence[str], ws: Workspace, sources: GatherSources, log: Any
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


async def gather_retrieval(
    facts: PullRequestFacts,
    config: RepoConfig,
    analysis: DiffAnalysis,
    intent: ParsedPRIntent,
    author_tier: str,
    review_files: Sequence[str],
    sources: GatherSources,
    log: Any,
) -> RetrievalStep:
    """Step 32 (fail-open): query → embed → isolation → rerank → recency → calibrated cut → labels."""
    settings = config.knowledge.retrieval
    if not settings.enabled:
        return RetrievalStep(status="disabled", detail="knowledge.retrieval.enabled is false")
    memory = sources.memory
    if memory is None:
        return RetrievalStep(status="no-store", detail="no learned-memory store")
    query = build_retrieval_query(
        RetrievalQuerySignals(
            pr_title=facts.title,
            pr_body=facts.body,
            conventional_type=intent.conventional_type.type if intent.conventional_type else None,
            detected_languages=list(analysis.files_by_language),
            risk_signals=analysis.risk_signals,
            author_tier=author_tier,
            top_file_paths=list(review_files[:TOP_FILE_PATHS]),
        )
    )
    vector = await asyncio.to_thread(memory.embeddings.generate, query, "query")
    if vector is None:
        return RetrievalStep(status="no-embedding", query=query)
    confidence, ambiguity = signal_configs(settings.confidence_labels, settings.ambiguity_signal)

    def run() -> RetrievalOutcome:
        return retrieve_context(
            memory.isolation,
            vector,
            repo=facts.full_name,
            owner=facts.owner,
            sharing_enabled=config.knowledge.sharing.enabled,
            pr_languages=list(analysis.files_by_language),
            top_k=int(settings.top_k),
            distance_threshold=settings.distance_threshold,
            adaptive=settings.adaptive,
            now=sources.now,
            cut=resolve_cut(memory.embeddings.model, settings.cut_strategy, settings.calibration),
            confidence=confidence,
            ambiguity=ambiguity,
        )

    outcome = await asyncio.to_thread(run)
    log.info(
        "Retrieval completed",
        gate="adaptive-threshold",
        thresholdMethod=outcome.threshold.method,
        threshold=outcome.threshold.threshold,
        candidates=outcome.quality.candidate_count,
        results=outcome.quality.result_count,
    )
    return RetrievalStep(status="used", query=query, outcome=outcome)


class _WorkspaceGit:
    """The incremental-diff ``GitRunner`` over the workspace (its auth header included)."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws

    def __call__(self, args: Sequence[str], cwd: str) -> GitResult:
        code, out = self._ws.git_blocking(*args)
        return GitResult(returncode=code, stdout=out)


async def gather(
    facts: PullRequestFacts,
    config: RepoConfig,
    ws: Workspace,
    sources: GatherSources,
    log: Any,
    *,
    base: str,
    base_ref: str | None,
    head: str = "HEAD",
) -> Gathered:
    """Run the gather steps in the spec's order; ``base`` is what ``head`` is diffed against."""
    intent = await parse_intent(facts, sources, log)
    tier = "regular"
    if sources.author_tier is not None:
        tier = await fail_open(log, "author-tier", sources.author_tier, "regular")

    incremental: IncrementalDiffResult | None = None
    if sources.incremental_enabled:
        last = sources.last_reviewed_head_sha
        computed = await asyncio.to_thread(
            lambda: compute_incremental_diff(
                workspace_dir=str(ws.dir),
                repo=facts.full_name,
                pr_number=facts.number,
                get_last_reviewed_head_sha=lambda _repo, _pr: last,
                git=_WorkspaceGit(ws),
                logger=log,
            )
        )
        log.info("Incremental diff", gate="incremental-diff", mode=computed.mode, reason=computed.reason)
        incremental = computed

    diff = await collect_diff(ws, base, base_ref=base_ref, head=head)
    log.info(
        "Diff collected",
        gate="diff-collection",
        strategy=diff.strategy,
        mergeBaseRecovered=diff.merge_base_recovered,
        deepenAttempts=diff.deepen_attempts,
        unshallowAttempted=diff.unshallow_attempted,
        diffRange=diff.diff_range,
        changedFiles=len(diff.changed_files),
    )
    dep_bump = await gather_dep_bump(facts, diff.changed_files, ws, sources, log)
    changed = skip_filter(config, diff.changed_files)
    review_files = changed
    if (
        incremental is not None
        and incremental.mode == "incremental"
        and incremental.changed_files_since_last_review
    ):
        since = set(incremental.changed_files_since_last_review)
        review_files = [f for f in changed if f in since]

    categories = (
        config.review.file_categories.model_dump(exclude_none=True) if config.review.file_categories else None
    )
    analysis = analyze_diff(
        {
            "changed_files": changed,
            "numstat_lines": diff.numstat_lines,
            "diff_content": diff.diff_content if len(changed) <= 200 else None,
            "file_categories": categories,
        }
    )
    per_file = parse_numstat_per_file(diff.numstat_lines)
    large = config.large_pr
    scores = compute_file_risk_scores(
        review_files, per_file, analysis.files_by_category, large.risk_weights.model_dump()
    )
    tiered = triage_files_by_risk(
        scores,
        int(large.file_threshold),
        int(large.full_review_count),
        int(large.abbreviated_count),
        len(changed),
    )
    prompt_files = (
        [f.file_path for f in [*tiered.full, *tiered.abbreviated]]
        if tiered.is_large_pr
        else list(review_files)
    )
    log.info(
        "Large PR triage", gate="large-pr-triage", isLargePR=tiered.is_large_pr, promptFiles=len(prompt_files)
    )
    path_matches = (
        match_path_instructions(config.review.path_instructions, changed)
        if config.review.path_instructions
        else []
    )

    prior: list[PriorFinding] = []
    if (
        incremental is not None
        and incremental.mode == "incremental"
        and incremental.last_reviewed_head_sha
        and sources.knowledge_prior_findings is not None
    ):
        head = incremental.last_reviewed_head_sha
        reader = sources.knowledge_prior_findings
        prior = await fail_open(log, "prior-findings", lambda: asyncio.to_thread(reader, head), [])

    retrieval = await fail_open(
        log,
        "retrieval",
        lambda: gather_retrieval(facts, config, analysis, intent, tier, review_files, sources, log),
        RetrievalStep(status="failed"),
    )
    return Gathered(
        intent=intent,
        author_tier=tier,
        incremental=incremental,
        diff=diff,
        changed_files=changed,
        review_files=review_files,
        analysis=analysis,
        per_file_stats=per_file,
        tiered=tiered,
        prompt_files=prompt_files,
        path_matches=path_matches,
        prior_findings=prior,
        dep_bump=dep_bump,
        retrieval=retrieval,
    )


def plan_input(facts: PullRequestFacts, config: RepoConfig, gathered: Gathered) -> PlanInput:
    """What planning reads from the gathered facts (shared with the local review)."""
    outcome = gathered.retrieval.outcome
    retrieval = (
        build_retrieval_context(
            outcome.results,
            [c for c in outcome.confidence] if outcome.confidence is not None else None,
            config.knowledge.retrieval.max_context_chars,
            ambiguity=outcome.ambiguity,
        )
        if outcome is not None and outcome.results
        else None
    )
    return PlanInput(
        facts=facts,
        config=config,
        intent=gathered.intent,
        author_tier=gathered.author_tier,
        analysis=gathered.analysis,
        changed_files=gathered.changed_files,
        prompt_files=gathered.prompt_files,
        tiered=gathered.tiered,
        lines_changed=gathered.lines_changed,
        path_matches=gathered.path_matches,
        incremental=gathered.incremental,
        prior_findings=[DeltaPriorFinding.model_validate(p.model_dump()) for p in gathered.prior_findings],
        retrieval=retrieval,
        dep_bump=DepBumpPromptContext.model_validate(gathered.dep_bump) if gathered.dep_bump else None,
        diff_range=gathered.diff.diff_range,
    )
