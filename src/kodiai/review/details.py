"""The Review Details block and how it is merged into the summary comment (behaviour R3.4).

Everything here is pure string work; the handler fetches and posts the comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kodiai.compat.js import js_number_to_string
from kodiai.execution.output_key import build_review_details_marker
from kodiai.text.git_path import display_path

MAX_NOT_REVIEWED_LISTED = 100
_TAG_RE = re.compile(r"\[(CRITICAL|MAJOR|MEDIUM|MINOR)\]", re.IGNORECASE)


class _In(BaseModel):
    model_config = ConfigDict(from_attributes=True, extra="ignore")


class FindingCounts(_In):
    critical: int = 0
    major: int = 0
    medium: int = 0
    minor: int = 0

    @classmethod
    def of(cls, severities: Iterable[str]) -> FindingCounts:
        """Count findings per severity (step 45: over every processed finding, suppressed ones too, Q10)."""
        counts = {"critical": 0, "major": 0, "medium": 0, "minor": 0}
        for severity in severities:
            if severity in counts:
                counts[severity] += 1
        return cls(**counts)

    @property
    def total(self) -> int:
        return self.critical + self.major + self.medium + self.minor

    def __add__(self, other: FindingCounts) -> FindingCounts:
        return FindingCounts(
            critical=self.critical + other.critical,
            major=self.major + other.major,
            medium=self.medium + other.medium,
            minor=self.minor + other.minor,
        )


class ProfileSelection(_In):
    """Reads ``kodiai.review.profiles.ResolvedReviewProfile`` (``selected_profile, source, lines_changed``)."""

    selected_profile: str
    source: Literal["keyword", "manual", "auto"]
    lines_changed: int | float = 0


class RiskScoredFile(_In):
    file_path: str
    score: int | float


class TriageView(_In):
    """Reads ``kodiai.review.file_risk.TieredFiles``."""

    full: list[RiskScoredFile] = Field(default_factory=list)
    abbreviated: list[RiskScoredFile] = Field(default_factory=list)
    mention_only: list[RiskScoredFile] = Field(default_factory=list)
    total_files: int = 0
    is_large_pr: bool = False


class PrioritizationStatsView(_In):
    """Reads ``kodiai.review.prioritizer.PrioritizationStats``."""

    findings_scored: int
    top_score: float | None = None
    threshold_score: float | None = None


class ReviewDetailsInput(_In):
    review_output_key: str
    files_reviewed: int
    lines_added: int | float
    lines_removed: int | float
    profile: ProfileSelection | None = None
    author_tier: str = "regular"
    finding_counts: FindingCounts = Field(default_factory=FindingCounts)
    completed_at: datetime
    triage: TriageView | None = None
    feedback_suppressed_patterns: int = 0
    prioritization: PrioritizationStatsView | None = None
    keyword_parsing: str = "- Keyword parsing: No keywords detected"
    """The output of ``pr_intent.build_keyword_parsing_section(intent)``."""
    diff_notes: list[str] = Field(default_factory=list)
    """What the server's diff limits left out (a port addition: ``DiffCollection.notes``)."""
    config_source: str | None = None
    """Which ``.kodiai.yml`` governed the review (``ConfigSource.describe()``); a port addition, so a
    reviewer of a fork PR can see the fork's own file was not used. None: no line (local reviews)."""


def js_iso_timestamp(moment: datetime) -> str:
    """``Date.prototype.toISOString``: UTC with milliseconds and a ``Z`` (naive datetimes count as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def format_profile_line(profile: ProfileSelection) -> str:
    if profile.source == "auto":
        detail = f"auto, lines changed: {js_number_to_string(profile.lines_changed)}"
    elif profile.source == "manual":
        detail = "manual config"
    else:
        detail = "keyword override"
    return f"- Profile: {profile.selected_profile} ({detail})"


def format_findings_line(counts: FindingCounts, suffix: str = "") -> str:
    return (
        f"- Findings: {counts.critical} critical, {counts.major} major, {counts.medium} medium, "
        f"{counts.minor} minor{suffix}"
    )


def _score(value: float | None) -> str:
    return "n/a" if value is None else js_number_to_string(value)


def _large_pr_lines(triage: TriageView) -> list[str]:
    full, abbr = len(triage.full), len(triage.abbreviated)
    lines = [
        "",
        f"- Review scope: Reviewed {full + abbr}/{triage.total_files} files, prioritized by risk",
        f"- Full review: {full} files | Abbreviated review: {abbr} files | "
        f"Not reviewed: {triage.total_files - full - abbr} files",
    ]
    if triage.mention_only:
        lines += ["", "<details>", "<summary>Files not fully reviewed (sorted by risk score)</summary>", ""]
        lines += [
            f"- {display_path(f.file_path)} (risk: {js_number_to_string(f.score)})"
            for f in triage.mention_only[:MAX_NOT_REVIEWED_LISTED]
        ]
        if len(triage.mention_only) > MAX_NOT_REVIEWED_LISTED:
            lines.append(f"- ...and {len(triage.mention_only) - MAX_NOT_REVIEWED_LISTED} more files")
        lines += ["", "</details>"]
    return lines


def format_review_details_summary(details: ReviewDetailsInput, findings_suffix: str = "") -> str:
    """The ``<details><summary>Review Details</summary>…`` block, ending with the review-details marker."""
    lines = [
        "<details>",
        "<summary>Review Details</summary>",
        "",
        f"- Files reviewed: {details.files_reviewed}",
        f"- Lines changed: +{js_number_to_string(details.lines_added)} -{js_number_to_string(details.lines_removed)}",
    ]
    if details.profile is not None:
        lines.append(format_profile_line(details.profile))
    tone = "default" if details.author_tier == "regular" else "adapted tone"
    lines += [
        f"- Author: {details.author_tier} ({tone})",
        format_findings_line(details.finding_counts, findings_suffix),
        f"- Review completed: {js_iso_timestamp(details.completed_at)}",
    ]
    if details.triage is not None and details.triage.is_large_pr:
        lines += _large_pr_lines(details.triage)
    k = details.feedback_suppressed_patterns
    if k > 0:
        lines.append(f"- {k} {'pattern' if k == 1 else 'patterns'} auto-suppressed by feedback")
    stats = details.prioritization
    if stats is not None:
        lines.append(
            f"- Prioritization: scored {stats.findings_scored} findings | top score {_score(stats.top_score)} | "
            f"threshold score {_score(stats.threshold_score)}"
        )
    if details.config_source is not None:
        lines.append(f"- Configuration: {details.config_source}")
    lines += [f"- Diff limit: {note}" for note in details.diff_notes]
    lines += [
        details.keyword_parsing,
        "",
        "</details>",
        "",
        build_review_details_marker(details.review_output_key),
    ]
    return "\n".join(lines)


def count_severity_tags(text: str) -> FindingCounts:
    """Count ``[CRITICAL]``/``[MAJOR]``/``[MEDIUM]``/``[MINOR]`` anywhere in ``text``, case-insensitively."""
    counts = {"critical": 0, "major": 0, "medium": 0, "minor": 0}
    for match in _TAG_RE.finditer(text):
        counts[match.group(1).lower()] += 1
    return FindingCounts(**counts)


def insert_before_last_details_close(summary_body: str, block: str) -> str:
    """Insert ``block`` before the last ``</details>``; append after a blank line when there is none."""
    index = summary_body.rfind("</details>")
    if index < 0:
        return f"{summary_body}\n\n{block}"
    return f"{summary_body[:index]}\n\n{block}\n{summary_body[index:]}"


def embed_review_details(summary_body: str, details: ReviewDetailsInput) -> str:
    """The summary comment's new body with the Review Details block embedded (R3.4 "embedding").

    When the summary holds severity tags, the Findings line shows the sum of the handler's counts and
    the tag counts, with `` (includes <n> from summary observations)``.
    """
    tags = count_severity_tags(summary_body)
    if tags.total > 0:
        merged = details.model_copy(update={"finding_counts": details.finding_counts + tags})
        block = format_review_details_summary(merged, f" (includes {tags.total} from summary observations)")
    else:
        block = format_review_details_summary(details)
    return insert_before_last_details_close(summary_body, block)


def find_comment_with_marker(bodies: Sequence[object], marker: str) -> int | None:
    """Index of the first comment body containing ``marker`` (summary lookup and standalone upsert)."""
    for index, body in enumerate(bodies):
        if isinstance(body, str) and marker in body:
            return index
    return None
