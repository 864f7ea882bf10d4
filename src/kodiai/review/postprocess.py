"""Post-process: what becomes of each finding the model posted (behaviour R1 steps 41–43, 45), pure.

Input: the findings read back from this run's inline comments after language enforcement, the
feedback-suppression result, and the plan. Output: per finding its confidence and whether it stays
visible (suppressed, below ``minConfidence``, or deprioritised beyond ``maxComments`` are deleted), the
counts that Review Details and the ``reviews`` row show, and the delta against the prior review.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.config import RepoConfig
from kodiai.feedback.adjuster import FeedbackSuppressionResult, adjust_confidence_for_feedback
from kodiai.findings import Category, EnforcedFinding, Severity
from kodiai.review.confidence import (
    SuppressionPattern,
    compute_confidence,
    first_matching_suppression,
    suppression_label,
)
from kodiai.review.dedup import PriorFindingContext, should_suppress_finding
from kodiai.review.delta import (
    DeltaCounts,
    PriorFinding,
    classify_finding_deltas,
    with_canonical_fingerprints,
)
from kodiai.review.details import FindingCounts
from kodiai.review.prioritizer import FindingPriorityWeights, PrioritizationStats, prioritize_findings
from kodiai.text.fingerprint import fingerprint_finding_title

ABBREVIATED_SUPPRESSED_SEVERITIES = frozenset({"medium", "minor"})


class ProcessedFinding(BaseModel):
    """What post-processing decided for one finding: the typed form that Review Details, the knowledge
    store (``findings`` rows) and learned memory read."""

    model_config = ConfigDict(frozen=True)

    comment_id: int
    file_path: str
    title: str
    severity: Severity
    original_severity: Severity
    category: Category
    start_line: int | None = None
    end_line: int | None = None
    confidence: int | float
    suppressed: bool
    suppression_pattern: str | None = None
    low_confidence: bool = False
    deprioritized: bool = False
    severity_elevated: bool = False

    @property
    def fingerprint(self) -> str:
        return fingerprint_finding_title(self.title)

    @property
    def filtered(self) -> bool:
        """Deleted from the PR after the run (step 44)."""
        return self.suppressed or self.low_confidence or self.deprioritized


class ProcessedReview(BaseModel):
    model_config = ConfigDict(frozen=True)

    findings: list[ProcessedFinding]
    counts: FindingCounts
    """Per severity over *all* findings, suppressed ones included (Q10)."""
    suppressions_applied: int
    suppression_match_counts: dict[str, int]
    prioritization: PrioritizationStats | None
    delta: DeltaCounts | None

    @property
    def filtered_comment_ids(self) -> list[int]:
        """Unique comment ids to delete, in finding order."""
        return list(dict.fromkeys(f.comment_id for f in self.findings if f.filtered))


def _feedback_counts(result: FeedbackSuppressionResult) -> dict[str, tuple[int, int]]:
    return {p.fingerprint: (p.thumbs_up_count, p.thumbs_down_count) for p in result.patterns}


def process_findings(
    findings: Sequence[EnforcedFinding],
    *,
    config: RepoConfig,
    max_comments: int | float,
    abbreviated_paths: frozenset[str],
    feedback: FeedbackSuppressionResult,
    prior_context: PriorFindingContext | None,
    file_risk: Mapping[str, int | float],
    prior_findings: Sequence[PriorFinding] = (),
) -> ProcessedReview:
    """Steps 41–43 and 45 over the enforced findings, in extraction order."""
    review = config.review
    suppressions = [
        s if isinstance(s, str) else SuppressionPattern.model_validate(s, from_attributes=True)
        for s in review.suppressions
    ]
    feedback_counts = _feedback_counts(feedback)
    match_counts: dict[str, int] = {}
    staged: list[ProcessedFinding] = []
    for f in findings:
        fingerprint = fingerprint_finding_title(f.title)
        subject = {"file_path": f.file_path, "title": f.title, "severity": f.severity, "category": f.category}
        matched = first_matching_suppression(subject, suppressions)
        dedup = prior_context is not None and should_suppress_finding(
            f.file_path, fingerprint, prior_context.suppression_fingerprints
        )
        abbreviated = f.file_path in abbreviated_paths and f.severity in ABBREVIATED_SUPPRESSED_SEVERITIES
        suppressed = bool(
            f.tooling_suppressed
            or matched is not None
            or dedup
            or abbreviated
            or fingerprint in feedback.suppressed_fingerprints
        )
        pattern = suppression_label(matched) if matched is not None else None
        if pattern is not None:
            match_counts[pattern] = match_counts.get(pattern, 0) + 1
        confidence: int | float = compute_confidence(
            {"severity": f.severity, "category": f.category, "matches_known_pattern": matched is not None}
        )
        if fingerprint in feedback_counts:
            up, down = feedback_counts[fingerprint]
            confidence = adjust_confidence_for_feedback(confidence, {"thumbs_up": up, "thumbs_down": down})
        staged.append(
            ProcessedFinding(
                comment_id=f.comment_id,
                file_path=f.file_path,
                title=f.title,
                severity=f.severity,
                original_severity=f.original_severity,
                category=f.category,
                start_line=f.start_line,
                end_line=f.end_line,
                confidence=confidence,
                suppressed=suppressed,
                suppression_pattern=pattern,
                severity_elevated=f.severity_elevated,
            )
        )

    min_confidence = review.min_confidence
    recurrence: dict[str, int] = {}
    for s in staged:
        if not s.suppressed and s.confidence >= min_confidence:
            recurrence[s.fingerprint] = recurrence.get(s.fingerprint, 0) + 1
    visible = [i for i, s in enumerate(staged) if not s.suppressed and s.confidence >= min_confidence]
    stats: PrioritizationStats | None = None
    deprioritized: set[int] = set()
    if len(visible) > max_comments:
        result = prioritize_findings(
            [
                {
                    "file_path": staged[i].file_path,
                    "title": staged[i].title,
                    "severity": staged[i].severity,
                    "category": staged[i].category,
                    "file_risk_score": file_risk.get(staged[i].file_path, 0),
                    "recurrence_count": recurrence.get(staged[i].fingerprint, 1),
                }
                for i in visible
            ],
            max_comments,
            FindingPriorityWeights.model_validate(review.prioritization, from_attributes=True),
        )
        selected = {visible[r.original_index] for r in result.selected_findings}
        deprioritized = {i for i in visible if i not in selected}
        stats = result.stats

    processed = [
        s.model_copy(
            update={
                "low_confidence": not s.suppressed and s.confidence < min_confidence,
                "deprioritized": i in deprioritized,
            }
        )
        for i, s in enumerate(staged)
    ]
    counts = FindingCounts()
    for p in processed:
        if p.severity in ("critical", "major", "medium", "minor"):
            counts = counts.model_copy(update={p.severity: getattr(counts, p.severity) + 1})
    delta = None
    if prior_findings:  # step 43: logged only; the model publishes the delta summary itself
        delta = classify_finding_deltas(
            [{"file_path": p.file_path, "title": p.title} for p in processed],
            with_canonical_fingerprints(prior_findings),
            fingerprint_finding_title,
        ).counts
    return ProcessedReview(
        findings=processed,
        counts=counts,
        suppressions_applied=sum(1 for p in processed if p.suppressed),
        suppression_match_counts=match_counts,
        prioritization=stats,
        delta=delta,
    )
