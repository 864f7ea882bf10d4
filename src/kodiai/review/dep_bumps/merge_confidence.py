"""Merge confidence for dependency bumps: semver, advisories and changelog (behaviour R2.11)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.review.dep_bumps.detect import DepBumpClassification, DepBumpDetails, DepBumpDetection
from kodiai.review.dep_bumps.enrichment import ChangelogContext, SecurityContext

__all__ = ["DepBumpContext", "MergeConfidence", "MergeConfidenceLevel", "compute_merge_confidence"]

MergeConfidenceLevel = Literal["high", "medium", "low"]

SEVERITY_RANK: dict[str, int] = {"critical": 4, "high": 3, "medium": 2, "low": 1}
_DOWNGRADE: dict[MergeConfidenceLevel, MergeConfidenceLevel] = {
    "high": "medium",
    "medium": "low",
    "low": "low",
}


class MergeConfidence(BaseModel):
    level: MergeConfidenceLevel
    rationale: list[str]


class DepBumpContext(BaseModel):
    """Everything known about a dependency bump.

    ``security`` left out (not in ``model_fields_set``) means enrichment was not attempted; ``None``
    means it failed. The two produce different rationale lines.
    """

    model_config = ConfigDict(extra="allow")

    detection: DepBumpDetection
    details: DepBumpDetails
    classification: DepBumpClassification
    security: SecurityContext | None = None
    changelog: ChangelogContext | None = None
    merge_confidence: MergeConfidence | None = None


def compute_merge_confidence(ctx: DepBumpContext | dict[str, Any]) -> MergeConfidence:
    """Start at high; downgrade for major/unknown bumps, advisories and breaking changes."""
    data = ctx if isinstance(ctx, DepBumpContext) else DepBumpContext.model_validate(ctx)
    level: MergeConfidenceLevel = "high"
    rationale: list[str] = []

    bump = data.classification.bump_type
    if bump == "patch":
        rationale.append("Patch version bump (bug fix only)")
    elif bump == "minor":
        rationale.append("Minor version bump (backward-compatible)")
    elif bump == "major":
        level = "medium"
        rationale.append("Major version bump (potential breaking changes)")
    else:
        level = "medium"
        rationale.append("Version change could not be classified")

    if "security" in data.model_fields_set:
        security = data.security
        if security is None:
            rationale.append("Security advisory data unavailable")
        elif security.is_security_bump:
            rationale.append("Security-motivated bump (patches known vulnerability)")
        elif security.advisories:
            worst = max(security.advisories, key=lambda a: SEVERITY_RANK.get(a.severity, 0))
            rank = SEVERITY_RANK.get(worst.severity, 0)
            if rank >= SEVERITY_RANK["high"]:
                level = "low"
                rationale.append(f"{worst.severity}-severity advisory affects this package")
            else:
                level = _DOWNGRADE[level]
                rationale.append("Security advisories exist for this package")
        else:
            rationale.append("No known security advisories")

    changelog = data.changelog
    if changelog is not None:
        count = len(changelog.breaking_changes)
        if count > 0:
            level = "low" if data.classification.is_breaking else _DOWNGRADE[level]
            rationale.append(f"{count} breaking change(s) detected in changelog")
        elif changelog.source != "compare-url-only":
            rationale.append("No breaking changes detected in changelog")

    return MergeConfidence(level=level, rationale=rationale)
