"""R4.6 summary template, verdict logic, intent scoping, labels, tone and delta re-review (RP-066…097)."""

from __future__ import annotations

from typing import Any

from kodiai.review.prompt import build_review_prompt
from kodiai.review.prompt.context import DeltaContext
from kodiai.review.prompt.instructions import FINDING_LANGUAGE_GUIDELINES
from kodiai.review.prompt.intent import build_pr_intent_scoping_section
from kodiai.review.prompt.summary import build_delta_context_section

DELTA: dict[str, Any] = {
    "last_reviewed_head_sha": "abc1234def5678",
    "changed_files_since_last_review": ["src/auth.ts", "src/db.ts"],
    "prior_findings": [
        {
            "file_path": "src/auth.ts",
            "title": "SQL injection in login query",
            "severity": "critical",
            "category": "security",
        },
        {
            "file_path": "src/db.ts",
            "title": "Connection pool leak",
            "severity": "major",
            "category": "performance",
        },
    ],
}


def make(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "owner": "acme",
        "repo": "repo",
        "pr_number": 5,
        "pr_title": "Fix auth bypass",
        "pr_author": "alice",
        "base_branch": "main",
        "head_branch": "fix/auth-bypass",
        "changed_files": ["src/auth.ts"],
    }
    base.update(overrides)
    return build_review_prompt(base)


def test_rp_066_impact_before_preference_without_severity_headings() -> None:
    prompt = make()
    assert prompt.index("### Impact") < prompt.index("### Preference")
    for heading in ("### Critical", "### Major", "### Medium", "### Minor"):
        assert heading not in prompt


def test_rp_067_observations_template_shows_tags() -> None:
    prompt = make()
    window = prompt[prompt.index("## Observations") :][:800]
    for tag in ("[CRITICAL]", "[MAJOR]", "[MINOR]"):
        assert tag in window


def test_rp_068_impact_required_preference_optional() -> None:
    prompt = make()
    assert "### Impact is REQUIRED" in prompt
    assert "### Preference is optional" in prompt


def test_rp_069_blockers_go_under_impact() -> None:
    prompt = make()
    assert "CRITICAL and MAJOR findings MUST go under ### Impact" in prompt
    assert "Preference findings are capped at MEDIUM severity" in prompt


def test_rp_070_prompt_has_intent_scoping() -> None:
    assert "## PR Intent Scoping" in make()


def test_rp_071_labels_line() -> None:
    assert "Labels: bug, ci-fix" in make(pr_labels=["bug", "ci-fix"])


def test_rp_072_empty_labels_have_no_line() -> None:
    assert "Labels:" not in make(pr_labels=[])


def test_rp_073_undefined_labels_have_no_line() -> None:
    assert "Labels:" not in make()


def test_rp_074_prompt_has_finding_language_guidelines() -> None:
    assert "## Finding Language Guidelines" in make()


def test_rp_075_tone_guidelines_stabilising_phrases() -> None:
    for text in ("preserves existing behavior", "backward compatible", "minimal impact"):
        assert text in FINDING_LANGUAGE_GUIDELINES


def test_rp_076_tone_guidelines_hedging() -> None:
    assert "could potentially" in FINDING_LANGUAGE_GUIDELINES


def test_rp_077_intent_scoping_without_labels() -> None:
    section = build_pr_intent_scoping_section("fix/auth-bypass", None)
    for text in ("Branch: fix/auth-bypass", "CI/test fix", "Bug fix", "Feature"):
        assert text in section
    assert "Findings outside the PR's intent belong in Preference unless CRITICAL severity" in section
    assert "Labels" not in section


def test_rp_078_intent_scoping_with_labels() -> None:
    section = build_pr_intent_scoping_section("feat/ui", ["enhancement", "frontend"])
    assert "Labels (if present): enhancement, frontend" in section
    assert "Branch: feat/ui" in section


def test_rp_079_tone_section_specifics() -> None:
    for text in (
        "WHAT",
        "WHEN",
        "WHY",
        "causes [specific issue] when [specific condition]",
        "Optional:",
        "consider refactoring",
        "this might have problems",
    ):
        assert text in FINDING_LANGUAGE_GUIDELINES


def test_rp_080_enhanced_mode_has_no_impact_or_preference() -> None:
    prompt = make(mode="enhanced")
    assert "### Impact" not in prompt
    assert "### Preference" not in prompt
    assert "Do NOT post a top-level summary comment" in prompt


def test_rp_081_labels_after_branches() -> None:
    prompt = make(pr_labels=["bug"])
    assert prompt.index("Branches: fix/auth-bypass -> main") < prompt.index("Labels: bug")


def test_rp_082_intent_scoping_after_noise_suppression() -> None:
    prompt = make()
    assert prompt.index("## Noise Suppression") < prompt.index("## PR Intent Scoping")


def test_rp_083_language_guidelines_after_intent_scoping() -> None:
    prompt = make()
    assert prompt.index("## PR Intent Scoping") < prompt.index("## Finding Language Guidelines")


def test_rp_084_three_verdict_states() -> None:
    prompt = make()
    for text in ("Ready to merge", "Ready to merge with minor items", "Address before merging"):
        assert text in prompt


def test_rp_085_verdict_emojis() -> None:
    prompt = make()
    assert ":green_circle: **Ready to merge**" in prompt
    assert ":yellow_circle: **Ready to merge with minor items**" in prompt
    assert ":red_circle: **Address before merging**" in prompt


def test_rp_086_blocker_definition() -> None:
    assert 'A "blocker" is any finding with severity CRITICAL or MAJOR under ### Impact' in make()


def test_rp_087_counting_rules() -> None:
    prompt = make()
    rules = [
        "1. Count the number",
        "2. If count > 0:",
        "3. If count == 0 AND there are non-blocking findings",
        "4. If count == 0 AND there are no findings at all:",
    ]
    positions = [prompt.index(rule) for rule in rules]
    assert positions == sorted(positions)


def test_rp_088_suggestions_template() -> None:
    prompt = make()
    assert "Optional: <low-friction cleanup" in prompt
    assert "Future consideration: <larger improvement" in prompt


def test_rp_089_verdict_hard_requirements() -> None:
    prompt = make()
    assert "determine which one using the Verdict Logic rules above" in prompt
    assert (
        "Zero blockers = :green_circle: or :yellow_circle: verdict. Never :red_circle: without blockers"
        in prompt
    )


def test_rp_090_suggestions_hard_requirements() -> None:
    prompt = make()
    assert "every item MUST start with 'Optional:' or 'Future consideration:'" in prompt
    assert "suggestions are NEVER counted against merge readiness" in prompt


def test_rp_091_enhanced_has_no_verdict_logic() -> None:
    assert "Verdict Logic" not in make(mode="enhanced")


def test_rp_092_delta_context_section() -> None:
    section = build_delta_context_section(DeltaContext.model_validate(DELTA))
    assert "## Delta Review Context" in section
    assert "abc1234" in section
    assert "abc1234d" not in section
    assert "- src/auth.ts\n- src/db.ts" in section
    assert '[CRITICAL] "src/auth.ts": "SQL injection in login query"' in section
    assert '[MAJOR] "src/db.ts": "Connection pool leak"' in section
    assert "Prior review findings (2):" in section
    for word in ("NEW", "RESOLVED", "STILL OPEN"):
        assert word in section


def test_rp_093_delta_verdict_logic() -> None:
    prompt = make(delta_context=DELTA)
    assert "Verdict Update Logic" in prompt
    for emoji in (":green_circle:", ":yellow_circle:", ":large_blue_circle:"):
        assert emoji in prompt
    for label in ("New blockers found", "Blockers resolved", "Still ready"):
        assert label in prompt


def test_rp_094_delta_uses_rereview_template() -> None:
    prompt = make(delta_context=DELTA)
    for text in (
        "Kodiai Re-Review Summary",
        "## Re-review",
        "## What Changed",
        "## Verdict Update",
        ":new:",
        ":white_check_mark:",
    ):
        assert text in prompt
    assert "<summary>Kodiai Review Summary</summary>" not in prompt


def test_rp_095_null_delta_uses_standard_template() -> None:
    prompt = make(delta_context=None)
    assert "Kodiai Re-Review Summary" not in prompt
    assert "<summary>Kodiai Review Summary</summary>" in prompt


def test_rp_096_delta_hard_requirements_sections() -> None:
    prompt = make(delta_context=DELTA)
    requirements = prompt[prompt.index("### Hard requirements for the re-review summary") :]
    for text in ("New Findings", "Resolved Findings", "Still Open", "at least one must be present"):
        assert text in requirements


def test_rp_097_delta_hard_requirements_do_not_mention_impact() -> None:
    prompt = make(delta_context=DELTA)
    window = prompt[prompt.index("### Hard requirements for the re-review summary") :][:1500]
    assert "### Impact" not in window
    assert "### Preference" not in window


def test_delta_lists_are_capped() -> None:
    """R2.32 item 29: at most 50 changed files and 30 prior findings in the delta context."""
    delta = DeltaContext.model_validate(
        {
            "last_reviewed_head_sha": "0123456789",
            "changed_files_since_last_review": [f"f{i}.ts" for i in range(53)],
            "prior_findings": [
                {"file_path": "a.ts", "title": f"t{i}", "severity": "minor", "category": "style"}
                for i in range(33)
            ],
        }
    )
    section = build_delta_context_section(delta)
    assert "- f49.ts" in section and "- f50.ts" not in section
    assert "- ...(3 more files omitted)" in section
    assert '[MINOR] "a.ts": "t29"' in section and "t30" not in section
    assert "- ...(3 more findings omitted)" in section


def test_enhanced_mode_wins_over_delta() -> None:
    prompt = make(mode="enhanced", delta_context=DELTA)
    assert "Do NOT post a top-level summary comment" in prompt
    assert "Kodiai Re-Review Summary" not in prompt


def test_conventional_commit_context() -> None:
    """R2.32 item 19: guidance for feat…chore, none for style/build/revert, breaking paragraph always."""
    feat = make(conventional_type={"type": "feat", "is_breaking": False})
    assert "## Conventional Commit Context" in feat
    assert "**BREAKING CHANGE indicated.**" not in feat
    assert "## Conventional Commit Context" not in make(
        conventional_type={"type": "style", "is_breaking": False}
    )
    breaking_style = make(conventional_type={"type": "build", "is_breaking": True})
    assert "## Conventional Commit Context" in breaking_style
    assert "**BREAKING CHANGE indicated.**" in breaking_style
    for kind in ("feat", "fix", "docs", "refactor", "perf", "test", "ci", "chore"):
        assert "## Conventional Commit Context" in make(conventional_type={"type": kind})
