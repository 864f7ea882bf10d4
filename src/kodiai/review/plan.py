"""Plan: from what was gathered to the prompt and the run's limits (behaviour R1 steps 33–36), pure.

Profile resolution and presets, the timeout estimate and its scope reduction, the intent's area tweaks,
then the prompt. The webhook job and ``kodiai review`` both call :func:`plan_review`, so the preview a
user gets locally is the prompt the bot would send.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.config import RepoConfig
from kodiai.review.dedup import PriorFindingContext, build_prior_finding_context
from kodiai.review.delta import PriorFinding, with_canonical_fingerprints
from kodiai.review.diff_analysis import DiffAnalysis
from kodiai.review.file_risk import TieredFiles
from kodiai.review.incremental import IncrementalDiffResult
from kodiai.review.pr_intent import ParsedPRIntent
from kodiai.review.profiles import (
    PROFILE_PRESETS,
    ResolvedReviewProfile,
    ReviewScope,
    apply_intent_areas,
    apply_profile_preset,
    resolve_review_profile,
)
from kodiai.review.prompt import (
    DeltaContext,
    DepBumpPromptContext,
    IncrementalContext,
    LargePRContext,
    PathInstructionMatch,
    RetrievalContext,
    ReviewPromptContext,
    build_review_prompt,
)
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.timeout import TimeoutEstimate, compute_language_complexity, estimate_timeout_risk
from kodiai.text.git_path import display_path


class PlanInput(BaseModel):
    """What planning reads; every field is already computed (no I/O happens here)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    facts: PullRequestFacts
    config: RepoConfig
    intent: ParsedPRIntent
    author_tier: str
    analysis: DiffAnalysis
    changed_files: list[str]
    prompt_files: list[str]
    tiered: TieredFiles
    lines_changed: int | float
    """numstat added + removed (the timeout estimate's input; the profile reads the payload's counts)."""
    path_matches: list[PathInstructionMatch] = []
    incremental: IncrementalDiffResult | None = None
    prior_findings: Sequence[PriorFinding] = ()
    retrieval: RetrievalContext | None = None
    dep_bump: DepBumpPromptContext | None = None
    diff_range: str | None = None
    diff_notes: list[str] = []
    """What the diff limits left out (``DiffCollection.notes``): the prompt's Scale Notes and the Review
    Details show them."""


class ReviewPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: ResolvedReviewProfile
    scope: ReviewScope
    timeout: TimeoutEstimate
    dynamic_timeout_seconds: float | None
    """What the executor is given (None when ``timeout.dynamicScaling`` is off: it uses the config)."""
    tiered: TieredFiles
    """The triage after any scope reduction (the abbreviated tier decides step 41's suppression)."""
    prior_context: PriorFindingContext | None
    delta: bool
    prompt: str
    diff_notes: list[str] = []

    @property
    def abbreviated_paths(self) -> frozenset[str]:
        return (
            frozenset(f.file_path for f in self.tiered.abbreviated)
            if self.tiered.is_large_pr
            else frozenset()
        )


def configured_scope(config: RepoConfig) -> ReviewScope:
    review = config.review
    return ReviewScope(
        severity_min_level=review.severity.min_level,
        max_comments=review.max_comments,
        focus_areas=tuple(review.focus_areas),
        ignored_areas=tuple(review.ignored_areas),
    )


def reduce_scope(
    profile: ResolvedReviewProfile,
    scope: ReviewScope,
    tiered: TieredFiles,
    estimate: TimeoutEstimate,
    config: RepoConfig,
) -> tuple[ResolvedReviewProfile, ReviewScope, TieredFiles]:
    """Step 34: a high-risk estimate on an auto profile switches to the whole minimal preset, and full-tier
    files beyond the reduced count move to the end of the abbreviated tier."""
    if not (estimate.should_reduce_scope and profile.source == "auto" and config.timeout.auto_reduce_scope):
        return profile, scope, tiered
    minimal = PROFILE_PRESETS["minimal"]
    limit = estimate.reduced_file_count
    if limit is not None and len(tiered.full) > limit:
        tiered = tiered.model_copy(
            update={"full": tiered.full[:limit], "abbreviated": [*tiered.abbreviated, *tiered.full[limit:]]}
        )
    return profile.model_copy(update={"selected_profile": "minimal"}), minimal, tiered


def _shown(paths: Iterable[str]) -> list[str]:
    """Paths as the prompt shows them: a path holding a newline or another control character is
    C-quoted (:func:`display_path`), so no file name can start a prompt section of its own."""
    return [display_path(path) for path in paths]


def plan_review(data: PlanInput) -> ReviewPlan:
    facts, config, review = data.facts, data.config, data.config.review
    profile = resolve_review_profile(
        data.intent.profile_override, review.profile, facts.payload_lines_changed
    )
    scope = apply_profile_preset(profile, configured_scope(config))
    estimate = estimate_timeout_risk(
        len(data.changed_files),
        data.lines_changed,
        compute_language_complexity(data.analysis.files_by_language),
        data.analysis.is_large_pr,
        config.timeout_seconds,
    )
    profile, scope, tiered = reduce_scope(profile, scope, data.tiered, estimate, config)
    scope = apply_intent_areas(
        scope, style_ok=data.intent.style_ok, focus_areas=tuple(data.intent.focus_areas)
    )

    incremental = data.incremental if data.incremental and data.incremental.mode == "incremental" else None
    priors = with_canonical_fingerprints(data.prior_findings) if incremental else []
    prior_context = (
        build_prior_finding_context(priors, incremental.changed_files_since_last_review)
        if incremental and priors
        else None
    )
    delta = incremental is not None and bool(priors)
    prompt = build_review_prompt(
        ReviewPromptContext(
            owner=facts.owner,
            repo=facts.repo,
            pr_number=facts.number,
            pr_title=facts.title,
            pr_body=facts.body,
            pr_author=facts.author,
            base_branch=facts.base_ref,
            head_branch=facts.head_ref,
            changed_files=_shown(data.prompt_files),
            custom_instructions=review.prompt,
            mode=review.mode,
            severity_min_level=scope.severity_min_level,
            focus_areas=list(scope.focus_areas),
            ignored_areas=list(scope.ignored_areas),
            max_comments=scope.max_comments,
            suppressions=review.suppressions,
            min_confidence=review.min_confidence,
            diff_analysis=data.analysis,
            matched_path_instructions=[
                m.model_copy(update={"matched_files": _shown(m.matched_files)}) for m in data.path_matches
            ],
            incremental_context=IncrementalContext(
                last_reviewed_head_sha=incremental.last_reviewed_head_sha or "",
                changed_files_since_last_review=_shown(incremental.changed_files_since_last_review),
                unresolved_prior_findings=prior_context.unresolved_on_unchanged_code if prior_context else [],
            )
            if incremental
            else None,
            retrieval_context=data.retrieval,
            files_by_language=data.analysis.files_by_language,
            output_language=review.output_language,
            pr_labels=list(facts.labels),
            focus_hints=data.intent.unrecognized,
            conventional_type=data.intent.conventional_type,
            delta_context=DeltaContext(
                last_reviewed_head_sha=incremental.last_reviewed_head_sha or "",
                changed_files_since_last_review=_shown(incremental.changed_files_since_last_review),
                prior_findings=priors,
            )
            if delta and incremental
            else None,
            large_pr_context=LargePRContext(
                full_review_files=_shown(f.file_path for f in tiered.full),
                abbreviated_files=_shown(f.file_path for f in tiered.abbreviated),
                mention_only_count=len(tiered.mention_only),
                total_files=tiered.total_files,
            )
            if tiered.is_large_pr
            else None,
            author_tier=data.author_tier,
            dep_bump_context=data.dep_bump,
            diff_range=data.diff_range,
            scale_notes=data.diff_notes,
        )
    )
    return ReviewPlan(
        profile=profile,
        scope=scope,
        timeout=estimate,
        dynamic_timeout_seconds=estimate.dynamic_timeout_seconds if config.timeout.dynamic_scaling else None,
        tiered=tiered,
        prior_context=prior_context,
        delta=delta,
        prompt=prompt,
        diff_notes=data.diff_notes,
    )
