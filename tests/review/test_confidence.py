"""review.confidence (the knowledge confidence rules): behaviour R4.36 (KC-01…13) = behaviour P8.5
(#1–13), plus the JS traps of parity-vectors/README.md §3 for match_pattern / matches_suppression."""

from __future__ import annotations

import time

import pytest

from kodiai.review.confidence import (
    ConfidenceInput,
    SuppressionPattern,
    compute_confidence,
    first_matching_suppression,
    match_pattern,
    matches_suppression,
    suppression_label,
)

FINDING = {
    "title": "Missing error handling in fetch",
    "severity": "medium",
    "category": "correctness",
    "file_path": "src/api/client.ts",
}


def test_4_36_kc_01_capped_at_100() -> None:
    """R4.36 KC-01 / behaviour P8.5 #1: 50+30+15+10 = 105 → 100."""
    assert (
        compute_confidence(
            ConfidenceInput(severity="critical", category="security", matches_known_pattern=True)
        )
        == 100
    )


def test_4_36_kc_02_major_correctness() -> None:
    """R4.36 KC-02 / #2."""
    assert (
        compute_confidence({"severity": "major", "category": "correctness", "matches_known_pattern": False})
        == 80
    )


def test_4_36_kc_03_minor_style() -> None:
    """R4.36 KC-03 / #3."""
    assert (
        compute_confidence({"severity": "minor", "category": "style", "matches_known_pattern": False}) == 45
    )


def test_4_36_kc_04_minor_documentation() -> None:
    """R4.36 KC-04 / #4."""
    assert (
        compute_confidence({"severity": "minor", "category": "documentation", "matches_known_pattern": False})
        == 40
    )


def test_4_36_kc_05_plain_substring_case_insensitive() -> None:
    """R4.36 KC-05 / #5."""
    assert match_pattern("ERROR HANDLING", "Missing error handling") is True
    assert match_pattern("absent", "Missing error handling") is False


def test_4_36_kc_06_glob() -> None:
    """R4.36 KC-06 / #6."""
    assert match_pattern("glob:*unused*", "unused import detected") is True


def test_4_36_kc_07_regex() -> None:
    """R4.36 KC-07 / #7."""
    assert match_pattern("regex:missing.*handling", "Missing error handling") is True


def test_4_36_kc_08_invalid_regex_is_false() -> None:
    """R4.36 KC-08 / #8."""
    assert match_pattern("regex:[invalid", "anything [invalid") is False


def test_4_36_kc_09_plain_string_suppression() -> None:
    """R4.36 KC-09 / #9."""
    assert matches_suppression(FINDING, "error handling") is True


def test_4_36_kc_10_severity_filter_excludes() -> None:
    """R4.36 KC-10 / #10."""
    assert (
        matches_suppression(FINDING, {"pattern": "error handling", "severity": ["critical", "major"]})
        is False
    )


def test_4_36_kc_11_category_filter_excludes() -> None:
    """R4.36 KC-11 / #11."""
    assert (
        matches_suppression(FINDING, SuppressionPattern(pattern="error handling", category=["style"]))
        is False
    )


def test_4_36_kc_12_path_glob_passes() -> None:
    """R4.36 KC-12 / #12."""
    assert matches_suppression(FINDING, {"pattern": "error handling", "paths": ["src/api/**"]}) is True


def test_4_36_kc_13_all_filters_must_pass() -> None:
    """R4.36 KC-13 / #13."""
    full = {
        "pattern": "error handling",
        "severity": ["medium"],
        "category": ["correctness"],
        "paths": ["src/**"],
    }
    assert matches_suppression(FINDING, full) is True
    assert matches_suppression(FINDING, {**full, "paths": ["lib/**"]}) is False


# --- JS traps ------------------------------------------------------------------------------------------


def test_trap_empty_glob_raises() -> None:
    """picomatch throws on an empty pattern: `glob:` raises (the vectors expect an error)."""
    with pytest.raises(ValueError):
        match_pattern("glob:", "anything")


def test_trap_glob_star_does_not_cross_slash() -> None:
    """`glob:*async*` is false on `use async/await` (the `*` stops at `/`)."""
    assert match_pattern("glob:*async*", "use async/await") is False
    assert match_pattern("glob:*async*", "use async await") is True


def test_trap_glob_lowercases_pattern_and_text() -> None:
    assert match_pattern("glob:MISSING*", "missing semicolon") is True


def test_trap_glob_extglob_and_negation() -> None:
    """picomatch extglob `*(x)` and a leading `!` behave as in JS."""
    assert match_pattern("glob:*(x)*", "Database table name") is True
    assert match_pattern("glob:!*style*", "Missing error handling") is True
    assert match_pattern("glob:!*style*", "bad style") is False


def test_trap_regex_is_js_regexp_with_i_flag() -> None:
    """`(?i)` is a JS syntax error → false; `\\p{L}` is literal; Kelvin sign is not `k` under JS `/i`."""
    assert match_pattern("regex:(?i)foo", "foo") is False
    assert match_pattern("regex:\\p{L}", "é") is False
    assert match_pattern("regex:k", "\u212a") is False
    assert match_pattern("regex:[\\w-]+$", "\u212a") is False
    assert match_pattern("regex:(?<name>null)", "null deref") is True


def test_trap_regex_dot_and_whitespace() -> None:
    assert match_pattern("regex:^.$", "\r") is False
    assert match_pattern("regex:\\s", "a\ufeffb") is True
    assert match_pattern("regex:\\s", "a\x85b") is False


def test_trap_plain_match_is_lowercase_substring() -> None:
    """`toLowerCase` semantics: `STRASSE` does not match `straße`; an empty pattern matches everything."""
    assert match_pattern("STRASSE", "straße") is False
    assert match_pattern("", "anything") is True
    assert match_pattern("K", "Kelvin") is True


def test_trap_suppression_paths_are_not_lowercased() -> None:
    finding = {**FINDING, "file_path": "SRC/api/client.ts"}
    assert matches_suppression(finding, {"pattern": "error", "paths": ["src/**"]}) is False


def test_trap_empty_severity_or_category_list_never_matches() -> None:
    """`[]` is truthy in JS, so an empty list filters everything out; an empty `paths` list is ignored."""
    assert matches_suppression(FINDING, {"pattern": "error", "severity": []}) is False
    assert matches_suppression(FINDING, {"pattern": "error", "category": []}) is False
    assert matches_suppression(FINDING, {"pattern": "error", "paths": []}) is True


def test_unknown_severity_and_category_add_nothing() -> None:
    assert compute_confidence({"severity": "info", "category": "other", "matches_known_pattern": False}) == 50


def test_catastrophic_regex_is_bounded_and_counts_as_no_match() -> None:
    """A ReDoS pattern from `.kodiai.yml` cannot stall a review: the evaluation is bounded and false."""
    started = time.monotonic()
    assert match_pattern("regex:(a|aa)+$", "a" * 60 + "!") is False
    assert time.monotonic() - started < 30  # bounded (timeout checks are coarse on a loaded machine)
    assert match_pattern("regex:(a|aa)+$", "aaaa") is True


def test_first_matching_suppression_and_label() -> None:
    """Step 41: the first matching entry wins; its label is the string or the object's pattern."""
    entries = [
        "nothing here",
        {"pattern": "glob:missing*", "severity": ["critical"]},
        {"pattern": "regex:error\\s+handling"},
        "error",
    ]
    matched = first_matching_suppression(FINDING, entries)
    assert isinstance(matched, SuppressionPattern) and suppression_label(matched) == "regex:error\\s+handling"
    assert suppression_label(first_matching_suppression(FINDING, ["error"]) or "") == "error"
    assert first_matching_suppression(FINDING, ["unrelated"]) is None
