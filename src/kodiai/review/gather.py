"""Gather: everything a review is planned from (behaviour R1 steps 15, 18–32).

Shared by the webhook job and ``kodiai review``: what differs between them (where commit messages, the
author tier and dependency advisories come from, whether a knowledge store exists) is a
:class:`GatherSources`; the workspace is a real git checkout either way. The step list below marks each
step fail-open (:func:`fail_open`) or fail-closed (a bare ``await``) as the spec does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.compat.glob import compile_glob_set, normalize_skip_paths
from kodiai.config import RepoConfig
from kodiai.github.workspace import GitCommandError, Workspace
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import Logger
from kodiai.review.delta import PriorFinding as DeltaPriorFinding
from kodiai.review.dep_bumps.review_stage import DepBumpFindings, gather_dep_bump
from kodiai.review.diff_analysis import DiffAnalysis, FileLineStats, analyze_diff, parse_numstat_per_file
from kodiai.review.diff_collect import (
    DEFAULT_LIMITS,
    MAX_FILES_FOR_FULL_DIFF,
    DiffCollection,
    collect_diff,
)
from kodiai.review.file_risk import RiskWeights, TieredFiles, compute_file_risk_scores, triage_files_by_risk
from kodiai.review.incremental import GitResult, IncrementalDiffResult, compute_incremental_diff
from kodiai.review.plan import PlanInput
from kodiai.review.pr_intent import DEFAULT_EMPTY_INTENT, CommitMessage, ParsedPRIntent, parse_pr_intent
from kodiai.review.prompt import (
    DepBumpPromptContext,
    PathInstructionMatch,
    build_retrieval_context,
    match_path_instructions,
)
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.retrieval import RetrievalStep, gather_retrieval
from kodiai.review.sources import GatherSources
from kodiai.storage.knowledge_models import PriorFinding

USAGE_TIME_BUDGET_MS = 3000
TOP_FILE_PATHS = 15


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
    prior_findings: list[DeltaPriorFinding]
    """The last completed review's unsuppressed findings (incremental mode only)."""
    dep_bump: DepBumpFindings | None
    retrieval: RetrievalStep

    @property
    def lines_changed(self) -> int | float:
        """numstat added + removed over *all* changed files (Q6: skipped files included)."""
        return self.analysis.metrics.total_lines_added + self.analysis.metrics.total_lines_removed


async def parse_intent(facts: PullRequestFacts, sources: GatherSources, log: Logger) -> ParsedPRIntent:
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


class _WorkspaceGit:
    """The incremental-diff ``GitRunner`` over the workspace (its auth header included), called from a
    worker thread. A ``diff`` (the changed-file listing) is streamed on the job's event loop with the
    listing cap: a listing cut at the cap is reported as a failed command, so the review falls back to
    a full one instead of trusting a partial list."""

    def __init__(self, ws: Workspace, loop: asyncio.AbstractEventLoop, max_bytes: int) -> None:
        self._ws = ws
        self._loop = loop
        self._max_bytes = max_bytes

    def __call__(self, args: Sequence[str], cwd: str) -> GitResult:
        if not args or args[0] != "diff":
            code, out = self._ws.git_blocking(*args)
            return GitResult(returncode=code, stdout=out)
        chunks = bytearray()

        def keep(chunk: bytes) -> bool:
            chunks.extend(chunk)
            return True

        try:
            outcome = asyncio.run_coroutine_threadsafe(
                self._ws.git_stream(list(args), keep, max_bytes=self._max_bytes), self._loop
            ).result()
        except GitCommandError:
            return GitResult(returncode=1)
        if outcome.stopped:
            return GitResult(returncode=1)
        return GitResult(returncode=0, stdout=chunks.decode("utf-8", "replace"))


async def gather(
    facts: PullRequestFacts,
    config: RepoConfig,
    ws: Workspace,
    sources: GatherSources,
    log: Logger,
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
        loop = asyncio.get_running_loop()
        computed = await asyncio.to_thread(
            lambda: compute_incremental_diff(
                workspace_dir=str(ws.dir),
                repo=facts.full_name,
                pr_number=facts.number,
                get_last_reviewed_head_sha=lambda _repo, _pr: last,
                git=_WorkspaceGit(ws, loop, DEFAULT_LIMITS.max_listing_bytes),
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
            "diff_content": diff.diff_content if len(changed) <= MAX_FILES_FOR_FULL_DIFF else None,
            "hunks_count": diff.hunks_count if len(changed) <= MAX_FILES_FOR_FULL_DIFF else None,
            "file_categories": categories,
        }
    )
    per_file = parse_numstat_per_file(diff.numstat_lines)
    large = config.large_pr
    scores = compute_file_risk_scores(
        review_files,
        per_file,
        analysis.files_by_category,
        RiskWeights.model_validate(large.risk_weights, from_attributes=True),
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

    prior: list[DeltaPriorFinding] = []
    if (
        incremental is not None
        and incremental.mode == "incremental"
        and incremental.last_reviewed_head_sha
        and sources.knowledge_prior_findings is not None
    ):
        head = incremental.last_reviewed_head_sha
        reader = sources.knowledge_prior_findings
        none: list[PriorFinding] = []
        stored = await fail_open(log, "prior-findings", lambda: asyncio.to_thread(reader, head), none)
        prior = [DeltaPriorFinding.model_validate(p, from_attributes=True) for p in stored]

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
            feedback=gathered.retrieval.feedback,
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
        prior_findings=gathered.prior_findings,
        retrieval=retrieval,
        dep_bump=DepBumpPromptContext.model_validate(gathered.dep_bump) if gathered.dep_bump else None,
        diff_range=gathered.diff.diff_range,
        diff_notes=gathered.diff.notes,
    )
