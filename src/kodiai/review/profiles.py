"""Review profiles: resolution (keyword override, then manual config, then auto by PR size, R2.6) and the
presets that fill the review scope (behaviour R1 steps 33–35)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AUTO_PROFILE_THRESHOLDS",
    "PROFILE_PRESETS",
    "ResolvedReviewProfile",
    "ReviewScope",
    "apply_intent_areas",
    "apply_profile_preset",
    "resolve_review_profile",
]

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


class ReviewScope(BaseModel):
    """What the prompt is told to report: minimum severity, comment cap, focus and ignored areas."""

    model_config = ConfigDict(frozen=True)

    severity_min_level: str = "minor"
    max_comments: int | float = 7
    focus_areas: tuple[str, ...] = ()
    ignored_areas: tuple[str, ...] = ()


PROFILE_PRESETS: dict[str, ReviewScope] = {
    "strict": ReviewScope(severity_min_level="minor", max_comments=15),
    "balanced": ReviewScope(severity_min_level="medium", max_comments=7, ignored_areas=("style",)),
    "minimal": ReviewScope(
        severity_min_level="major",
        max_comments=3,
        ignored_areas=("style", "documentation"),
        focus_areas=("security", "correctness"),
    ),
}
DEFAULT_MIN_LEVEL = "minor"
DEFAULT_MAX_COMMENTS = 7


def apply_profile_preset(profile: ResolvedReviewProfile, configured: ReviewScope) -> ReviewScope:
    """The scope after the selected profile's preset (step 33).

    A keyword override always replaces the level and the cap, and the areas when the preset lists any.
    A manual or auto profile only fills what is still at its default: the level when it is ``minor``, the
    cap when it is exactly 7, and the areas when they are empty.
    """
    preset = PROFILE_PRESETS.get(profile.selected_profile)
    if preset is None:
        return configured
    if profile.source == "keyword":
        return ReviewScope(
            severity_min_level=preset.severity_min_level,
            max_comments=preset.max_comments,
            focus_areas=preset.focus_areas or configured.focus_areas,
            ignored_areas=preset.ignored_areas or configured.ignored_areas,
        )
    return ReviewScope(
        severity_min_level=preset.severity_min_level
        if configured.severity_min_level == DEFAULT_MIN_LEVEL
        else configured.severity_min_level,
        max_comments=preset.max_comments
        if configured.max_comments == DEFAULT_MAX_COMMENTS
        else configured.max_comments,
        focus_areas=configured.focus_areas or preset.focus_areas,
        ignored_areas=configured.ignored_areas or preset.ignored_areas,
    )


def apply_intent_areas(scope: ReviewScope, *, style_ok: bool, focus_areas: tuple[str, ...]) -> ReviewScope:
    """Step 35: ``[style-ok]`` ignores ``style``; the intent's focus areas are appended (no duplicates)."""
    ignored = list(scope.ignored_areas)
    if style_ok and "style" not in ignored:
        ignored.append("style")
    focus = list(scope.focus_areas)
    focus += [area for area in dict.fromkeys(focus_areas) if area not in focus]
    return scope.model_copy(update={"ignored_areas": tuple(ignored), "focus_areas": tuple(focus)})
