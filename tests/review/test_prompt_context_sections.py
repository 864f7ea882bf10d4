"""R4.6 focus hints, author tone, language guidance, output language, retrieval, Reviewed line (RP-039…065)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kodiai.review.prompt import RetrievalContext, build_review_prompt
from kodiai.review.prompt.change_context import build_reviewed_categories_line
from kodiai.review.prompt.intent import build_author_experience_section, build_focus_hints_section
from kodiai.review.prompt.language import build_language_guidance_section, build_output_language_section
from kodiai.review.prompt.retrieval import build_retrieval_context_section


def make(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "owner": "acme",
        "repo": "repo",
        "pr_number": 3,
        "pr_title": "Tweak",
        "pr_author": "alice",
        "base_branch": "main",
        "head_branch": "feature",
        "changed_files": ["src/a.ts"],
    }
    base.update(overrides)
    return build_review_prompt(base)


def finding(text: str = "Unchecked null return", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "finding_text": text,
        "severity": "major",
        "category": "correctness",
        "file_path": "src/example.ts",
        "outcome": "accepted",
        "distance": 0.2,
        "source_repo": "acme/repo",
    }
    base.update(overrides)
    return base


def test_rp_039_focus_hints_section() -> None:
    prompt = make(focus_hints=["auth", "ios"])
    assert "## Focus Hints" in prompt
    assert "- [AUTH]" in prompt
    assert "- [IOS]" in prompt


def test_rp_040_empty_focus_hints_have_no_section() -> None:
    assert "## Focus Hints" not in make(focus_hints=[])


def test_focus_hints_deduplicated_case_insensitively() -> None:
    """R2.32 item 18: hints are lowercased and de-duplicated before rendering."""
    assert build_focus_hints_section(["Auth", "auth", "AUTH", "ios"]).count("- [AUTH]") == 1


def test_rp_041_first_time_author_section() -> None:
    section = build_author_experience_section("first-time", "newbie42")
    for text in (
        "Author Experience Context",
        "first-time or new contributor",
        "encouraging, welcoming",
        "Explain WHY",
        "learning opportunities",
        "newbie42",
    ):
        assert text in section


def test_rp_042_core_author_section() -> None:
    section = build_author_experience_section("core", "maintainer1")
    for text in ("core contributor", "concise", "terse", "maintainer1"):
        assert text in section


def test_rp_043_regular_author_is_empty() -> None:
    assert build_author_experience_section("regular", "bob") == ""
    assert "Author Experience Context" not in make(author_tier="regular")


def test_rp_044_language_guidance_empty_map() -> None:
    assert build_language_guidance_section({}) == ""


def test_rp_045_language_guidance_unknown_only() -> None:
    assert build_language_guidance_section({"Unknown": ["a.xyz"]}) == ""


def test_rp_046_python_guidance() -> None:
    section = build_language_guidance_section({"Python": ["a.py", "b.py"]})
    assert "### Python (2 file(s))" in section
    rules = [line for line in section.split("\n") if line.startswith("- ")]
    assert len(rules) == 4


def test_rp_047_at_most_five_languages() -> None:
    langs = {lang: ["f"] for lang in ("Python", "Go", "Rust", "Java", "C++", "Ruby", "PHP")}
    section = build_language_guidance_section(langs)
    assert sum(1 for line in section.split("\n") if line.startswith("### ")) == 5


def test_rp_048_languages_ordered_by_file_count() -> None:
    section = build_language_guidance_section(
        {"Ruby": ["a.rb"], "Python": ["a.py", "b.py", "c.py"], "Go": ["a.go", "b.go"]}
    )
    assert section.index("### Python") < section.index("### Go") < section.index("### Ruby")


def test_language_ordering_is_stable_for_ties() -> None:
    """Equal counts keep the map's order (JS sort is stable)."""
    section = build_language_guidance_section({"Swift": ["a"], "C": ["b"], "Go": ["c"]})
    assert section.index("### Swift") < section.index("### C (") < section.index("### Go")


def test_rp_049_taxonomy_note() -> None:
    section = build_language_guidance_section({"Go": ["a.go"]})
    for word in ("CRITICAL", "MAJOR", "MEDIUM", "MINOR"):
        assert word in section
    for category in ("security", "correctness", "performance", "error-handling", "style", "documentation"):
        assert category in section


def test_rp_050_output_language_en_is_empty() -> None:
    assert build_output_language_section("en") == ""


def test_rp_051_output_language_en_case_insensitive() -> None:
    assert build_output_language_section("EN") == ""


def test_rp_052_output_language_ja() -> None:
    section = build_output_language_section("ja")
    assert "## Output Language" in section
    assert "in ja" in section


def test_rp_053_output_language_lists_english_items() -> None:
    section = build_output_language_section("ja")
    for text in ("Severity labels", "Category labels", "identifiers", "snippets", "File paths", "YAML"):
        assert text in section
    assert "Only the human-readable explanation text should be localized." in section


def test_rp_054_prompt_includes_language_guidance() -> None:
    prompt = make(files_by_language={"Python": ["a.py"], "Go": ["b.go"]})
    assert "### Python (1 file(s))" in prompt
    assert "### Go (1 file(s))" in prompt


def test_rp_055_prompt_includes_output_language() -> None:
    assert "## Output Language" in make(output_language="ja")


def test_rp_056_no_language_sections_without_inputs() -> None:
    prompt = make()
    assert "## Language-Specific Guidance" not in prompt
    assert "## Output Language" not in prompt


def test_rp_057_retrieval_section_provenance_instructions() -> None:
    section = build_retrieval_context_section(RetrievalContext(findings=[finding()]))
    assert "Prior pattern:" in section
    assert "append a brief provenance note" in section
    assert "When a finding in your review directly relates to one of these prior findings" in section
    assert section.startswith("## Similar Prior Findings (Learning Context)")


def test_rp_058_retrieval_section_empty_without_findings() -> None:
    assert build_retrieval_context_section(RetrievalContext(findings=[])) == ""
    assert build_retrieval_context_section(None) == ""


def test_retrieval_entry_shows_severity_category_path_outcome_distance() -> None:
    """Issue 4: each memory lists severity, category, path, outcome and distance."""
    section = build_retrieval_context_section(
        RetrievalContext(findings=[finding(distance=0.3149, outcome="suppressed", category="security")])
    )
    assert (
        '- [major/security] "Unchecked null return" (file: "src/example.ts", outcome: suppressed, distance: 0.315)'
        in section
    )
    assert "confidence:" not in section


def test_retrieval_entry_shows_confidence_label_when_present() -> None:
    """The learning pipeline's label (high|medium|low) is shown per memory, from a string or a label object."""

    class Label:
        value = "medium"

    section = build_retrieval_context_section(
        RetrievalContext(findings=[finding(confidence="high"), finding("Second", confidence=Label())])
    )
    assert "distance: 0.200, confidence: high)" in section
    assert (
        '- [major/correctness] "Second" (file: "src/example.ts", outcome: accepted, distance: 0.200, '
        "confidence: medium)" in section
    )
    with pytest.raises(ValidationError):
        RetrievalContext(findings=[finding(confidence="certain")])


def test_retrieval_section_honours_max_context_chars() -> None:
    """PARITY Q13 fix: the section never exceeds ``knowledge.retrieval.maxContextChars``. (800, not the
    original's 700: the past-data line and the tags of issue 23 take about 140 more characters.)"""
    findings = [finding(f"finding number {i} " + "x" * 80) for i in range(40)]
    for cap in (800, 1000, 2000, 5000):
        section = build_retrieval_context_section(RetrievalContext(findings=findings, max_context_chars=cap))
        assert 0 < len(section) <= cap
    small = build_retrieval_context_section(RetrievalContext(findings=findings, max_context_chars=900))
    large = build_retrieval_context_section(RetrievalContext(findings=findings, max_context_chars=3000))
    assert small.count("\n- [") < large.count("\n- [")
    assert "finding number 0 " in small
    # Entries are kept in input order; the cut drops the tail, never the head.
    assert large.index("finding number 0 ") < large.index("finding number 1 ")


def test_retrieval_default_cap_is_2000() -> None:
    findings = [finding("y" * 150) for _ in range(40)]
    section = build_retrieval_context_section(RetrievalContext(findings=findings))
    # Full up to less than one more entry (each is ~235 characters).
    assert 1765 < len(section) <= 2000


def test_retrieval_cap_zero_disables_section() -> None:
    """Decision: ``maxContextChars: 0`` leaves the learning context out of the prompt."""
    assert build_retrieval_context_section(RetrievalContext(findings=[finding()], max_context_chars=0)) == ""
    assert "Similar Prior Findings" not in make(
        retrieval_context={"findings": [finding()], "max_context_chars": 0}
    )


def test_retrieval_section_left_out_when_no_entry_fits() -> None:
    section = build_retrieval_context_section(
        RetrievalContext(findings=[finding("z" * 3000)], max_context_chars=2000)
    )
    assert section == ""


def test_rp_059_reviewed_line_source_and_test() -> None:
    line = build_reviewed_categories_line(
        {"source": ["a"], "test": ["b"], "config": [], "docs": [], "infra": []}
    )
    assert line == "Reviewed: core logic, tests"


def test_rp_060_reviewed_line_all_categories() -> None:
    line = build_reviewed_categories_line(
        {"source": ["a"], "test": ["b"], "config": ["c"], "docs": ["d"], "infra": ["e"]}
    )
    assert line == "Reviewed: core logic, tests, config, docs, infrastructure"


def test_rp_061_reviewed_line_all_empty() -> None:
    assert (
        build_reviewed_categories_line({"source": [], "test": [], "config": [], "docs": [], "infra": []})
        == ""
    )


def test_rp_062_reviewed_line_only_tests() -> None:
    assert build_reviewed_categories_line({"source": [], "test": ["t"]}) == "Reviewed: tests"


def test_rp_063_reviewed_line_unknown_key_verbatim() -> None:
    assert build_reviewed_categories_line({"customCategory": ["x"]}) == "Reviewed: customCategory"


def test_rp_064_standard_prompt_has_reviewed_line() -> None:
    prompt = make(
        diff_analysis={
            "files_by_category": {
                "source": ["a.ts"],
                "test": ["a.test.ts"],
                "config": [],
                "docs": [],
                "infra": [],
            },
            "metrics": {"total_files": 2, "total_lines_added": 1, "total_lines_removed": 0, "hunks_count": 1},
        }
    )
    assert "Reviewed: core logic, tests" in prompt


def test_rp_065_standard_prompt_without_diff_analysis_has_no_reviewed_line() -> None:
    assert "Reviewed:" not in make()
