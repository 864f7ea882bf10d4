"""Tooling suppression: behaviour R4.32 (TS-01…27) and the README §3 traps of suppress_tooling_findings."""

from __future__ import annotations

import pytest

from kodiai.enforcement.tooling import (
    FORMATTING_KEYWORDS,
    IMPORT_ORDER_KEYWORDS,
    DetectedTooling,
    is_formatting_finding,
    is_import_order_finding,
    suppress_tooling_findings,
)

TOOLING = DetectedTooling(
    formatters={
        "TypeScript": [".prettierrc"],
        "Python": [".black.toml"],
        "C++": [".clang-format"],
        "Go": ["go.mod (gofmt built-in)"],
    },
    linters={"TypeScript": [".eslintrc.json"], "Python": ["setup.cfg"]},
)


def f(path: str, title: str, category: str = "style", **extra: object) -> dict:
    return {"file_path": path, "title": title, "severity": "minor", "category": category, **extra}


def run(*findings: dict, rules: dict | None = None, tooling: DetectedTooling = TOOLING) -> list[bool]:
    return [x["tooling_suppressed"] for x in suppress_tooling_findings(list(findings), tooling, rules)]


def test_4_32_ts_01_formatting_keywords_shape() -> None:
    """R4.32 TS-01."""
    assert isinstance(FORMATTING_KEYWORDS, list) and all(
        isinstance(g, list) and all(isinstance(k, str) for k in g) for g in FORMATTING_KEYWORDS
    )


def test_4_32_ts_02_formatting_keywords_content() -> None:
    """R4.32 TS-02."""
    flat = {k for g in FORMATTING_KEYWORDS for k in g}
    assert {"formatting", "indentation", "line", "whitespace"} <= flat


def test_4_32_ts_03_import_order_keywords_shape() -> None:
    """R4.32 TS-03."""
    assert isinstance(IMPORT_ORDER_KEYWORDS, list) and all(isinstance(g, list) for g in IMPORT_ORDER_KEYWORDS)


def test_4_32_ts_04_import_order_keywords_content() -> None:
    """R4.32 TS-04."""
    assert {"import", "order", "sort"} <= {k for g in IMPORT_ORDER_KEYWORDS for k in g}


@pytest.mark.parametrize(
    "title",
    [
        "Inconsistent indentation",
        "Line length exceeds 120",
        "Bracket placement inconsistent",
        "Trailing comma missing",
        "Trailing whitespace",
        "Formatting differs from prettier",
        "Quote style mismatch",
        "Tab characters used",
        "Missing newline at end of file",
        "Missing semicolon",
        "Inconsistent spacing",
        "Brace style does not match",
    ],
)
def test_4_32_ts_05_formatting_titles(title: str) -> None:
    """R4.32 TS-05 (12 titles)."""
    assert is_formatting_finding(title) is True


@pytest.mark.parametrize(
    "title", ["Null reference", "SQL injection", "Missing error handling", "Unused variable"]
)
def test_4_32_ts_06_non_formatting_titles(title: str) -> None:
    """R4.32 TS-06."""
    assert is_formatting_finding(title) is False


def test_4_32_ts_07_formatting_case_insensitive() -> None:
    """R4.32 TS-07."""
    assert is_formatting_finding("INCONSISTENT INDENTATION") is True


@pytest.mark.parametrize(
    "title",
    [
        "Imports are not sorted (import sort)",
        "Import order is wrong",
        "Imports should be grouped: import group",
        "Arrange import statements",
        "Sorted imports expected",
        "Organize imports",
    ],
)
def test_4_32_ts_08_import_order_titles(title: str) -> None:
    """R4.32 TS-08 (6 titles)."""
    assert is_import_order_finding(title) is True


@pytest.mark.parametrize("title", ["Unused import detected", "Missing import statement", "Null reference"])
def test_4_32_ts_09_not_import_order(title: str) -> None:
    """R4.32 TS-09."""
    assert is_import_order_finding(title) is False


def test_4_32_ts_10_import_order_case_insensitive() -> None:
    """R4.32 TS-10."""
    assert is_import_order_finding("IMPORT ORDER WRONG") is True


def test_4_32_ts_11_ts_formatting_with_formatter() -> None:
    """R4.32 TS-11."""
    assert run(f("src/app.ts", "Inconsistent indentation")) == [True]


def test_4_32_ts_12_ts_import_order_with_linter() -> None:
    """R4.32 TS-12."""
    assert run(f("src/app.ts", "Import order is wrong")) == [True]


def test_4_32_ts_13_correctness_never_suppressed() -> None:
    """R4.32 TS-13."""
    assert run(f("src/app.ts", "Inconsistent indentation", "correctness")) == [False]


def test_4_32_ts_14_python_line_length_with_black() -> None:
    """R4.32 TS-14."""
    assert run(f("app/views.py", "Line exceeds maximum length")) == [True]


def test_4_32_ts_15_cpp_bracket_placement_with_clang_format() -> None:
    """R4.32 TS-15."""
    assert run(f("src/engine.cpp", "Bracket placement inconsistency")) == [True]


def test_4_32_ts_16_go_with_gofmt() -> None:
    """R4.32 TS-16."""
    assert run(f("cmd/main.go", "Formatting differs from gofmt")) == [True]


def test_4_32_ts_17_rust_without_formatter() -> None:
    """R4.32 TS-17."""
    assert run(f("src/lib.rs", "Inconsistent indentation")) == [False]


def test_4_32_ts_18_override_suppress_formatting_false() -> None:
    """R4.32 TS-18."""
    rules = {
        "tooling_overrides": [
            {"language": "TypeScript", "suppress_formatting": False, "suppress_import_order": True}
        ]
    }
    assert run(f("src/app.ts", "Inconsistent indentation"), rules=rules) == [False]


def test_4_32_ts_19_override_suppress_import_order_false() -> None:
    """R4.32 TS-19."""
    rules = {
        "tooling_overrides": [
            {"language": "TypeScript", "suppress_formatting": True, "suppress_import_order": False}
        ]
    }
    assert run(f("src/app.ts", "Import order is wrong"), rules=rules) == [False]


def test_4_32_ts_20_unknown_language_no_crash() -> None:
    """R4.32 TS-20."""
    assert run(f("src/main.zig", "Inconsistent indentation")) == [False]


def test_4_32_ts_21_security_with_formatting_keyword() -> None:
    """R4.32 TS-21."""
    assert run(f("src/app.ts", "Formatting string injection", "security")) == [False]


def test_4_32_ts_22_performance_with_whitespace_keyword() -> None:
    """R4.32 TS-22."""
    assert run(f("src/app.ts", "Whitespace scanning is quadratic", "performance")) == [False]


def test_4_32_ts_23_empty() -> None:
    """R4.32 TS-23."""
    assert suppress_tooling_findings([], TOOLING) == []


def test_4_32_ts_24_extra_properties_preserved() -> None:
    """R4.32 TS-24."""
    [out] = suppress_tooling_findings(
        [f("src/app.ts", "Missing semicolon", comment_id=9, custom="x")], TOOLING
    )
    assert out["comment_id"] == 9 and out["custom"] == "x" and out["tooling_suppressed"] is True


def test_4_32_ts_25_mixed() -> None:
    """R4.32 TS-25."""
    assert run(
        f("src/app.ts", "Trailing whitespace"),
        f("src/app.ts", "Null dereference", "correctness"),
        f("src/app.ts", "Organize imports"),
    ) == [True, False, True]


def test_4_32_ts_26_documentation_category() -> None:
    """R4.32 TS-26."""
    assert run(f("src/app.ts", "Docstring indentation off", "documentation")) == [True]


def test_4_32_ts_27_style_but_neither_kind() -> None:
    """R4.32 TS-27."""
    assert run(f("src/app.ts", "Variable naming convention")) == [False]


# README §3 traps
def test_trap_tab_keyword_matches_table_stable_database() -> None:
    for title in ("Database table name", "Unstable sort", "database handle"):
        assert is_formatting_finding(title) is True


def test_trap_only_exact_lowercase_categories() -> None:
    assert run(f("src/app.ts", "Missing semicolon", "Style")) == [False]


def test_trap_formatting_override_false_returns_before_import_order() -> None:
    """An override with suppress_formatting=false returns false even for an import-order title."""
    rules = {
        "tooling_overrides": [
            {"language": "TypeScript", "suppress_formatting": False, "suppress_import_order": True}
        ]
    }
    assert run(f("src/app.ts", "Import order formatting"), rules=rules) == [False]


def test_trap_formatting_without_formatter_falls_through_to_import_order() -> None:
    tooling = DetectedTooling(formatters={}, linters={"TypeScript": [".eslintrc"]})
    assert run(f("src/app.ts", "Import order formatting"), tooling=tooling) == [True]


def test_trap_later_override_wins() -> None:
    rules = {
        "tooling_overrides": [
            {"language": "TypeScript", "suppress_formatting": False, "suppress_import_order": True},
            {"language": "TypeScript", "suppress_formatting": True, "suppress_import_order": True},
        ]
    }
    assert run(f("src/app.ts", "Inconsistent indentation"), rules=rules) == [True]


def test_trap_tooling_present_when_language_key_exists_even_if_empty() -> None:
    tooling = DetectedTooling(formatters={"TypeScript": []}, linters={})
    assert run(f("src/app.ts", "Inconsistent indentation"), tooling=tooling) == [True]


def test_trap_language_keys_are_case_sensitive() -> None:
    tooling = DetectedTooling(formatters={"typescript": [".prettierrc"]}, linters={})
    assert run(f("src/app.ts", "Inconsistent indentation"), tooling=tooling) == [False]
