"""``build_review_prompt``: assemble the sections in the order of behaviour R2.32."""

from __future__ import annotations

from typing import Any

from kodiai.review.prompt.dep_bump import build_dep_bump_section

from .change_context import (
    build_diff_analysis_section,
    build_incremental_review_section,
    build_large_pr_triage_section,
    build_reviewed_categories_line,
)
from .context import ReviewPromptContext
from .filters import (
    build_comment_limit_section,
    build_confidence_section,
    build_focus_areas_section,
    build_severity_filter_section,
    build_suppression_rules_section,
)
from .header import (
    build_changed_files_section,
    build_description_section,
    build_header_section,
    build_scale_notes_section,
    prepare_pr,
)
from .instructions import (
    AFTER_REVIEW,
    FINDING_LANGUAGE_GUIDELINES,
    HOW_TO_REPORT,
    NOISE_SUPPRESSION,
    RULES,
    SEVERITY_GUIDELINES,
    WHAT_TO_LOOK_FOR,
    build_mode_section,
    build_reading_code_section,
)
from .intent import (
    build_author_experience_section,
    build_conventional_commit_section,
    build_focus_hints_section,
    build_pr_intent_scoping_section,
)
from .language import build_language_guidance_section, build_output_language_section
from .path_instructions import build_path_instructions_section
from .retrieval import build_retrieval_context_section
from .summary import ENHANCED_SUMMARY_NOTE, build_delta_summary_section, build_standard_summary_section


def _summary_sections(ctx: ReviewPromptContext) -> list[str]:
    """Item 29 and 30: enhanced note, delta template, or the standard template; then "After review"."""
    if ctx.mode == "enhanced":
        return [ENHANCED_SUMMARY_NOTE, AFTER_REVIEW]
    if ctx.delta_context is not None:
        return [build_delta_summary_section(ctx.delta_context)]
    reviewed = (
        build_reviewed_categories_line(ctx.diff_analysis.files_by_category) if ctx.diff_analysis else ""
    )
    return [build_standard_summary_section(reviewed), AFTER_REVIEW]


def _custom_instructions_section(text: str | None) -> str:
    if not text or not text.strip():
        return ""
    return f"## Custom instructions\n\n{text.strip()}"


def build_review_prompt(context: ReviewPromptContext | dict[str, Any]) -> str:
    """Build the review prompt: non-empty sections joined with a blank line between them."""
    ctx = ReviewPromptContext.model_validate(context)
    pr = prepare_pr(ctx)
    sections = [
        build_header_section(ctx, pr),
        build_scale_notes_section(pr),
        build_description_section(pr),
        build_changed_files_section(pr),
        build_diff_analysis_section(ctx.diff_analysis, has_large_pr_context=ctx.large_pr_context is not None),
        build_large_pr_triage_section(ctx.large_pr_context),
        build_incremental_review_section(ctx.incremental_context),
        build_retrieval_context_section(ctx.retrieval_context),
        build_language_guidance_section(ctx.files_by_language),
        build_reading_code_section(ctx.base_branch, ctx.diff_range),
        WHAT_TO_LOOK_FOR,
        HOW_TO_REPORT,
        RULES,
        SEVERITY_GUIDELINES,
        build_mode_section(ctx.mode),
        NOISE_SUPPRESSION,
        build_pr_intent_scoping_section(ctx.head_branch, ctx.pr_labels),
        build_focus_hints_section(ctx.focus_hints),
        build_conventional_commit_section(ctx.conventional_type),
        FINDING_LANGUAGE_GUIDELINES,
        build_author_experience_section(ctx.author_tier, ctx.pr_author),
        build_dep_bump_section(ctx.dep_bump_context),
        build_path_instructions_section(ctx.matched_path_instructions),
        build_comment_limit_section(ctx.max_comments),
        build_severity_filter_section(ctx.severity_min_level),
        build_focus_areas_section(ctx.focus_areas, ctx.ignored_areas),
        build_suppression_rules_section(ctx.suppressions),
        build_confidence_section(ctx.min_confidence),
        *_summary_sections(ctx),
        _custom_instructions_section(ctx.custom_instructions),
        build_output_language_section(ctx.output_language),
    ]
    return "\n\n".join(section for section in sections if section)
