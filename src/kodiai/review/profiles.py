"""Review profile resolution: keyword override, then manual config, then auto by PR size (§2.6)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = ["AUTO_PROFILE_THRESHOLDS", "ResolvedReviewProfile", "resolve_review_profile"]

AUTO_PROFILE_THRESHOLDS: dict[str, int] = {"strictMax": 100, "balancedMax": 500}

ProfileSource = Literal["keyword", "manual", "auto"]
AutoBand = Literal["small", "medium", "large"]


class ResolvedReviewProfile(BaseModel):
    selected_profile: str
    source: ProfileSource
    auto_band: AutoBand | None
    lines_changed: int | float


def resolve_review_profile(
    keyword_profile_override: str | None,
    manual_profile: str | None,
    lines_changed: int | float,
) -> ResolvedReviewProfile:
    """Pick the review profile. Empty strings are falsy and fall through, as in JS."""
    if keyword_profile_override:
        return ResolvedReviewProfile(
            selected_profile=keyword_profile_override,
            source="keyword",
            auto_band=None,
            lines_changed=lines_changed,
        )
    if manual_profile:
        return ResolvedReviewProfile(
            selected_profile=manual_profile, source="manual", auto_band=None, lines_changed=lines_changed
        )
    if lines_changed <= AUTO_PROFILE_THRESHOLDS["strictMax"]:
        profile, band = "strict", "small"
    elif lines_changed <= AUTO_PROFILE_THRESHOLDS["balancedMax"]:
        profile, band = "balanced", "medium"
    else:
        profile, band = "minimal", "large"
    return ResolvedReviewProfile(
        selected_profile=profile,
        source="auto",
        auto_band=band,
        lines_changed=lines_changed,
    )
