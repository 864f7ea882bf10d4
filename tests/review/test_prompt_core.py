"""R4.6 review prompt: defaults, mode, severity/focus/limit, suppressions, confidence (RP-001…018, 036–038)."""

from __future__ import annotations

from typing import Any

from kodiai.review.prompt import ReviewPromptContext, build_review_prompt
from kodiai.review.prompt.filters import build_confidence_section, build_suppression_rules_section
from kodiai.review.prompt.instructions import SEVERITY_GUIDELINES


def make(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "owner": "acme",
        "repo": "repo",
        "pr_number": 42,
        "pr_title": "Add login flow",
        "pr_body": "Implements the login flow.",
        "pr_author": "alice",
        "base_branch": "main",
        "head_branch": "feature/login",
        "changed_files": ["src/login.ts", "src/session.ts"],
    }
    base.update(overrides)
    return build_review_prompt(ReviewPromptContext.model_validate(base))


def test_rp_001_default_has_severity_classification() -> None:
    prompt = make()
    assert "Severity Classification" in prompt
    for word in ("CRITICAL", "MAJOR", "MEDIUM", "MINOR"):
        assert word in prompt


def test_rp_002_default_has_noise_suppression() -> None:
    prompt = make()
    assert "Noise Suppression" in prompt
    assert "NEVER flag" in prompt
    assert "Style-only" in prompt


def test_rp_003_default_comment_limit_is_7() -> None:
    assert "at most 7 inline comments" in make()


def test_rp_004_default_is_standard_mode() -> None:
    prompt = make()
    assert "[CRITICAL]" in prompt
    assert "[MAJOR]" in prompt
    assert "Standard Mode" in prompt
    assert "```yaml" not in prompt


def test_rp_005_default_has_five_section_summary() -> None:
    prompt = make()
    for text in (
        "Kodiai Review Summary",
        "summary comment",
        "## What Changed",
        "## Observations",
        "## Verdict",
        ":white_check_mark:",
    ):
        assert text in prompt
    assert "MUST be issues-only" not in prompt


def test_rp_006_enhanced_mode_has_yaml_block() -> None:
    prompt = make(mode="enhanced")
    for text in ("```yaml", "severity:", "category:", "suggested_action:", "Enhanced Mode"):
        assert text in prompt
    assert "Standard Mode" not in prompt


def test_rp_007_enhanced_mode_has_no_summary() -> None:
    prompt = make(mode="enhanced")
    assert "Do NOT post a top-level summary comment" in prompt
    assert "Kodiai Review Summary" not in prompt


def test_rp_008_min_level_major() -> None:
    prompt = make(severity_min_level="major")
    assert "Only report findings at these severity levels: critical, major." in prompt
    assert "Do NOT generate findings below major" in prompt


def test_rp_009_min_level_minor_has_no_filter() -> None:
    prompt = make(severity_min_level="minor")
    assert "Do NOT generate findings below" not in prompt
    assert "## Severity Filter" not in prompt


def test_rp_010_focus_areas() -> None:
    prompt = make(focus_areas=["security", "correctness"])
    assert "Concentrate your review on these categories: security, correctness" in prompt
    assert "only report CRITICAL" in prompt


def test_rp_011_ignored_areas() -> None:
    prompt = make(ignored_areas=["style"])
    assert "SKIP these categories" in prompt
    assert "Explicitly SKIP these categories unless the finding is CRITICAL: style." in prompt


def test_rp_012_max_comments_3() -> None:
    prompt = make(max_comments=3)
    assert "at most 3 inline comments" in prompt
    assert "at most 7 inline comments" not in prompt


def test_rp_013_suppression_section_renders_patterns_and_filters() -> None:
    section = build_suppression_rules_section(
        ReviewPromptContext.model_validate(
            {
                "owner": "o",
                "repo": "r",
                "pr_number": 1,
                "pr_title": "t",
                "pr_author": "a",
                "base_branch": "main",
                "head_branch": "h",
                "suppressions": [
                    "missing JSDoc",
                    {
                        "pattern": "regex:missing.*handling",
                        "severity": ["major"],
                        "category": ["correctness"],
                        "paths": ["src/**"],
                    },
                ],
            }
        ).suppressions
    )
    assert "- pattern: missing JSDoc\n" in section
    assert (
        "- pattern: regex:missing.*handling (severity=[major]; category=[correctness]; paths=[src/**])"
        in section
    )


def test_rp_014_no_suppressions_gives_empty_section() -> None:
    assert build_suppression_rules_section([]) == ""


def test_rp_015_suppression_section_protects_critical() -> None:
    assert "NEVER suppress findings at CRITICAL severity" in build_suppression_rules_section(["x"])


def test_rp_016_confidence_display() -> None:
    zero = build_confidence_section(0)
    assert "## Confidence Display" in zero
    assert "separate collapsible section" not in zero
    forty = build_confidence_section(40)
    assert "below 40% confidence" in forty
    assert "separate collapsible section" in forty


def test_rp_017_custom_instructions_after_noise_suppression() -> None:
    prompt = make(custom_instructions="Always check the migration files.")
    assert "## Custom instructions" in prompt
    assert prompt.index("Always check the migration files.") > prompt.index("## Noise Suppression")


def test_rp_018_path_context_severity_rules() -> None:
    assert "Test files" in SEVERITY_GUIDELINES
    assert "downgrade" in SEVERITY_GUIDELINES
    assert "Test files" in make()


def test_rp_036_suppressions_and_confidence_in_enhanced_mode() -> None:
    prompt = make(mode="enhanced", suppressions=["missing JSDoc"], min_confidence=40)
    assert "## Suppression Rules" in prompt
    assert "- pattern: missing JSDoc" in prompt
    assert "below 40% confidence" in prompt


def test_rp_037_empty_suppressions_have_no_section() -> None:
    assert "## Suppression Rules" not in make(suppressions=[])


def test_rp_038_minimal_context() -> None:
    prompt = make()
    assert "Changed files:" in prompt
    assert "## Change Context" not in prompt
    assert "Path-Specific Review Instructions" not in prompt


def test_custom_instructions_blank_are_left_out() -> None:
    """A blank ``review.prompt`` adds no empty section."""
    assert "## Custom instructions" not in make(custom_instructions="   ")
