"""The `review` section of `.kodiai.yml` (behaviour P5.2)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Tag

from kodiai.compat.zod_types import Js
from kodiai.config.base import (
    UNION_ARRAY,
    UNION_OBJECT,
    UNION_STRING,
    Bool,
    ConfigModel,
    FocusAreaValue,
    NonEmptyStr,
    OptStr,
    ReviewMode,
    ReviewProfile,
    Severity,
    SeverityValue,
    Str,
    required,
    string_or,
)


def _weight(default: float, what: str) -> Any:
    return Field(default, description=f"Prioritisation weight of {what} (need not sum to 1).")


class ReviewTriggersConfig(ConfigModel):
    """Which `pull_request` actions start an automatic review."""

    on_opened: Bool = Field(True, description="Review on `pull_request.opened`.")
    on_ready_for_review: Bool = Field(True, description="Review on `ready_for_review`.")
    on_review_requested: Bool = Field(True, description="Review on `review_requested`.")
    on_synchronize: Bool = Field(False, description="Review on `synchronize` (new pushes).")


class ReviewSeverityConfig(ConfigModel):
    """The lowest severity reported."""

    min_level: SeverityValue = Field("minor", description="Report findings at or above this level.")


class SuppressionPatternConfig(ConfigModel):
    """An object-form suppression: a title pattern narrowed by severity, category and paths."""

    pattern: NonEmptyStr = Field(
        default_factory=required,
        validate_default=True,
        description="Title pattern: substring, `glob:` or `regex:` prefix.",
    )
    severity: list[SeverityValue] | None = Field(None, description="Only findings of these severities.")
    category: list[FocusAreaValue] | None = Field(None, description="Only findings of these categories.")
    paths: list[Str] | None = Field(None, description="Only findings in files matching one of these globs.")


Suppression = Annotated[
    Annotated[NonEmptyStr, Tag(UNION_STRING)] | Annotated[SuppressionPatternConfig, Tag(UNION_OBJECT)],
    string_or(UNION_OBJECT),
]
PathSpec = Annotated[
    Annotated[Str, Tag(UNION_STRING)] | Annotated[list[Str], Tag(UNION_ARRAY)],
    string_or(UNION_ARRAY),
]


class PrioritizationConfig(ConfigModel):
    """Weights of the finding prioritiser."""

    severity: Annotated[float, Js(ge=0, le=1)] = _weight(0.45, "severity")
    file_risk: Annotated[float, Js(ge=0, le=1)] = _weight(0.3, "file risk")
    category: Annotated[float, Js(ge=0, le=1)] = _weight(0.15, "category")
    recurrence: Annotated[float, Js(ge=0, le=1)] = _weight(0.1, "recurrence")


class PathInstructionConfig(ConfigModel):
    """Extra review instructions for the changed files matching `path`."""

    path: PathSpec = Field(
        default_factory=required, validate_default=True, description="A glob or a list of globs."
    )
    instructions: Str = Field(
        default_factory=required, validate_default=True, description="Instructions for matching files."
    )


class FileCategoriesConfig(ConfigModel):
    """Extra globs per file category for diff analysis; absent keys stay absent."""

    source: list[Str] | None = Field(None, description="Globs of source files.")
    test: list[Str] | None = Field(None, description="Globs of test files.")
    config: list[Str] | None = Field(None, description="Globs of configuration files.")
    docs: list[Str] | None = Field(None, description="Globs of documentation files.")
    infra: list[Str] | None = Field(None, description="Globs of infrastructure files.")


class ReviewConfig(ConfigModel):
    """Automatic pull-request review."""

    enabled: Bool = Field(True, description="Master switch for automatic reviews.")
    ui_rereview_team: OptStr = Field(None, description="Team requested as reviewer on open.")
    request_ui_rereview_team_on_open: Bool = Field(
        False, description="Request `uiRereviewTeam` on opened/ready_for_review."
    )
    triggers: ReviewTriggersConfig = Field(
        default_factory=ReviewTriggersConfig, description="Pull-request actions that start a review."
    )
    auto_approve: Bool = Field(True, description="Approve when a clean review published nothing.")
    prompt: OptStr = Field(None, description="Custom instructions for the review prompt.")
    skip_authors: list[Str] = Field(default_factory=list, description="PR author logins never reviewed.")
    skip_paths: list[Str] = Field(default_factory=list, description="Globs of changed files to ignore.")
    mode: Annotated[ReviewMode, Js()] = Field("standard", description="`enhanced` adds per-comment metadata.")
    severity: ReviewSeverityConfig = Field(
        default_factory=ReviewSeverityConfig, description="Minimum reported severity."
    )
    focus_areas: list[FocusAreaValue] = Field(default_factory=list, description="Areas to concentrate on.")
    ignored_areas: list[FocusAreaValue] = Field(
        default_factory=list, description="Areas skipped unless critical."
    )
    max_comments: Annotated[float, Js(ge=1, le=25)] = Field(7, description="Inline comment cap.")
    suppressions: list[Suppression] = Field(
        default_factory=list, description="Finding titles to suppress (string or object form)."
    )
    min_confidence: Annotated[float, Js(ge=0, le=100)] = Field(
        0, description="Findings below this confidence are hidden."
    )
    prioritization: PrioritizationConfig = Field(
        default_factory=PrioritizationConfig, description="Finding prioritisation weights."
    )
    path_instructions: list[PathInstructionConfig] = Field(
        default_factory=list, description="Extra instructions per path glob."
    )
    profile: Annotated[ReviewProfile | None, Js()] = Field(None, description="Manual review profile.")
    output_language: Str = Field("en", description="Language of the review prose.")
    file_categories: FileCategoriesConfig | None = Field(None, description="Extra globs per file category.")


SEVERITY_ORDER: tuple[Severity, ...] = ("critical", "major", "medium", "minor")
