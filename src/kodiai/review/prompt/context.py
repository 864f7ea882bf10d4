"""The input of the review prompt builder: one pydantic model with every optional input.

Nested inputs are *views*: they read the pinned snake_case attribute names from whatever object the
caller passes (library A's ``DiffAnalysis``, the dep-bump models, learning's ``RerankedResult``-derived
findings, or a plain dict), so the prompt does not depend on those classes' exact types.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kodiai.storage.feedback_tally import FeedbackTally


class PromptView(BaseModel):
    """Base for every prompt input: accepts dicts or any object with the named attributes."""

    model_config = ConfigDict(from_attributes=True, extra="ignore")


class DiffMetricsView(PromptView):
    total_files: int = 0
    total_lines_added: int = 0
    total_lines_removed: int = 0
    hunks_count: int = 0


class DiffAnalysisView(PromptView):
    """What the prompt reads from ``kodiai.review.diff_analysis.DiffAnalysis``."""

    files_by_category: dict[str, list[str]] = Field(default_factory=dict)
    risk_signals: list[str] = Field(default_factory=list)
    metrics: DiffMetricsView = Field(default_factory=DiffMetricsView)
    is_large_pr: bool = False


class PathInstructionMatch(PromptView):
    """One ``review.pathInstructions`` entry together with the changed files it matched."""

    path: str | list[str]
    instructions: str
    matched_files: list[str] = Field(default_factory=list)


class UnresolvedPriorFinding(PromptView):
    severity: str
    title: str
    file_path: str


class IncrementalContext(PromptView):
    last_reviewed_head_sha: str
    changed_files_since_last_review: list[str] = Field(default_factory=list)
    unresolved_prior_findings: list[UnresolvedPriorFinding] = Field(default_factory=list)


class RetrievedFinding(PromptView):
    """One learned-memory hit; ``distance`` is the post-rerank adjusted distance."""

    finding_text: str
    severity: str
    category: str
    file_path: str
    outcome: str
    distance: float
    source_repo: str | None = None
    confidence: Literal["high", "medium", "low"] | None = None
    feedback: FeedbackTally | None = None
    """How the team reacted to the finding (port addition); None without any reaction."""

    @field_validator("confidence", mode="before")
    @classmethod
    def _label(cls, value: object) -> object:
        """Accept a label object from the learning package (``.label`` / ``.value``) or a string."""
        for attr in ("label", "value"):
            inner = getattr(value, attr, None)
            if isinstance(inner, str):
                return inner
        return value


class AmbiguityView(PromptView):
    """What the prompt reads from ``kodiai.learning.ambiguity.AmbiguitySignal``.

    ``ambiguous`` means more stored findings sit in the best match's cluster than retrieval returns, so the
    ones shown are close to an arbitrary pick; the prompt says so instead of presenting them as precedent.
    """

    cluster_size: int
    pool_size: int
    ambiguous: bool


class RetrievalContext(PromptView):
    findings: list[RetrievedFinding] = Field(default_factory=list)
    max_context_chars: int | float = Field(default=2000, ge=0)
    ambiguity: AmbiguityView | None = None


class DeltaPriorFinding(PromptView):
    file_path: str
    title: str
    severity: str
    category: str = ""


class DeltaContext(PromptView):
    last_reviewed_head_sha: str
    changed_files_since_last_review: list[str] = Field(default_factory=list)
    prior_findings: list[DeltaPriorFinding] = Field(default_factory=list)


class LargePRContext(PromptView):
    full_review_files: list[str] = Field(default_factory=list)
    abbreviated_files: list[str] = Field(default_factory=list)
    mention_only_count: int = 0
    total_files: int = 0


class ConventionalTypeView(PromptView):
    type: str
    is_breaking: bool = False


class SuppressionView(PromptView):
    """A ``review.suppressions`` object entry; plain-string entries stay strings."""

    pattern: str
    severity: list[str] | None = None
    category: list[str] | None = None
    paths: list[str] | None = None


class DepBumpDetectionView(PromptView):
    source: str
    signals: list[str] = Field(default_factory=list)


class DepBumpDetailsView(PromptView):
    package_name: str | None = None
    old_version: str | None = None
    new_version: str | None = None
    ecosystem: str | None = None
    is_group: bool = False


class DepBumpClassificationView(PromptView):
    bump_type: str = "unknown"
    is_breaking: bool = False


class AdvisoryView(PromptView):
    ghsa_id: str
    cve_id: str | None = None
    severity: str = "unknown"
    summary: str = ""
    vulnerable_version_range: str = ""
    first_patched_version: str | None = None
    affects_old: bool = False
    affects_new: bool = False
    url: str | None = None


class SecurityContextView(PromptView):
    advisories: list[AdvisoryView] = Field(default_factory=list)
    is_security_bump: bool = False


class ReleaseNoteView(PromptView):
    body: str = ""
    tag: str | None = None


class ChangelogView(PromptView):
    release_notes: list[ReleaseNoteView] = Field(default_factory=list)
    breaking_changes: list[str] = Field(default_factory=list)
    compare_url: str | None = None
    source: str = "compare-url-only"


class MergeConfidenceView(PromptView):
    level: Literal["high", "medium", "low"]
    rationale: list[str] = Field(default_factory=list)


class UsageEvidenceItem(PromptView):
    file_path: str
    line: int
    snippet: str


class UsageEvidenceView(PromptView):
    evidence: list[UsageEvidenceItem] = Field(default_factory=list)
    search_terms: list[str] = Field(default_factory=list)
    timed_out: bool = False


class ScopeGroupView(PromptView):
    scope: str
    packages: list[str] = Field(default_factory=list)


class DepBumpPromptContext(PromptView):
    """The handler's dep-bump context: detection, details and classification plus the enrichments."""

    detection: DepBumpDetectionView
    details: DepBumpDetailsView
    classification: DepBumpClassificationView
    security: SecurityContextView | None = None
    changelog: ChangelogView | None = None
    merge_confidence: MergeConfidenceView | None = None
    usage_evidence: UsageEvidenceView | None = None
    scope_groups: list[ScopeGroupView] | None = None


ReviewMode = Literal["standard", "enhanced"]
SeverityLevel = Literal["critical", "major", "medium", "minor"]


class ReviewPromptContext(PromptView):
    """Everything ``build_review_prompt`` can use (behaviour R1 step 36)."""

    owner: str
    repo: str
    pr_number: int
    pr_title: str
    pr_body: str | None = None
    pr_author: str
    base_branch: str
    head_branch: str
    changed_files: list[str] = Field(default_factory=list)
    custom_instructions: str | None = None
    mode: ReviewMode = "standard"
    severity_min_level: SeverityLevel = "minor"
    focus_areas: list[str] = Field(default_factory=list)
    ignored_areas: list[str] = Field(default_factory=list)
    max_comments: int | float = 7
    suppressions: list[str | SuppressionView] = Field(default_factory=list)
    min_confidence: int | float = 0
    diff_analysis: DiffAnalysisView | None = None
    matched_path_instructions: list[PathInstructionMatch] = Field(default_factory=list)
    incremental_context: IncrementalContext | None = None
    retrieval_context: RetrievalContext | None = None
    files_by_language: dict[str, list[str]] | None = None
    output_language: str | None = None
    pr_labels: list[str] | None = None
    focus_hints: list[str] = Field(default_factory=list)
    conventional_type: ConventionalTypeView | None = None
    delta_context: DeltaContext | None = None
    large_pr_context: LargePRContext | None = None
    author_tier: str | None = None
    dep_bump_context: DepBumpPromptContext | None = None
    diff_range: str | None = None
    """The git range the handler diffed (``origin/main...HEAD``, ``origin/main..HEAD`` without a merge base,
    ``<base_sha>...<head_sha>`` locally); the "Reading the code" section names it. None: ``origin/<base>...HEAD``."""
    scale_notes: list[str] = Field(default_factory=list)
    """What the server's diff limits left out (an omitted huge file, a capped file list), one line each;
    shown in the Scale Notes section."""
