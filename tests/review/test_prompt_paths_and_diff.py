"""R4.6 path instructions (RP-019…028, 035) and the Change Context section (RP-029…034)."""

from __future__ import annotations

from typing import Any

from kodiai.review.prompt import (
    PathInstructionMatch,
    ReviewPromptContext,
    build_path_instructions_section,
    build_review_prompt,
    match_path_instructions,
)
from kodiai.review.prompt.change_context import build_diff_analysis_section
from kodiai.review.prompt.context import DiffAnalysisView

FILES = [
    "src/api/auth.ts",
    "src/api/users.ts",
    "src/db/pool.ts",
    "src/main.ts",
    "src/main.test.ts",
    "README.md",
]


def make(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "owner": "acme",
        "repo": "repo",
        "pr_number": 7,
        "pr_title": "Change things",
        "pr_author": "alice",
        "base_branch": "main",
        "head_branch": "feature",
        "changed_files": FILES,
    }
    base.update(overrides)
    return build_review_prompt(base)


def analysis(**overrides: Any) -> DiffAnalysisView:
    base: dict[str, Any] = {
        "files_by_category": {
            "source": ["src/a.ts"],
            "test": ["src/a.test.ts"],
            "config": ["tsconfig.json"],
            "docs": [],
            "infra": [],
        },
        "risk_signals": [],
        "metrics": {"total_files": 3, "total_lines_added": 120, "total_lines_removed": 45, "hunks_count": 0},
        "is_large_pr": False,
    }
    base.update(overrides)
    return DiffAnalysisView.model_validate(base)


def test_rp_019_single_pattern_matches_only_api_file() -> None:
    result = match_path_instructions(
        [{"path": "src/api/**", "instructions": "Check auth."}], ["src/api/auth.ts", "src/db/pool.ts"]
    )
    assert [m.matched_files for m in result] == [["src/api/auth.ts"]]


def test_rp_020_pattern_list_is_a_union() -> None:
    result = match_path_instructions(
        [{"path": ["src/api/**", "src/db/**"], "instructions": "x"}], ["src/api/auth.ts", "src/db/pool.ts"]
    )
    assert result[0].matched_files == ["src/api/auth.ts", "src/db/pool.ts"]


def test_rp_021_negation_excludes_tests() -> None:
    result = match_path_instructions(
        [{"path": ["src/**", "!**/*.test.ts"], "instructions": "x"}], ["src/main.ts", "src/main.test.ts"]
    )
    assert result[0].matched_files == ["src/main.ts"]


def test_rp_022_negation_only_matches_everything_else() -> None:
    result = match_path_instructions([{"path": ["!**/*.md"], "instructions": "x"}], FILES)
    assert result[0].matched_files == [f for f in FILES if not f.endswith(".md")]


def test_rp_023_no_matches_gives_empty_list() -> None:
    assert match_path_instructions([{"path": "lib/**", "instructions": "x"}], FILES) == []


def test_rp_024_overlapping_entries_both_match() -> None:
    result = match_path_instructions(
        [{"path": "src/**", "instructions": "all"}, {"path": "src/api/**", "instructions": "api"}],
        ["src/api/auth.ts"],
    )
    assert [(m.instructions, m.matched_files) for m in result] == [
        ("all", ["src/api/auth.ts"]),
        ("api", ["src/api/auth.ts"]),
    ]


def test_rp_025_section_renders_label_files_and_instructions() -> None:
    matches = match_path_instructions(
        [{"path": "src/api/**", "instructions": "  Validate every request body.  "}], FILES
    )
    section = build_path_instructions_section(matches)
    assert section.startswith("## Path-Specific Review Instructions")
    assert "**src/api/** (applies to: src/api/auth.ts, src/api/users.ts)" in section
    assert "\nValidate every request body." in section


def test_rp_026_budget_overflow_adds_truncation_note() -> None:
    matches = [
        PathInstructionMatch(path="src/a/**", instructions="a" * 400, matched_files=["src/a/x.ts"]),
        PathInstructionMatch(path="src/b/**", instructions="b" * 400, matched_files=["src/b/x.ts"]),
    ]
    section = build_path_instructions_section(matches, max_chars=500)
    assert "truncated due to prompt size limits" in section
    assert "b" * 400 not in section
    assert len(section) <= 500
    # With room for one block (but not two plus the note), the first-ranked block is kept.
    roomy = build_path_instructions_section(matches, max_chars=800)
    assert "a" * 400 in roomy
    assert "b" * 400 not in roomy
    assert roomy.endswith("_Note: Additional path instructions were truncated due to prompt size limits._")
    assert len(roomy) <= 800


def test_rp_027_no_matches_gives_empty_section() -> None:
    assert build_path_instructions_section([]) == ""


def test_rp_028_file_list_capped_at_five() -> None:
    files = ["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/e.ts", "src/f.ts"]
    section = build_path_instructions_section(
        [PathInstructionMatch(path="src/*.ts", instructions="x", matched_files=files)]
    )
    assert "src/a.ts, src/b.ts, src/c.ts, src/d.ts, src/e.ts (and 1 more)" in section


def test_path_blocks_ranked_by_matches_then_specificity() -> None:
    """R2.32 item 23: rank = matched files × 1000 + specificity; wildcards cost 5 characters each."""
    broad = PathInstructionMatch(path="src/**", instructions="broad", matched_files=["a", "b"])
    narrow = PathInstructionMatch(path="src/api/**", instructions="narrow", matched_files=["a"])
    specific = PathInstructionMatch(path="src/api/auth.ts", instructions="specific", matched_files=["a"])
    section = build_path_instructions_section([narrow, specific, broad])
    assert section.index("broad") < section.index("specific") < section.index("narrow")
    assert "**src/api/auth.ts** (applies to: a)" in section


def test_path_label_for_list_joins_patterns() -> None:
    section = build_path_instructions_section(
        [PathInstructionMatch(path=["src/a.ts", "lib/b.ts"], instructions="x", matched_files=["src/a.ts"])]
    )
    assert "**src/a.ts, lib/b.ts** (applies to: src/a.ts)" in section


def test_rp_029_diff_section_summary_and_breakdown() -> None:
    section = build_diff_analysis_section(analysis())
    assert "This PR modifies 3 files (+120 / -45 lines)." in section
    assert "File breakdown:" in section
    assert "- source: 1 file(s)" in section
    assert "- test: 1 file(s)" in section
    assert "- config: 1 file(s)" in section
    assert "- docs:" not in section


def test_rp_030_diff_section_lists_risk_signals() -> None:
    section = build_diff_analysis_section(
        analysis(risk_signals=["Modifies authentication/authorization code"])
    )
    assert "Pay special attention to these areas:\n- Modifies authentication/authorization code" in section


def test_rp_031_diff_section_large_pr_note() -> None:
    assert "This is a large PR. Focus on the most critical changes." in build_diff_analysis_section(
        analysis(is_large_pr=True)
    )


def test_rp_032_diff_section_empty_for_zero_files() -> None:
    empty = analysis(
        metrics={"total_files": 0, "total_lines_added": 0, "total_lines_removed": 0, "hunks_count": 0}
    )
    assert build_diff_analysis_section(empty) == ""
    assert "## Change Context" not in make(diff_analysis=empty)


def test_rp_033_diff_section_hunks() -> None:
    section = build_diff_analysis_section(
        analysis(
            metrics={"total_files": 3, "total_lines_added": 1, "total_lines_removed": 2, "hunks_count": 9}
        )
    )
    assert "This PR modifies 3 files (+1 / -2 lines) across 9 hunks." in section


def test_rp_034_prompt_has_change_context_with_signal() -> None:
    prompt = make(diff_analysis=analysis(risk_signals=["Modifies dependency manifest"]))
    assert "## Change Context" in prompt
    assert "Modifies dependency manifest" in prompt


def test_rp_035_prompt_has_path_section_when_matched() -> None:
    matches = match_path_instructions([{"path": "src/api/**", "instructions": "Check rate limits."}], FILES)
    prompt = make(matched_path_instructions=matches)
    assert "## Path-Specific Review Instructions" in prompt
    assert "Check rate limits." in prompt


def test_x_37_large_pr_sentence_suppressed_with_triage_section() -> None:
    """R4.37 X-37: the "large PR" sentence disappears whenever a Large PR Triage section is present."""
    large = {
        "full_review_files": ["a.ts"],
        "abbreviated_files": ["b.ts"],
        "mention_only_count": 3,
        "total_files": 5,
    }
    prompt = make(diff_analysis=analysis(is_large_pr=True), large_pr_context=large)
    assert "This is a large PR." not in prompt
    assert "## Large PR Triage" in prompt
    assert (
        "This PR contains 5 files. Files have been prioritized by risk score for efficient review." in prompt
    )
    assert (
        "### Full Review (1 files)\nReview these files thoroughly for all issue categories:\n- a.ts" in prompt
    )
    assert "### Abbreviated Review (1 files)" in prompt
    assert "ONLY flag CRITICAL and MAJOR issues. Skip MEDIUM and MINOR findings." in prompt
    assert "3 additional file(s) were not included for review (lower risk score)." in prompt
    assert "This is a large PR." in make(diff_analysis=analysis(is_large_pr=True))


def test_diff_analysis_accepts_foreign_objects() -> None:
    """The prompt reads the pinned attribute names from any object (library A's DiffAnalysis)."""

    class Metrics:
        total_files = 2
        total_lines_added = 5
        total_lines_removed = 1
        hunks_count = 2

    class Foreign:
        def __init__(self) -> None:
            self.files_by_category = {"source": ["a.py", "b.py"]}
            self.risk_signals: list[str] = []
            self.metrics = Metrics()
            self.is_large_pr = False

    ctx = ReviewPromptContext.model_validate(
        {
            "owner": "o",
            "repo": "r",
            "pr_number": 1,
            "pr_title": "t",
            "pr_author": "a",
            "base_branch": "main",
            "head_branch": "h",
            "diff_analysis": Foreign(),
        }
    )
    assert "This PR modifies 2 files (+5 / -1 lines) across 2 hunks." in build_review_prompt(ctx)
