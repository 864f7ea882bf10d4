"""Data shapes of the knowledge store (behaviour P6.2), snake_case versions of the original's."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kodiai.text.fingerprint import FINGERPRINT_PREFIX, fingerprint_variants


class FeedbackPattern(BaseModel):
    """Reactions on the findings that share one title fingerprint, for one repository."""

    model_config = ConfigDict(extra="allow")

    fingerprint: str
    thumbs_down_count: int
    thumbs_up_count: int
    distinct_reactors: int
    distinct_prs: int
    severity: str
    category: str
    sample_title: str


class ReviewRecord(BaseModel):
    """One ``reviews`` row to insert; missing optionals become NULL, counts default to 0."""

    repo: str
    pr_number: int
    head_sha: str | None = None
    delivery_id: str | None = None
    files_analyzed: int = 0
    lines_changed: int = 0
    findings_critical: int = 0
    findings_major: int = 0
    findings_medium: int = 0
    findings_minor: int = 0
    findings_total: int = 0
    suppressions_applied: int = 0
    config_snapshot: str | None = None
    duration_ms: int | None = None
    model: str | None = None
    conclusion: str = "unknown"


class FindingRecord(BaseModel):
    """One ``findings`` row; ``suppressed`` is stored as 1/0."""

    review_id: int
    file_path: str
    start_line: int | None = None
    end_line: int | None = None
    severity: str
    category: str
    confidence: int
    title: str
    suppressed: bool = False
    suppression_pattern: str | None = None
    comment_id: int | None = None
    comment_surface: str | None = None
    review_output_key: str | None = None


class FeedbackReactionRecord(BaseModel):
    """One thumbs reaction on a finding comment, with the finding's metadata copied onto it."""

    repo: str
    review_id: int
    finding_id: int
    comment_id: int
    comment_surface: str
    reaction_id: int
    reaction_content: str
    reactor_login: str
    reacted_at: str | None = None
    severity: str
    category: str
    file_path: str
    title: str


class SuppressionLogEntry(BaseModel):
    review_id: int
    pattern: str
    matched_count: int = 0
    finding_ids: list[int] | None = None


class GlobalPatternRecord(BaseModel):
    severity: str
    category: str
    confidence_band: str
    pattern_fingerprint: str
    count: int


class DepBumpMergeHistoryRecord(BaseModel):
    """One merged dependency-bump PR; the first write per (repo, pr_number) wins."""

    repo: str
    pr_number: int
    merged_at: str | None = None
    delivery_id: str | None = None
    source: str | None = None
    signals_json: str | None = None
    package_name: str | None = None
    old_version: str | None = None
    new_version: str | None = None
    semver_bump_type: str | None = None
    merge_confidence_level: str | None = None
    merge_confidence_rationale_json: str | None = None
    advisory_status: str | None = None
    advisory_max_severity: str | None = None
    is_security_bump: bool | None = None


class FindingCommentCandidate(BaseModel):
    finding_id: int
    review_id: int
    repo: str
    comment_id: int
    comment_surface: str
    review_output_key: str
    severity: str
    category: str
    file_path: str
    title: str
    created_at: str


class FindingByComment(BaseModel):
    severity: str
    category: str
    file_path: str
    start_line: int | None
    title: str


class TopFile(BaseModel):
    path: str
    finding_count: int


class RepoStats(BaseModel):
    total_reviews: int
    total_findings: int
    findings_by_severity: dict[str, int]
    total_suppressed: int
    avg_findings_per_review: float
    avg_confidence: float
    top_files: list[TopFile]


class TrendRow(BaseModel):
    date: str
    review_count: int
    findings_count: int
    suppressions_count: int
    avg_confidence: float


class RunClaim(BaseModel):
    should_process: bool
    reason: Literal["new", "duplicate", "superseded-prior"]
    run_key: str
    superseded_run_keys: list[str] = Field(default_factory=list)


class AuthorCacheEntry(BaseModel):
    tier: str
    author_association: str
    pr_count: int | None
    cached_at: str


class PriorFinding(BaseModel):
    """An unsuppressed finding of the last completed review of a PR.

    ``title_fingerprint`` is the ``fp-xxxxxxxx`` form (PARITY.md review Q1: one form everywhere; the
    original returned the bare hex here, which is why its dedup never matched).
    """

    file_path: str
    title: str
    title_fingerprint: str
    severity: str
    category: str
    start_line: int | None
    end_line: int | None
    comment_id: int | None

    @property
    def key(self) -> str:
        """``<file_path>:fp-xxxxxxxx``, the key the review handler looks findings up by."""
        return f"{self.file_path}:{self.title_fingerprint}"

    def matches(self, file_path: str, fingerprint: str) -> bool:
        """Same file and same fingerprint, whichever stored form (``fp-…`` or bare hex) ``fingerprint`` has."""
        return file_path == self.file_path and self.title_fingerprint in fingerprint_variants(fingerprint)


def confidence_band(confidence: float) -> Literal["high", "medium", "low"]:
    """The global-pattern writer's band: ``high`` ≥ 75, ``medium`` ≥ 50, else ``low``."""
    if confidence >= 75:
        return "high"
    if confidence >= 50:
        return "medium"
    return "low"


__all__ = [
    "FINGERPRINT_PREFIX",
    "AuthorCacheEntry",
    "DepBumpMergeHistoryRecord",
    "FeedbackPattern",
    "FeedbackReactionRecord",
    "FindingByComment",
    "FindingCommentCandidate",
    "FindingRecord",
    "GlobalPatternRecord",
    "PriorFinding",
    "RepoStats",
    "ReviewRecord",
    "RunClaim",
    "SuppressionLogEntry",
    "TopFile",
    "TrendRow",
    "confidence_band",
]


GovernanceAction = Literal["forget", "remember"]


class MemoryGovernanceRecord(BaseModel):
    """One ``memory_governance`` row: a memory retired (``forget``) or added by hand (``remember``) from
    GitHub, with who asked and where. ``id``/``created_at`` are filled in by the store."""

    repo: str
    action: GovernanceAction
    actor: str
    finding_id: int | None = None
    memory_id: int | None = None
    removed: int = 0
    pr_number: int | None = None
    comment_id: int | None = None
    comment_url: str | None = None
    text: str | None = None
    id: int | None = None
    created_at: str | None = None
    restored_at: str | None = None
    """Set when a forget was undone from the dashboard (the memory may come back)."""


class FindingProvenance(BaseModel):
    """Where a finding came from: its review, PR and posted comment."""

    comment_id: int
    finding_id: int
    review_id: int
    pr_number: int
    comment_surface: str | None
    created_at: str
    title: str


class ReactionRow(BaseModel):
    """A kept reaction as provenance lists it."""

    comment_id: int
    reaction_id: int
    reaction_content: str
    reactor_login: str
    reacted_at: str | None


PendingStatus = Literal["pending", "promoted", "discarded"]
DecisionHow = Literal["thumbs_up", "merged", "thumbs_down", "closed"]


class PendingMemoryRecord(BaseModel):
    """A finding of an untrusted author's PR, held back from the learned memory (``pending_memories``)."""

    repo: str
    owner: str
    pr_number: int
    review_id: int | None = None
    comment_id: int | None = None
    finding_text: str
    severity: str
    category: str
    file_path: str
    outcome: Literal["accepted", "suppressed"]
    author: str
    author_access: str


class PendingMemory(PendingMemoryRecord):
    """A stored ``pending_memories`` row with its state."""

    id: int
    created_at: str
    status: PendingStatus
    decided_by: str | None = None
    decided_how: DecisionHow | None = None
    decided_at: str | None = None
