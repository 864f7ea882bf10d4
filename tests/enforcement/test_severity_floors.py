"""Severity floors: behaviour R4.30 (SF-01…44; SF-15 parameterised over the 10 built-in ids) and the
README §3 traps of enforce_severity_floors / matches_pattern / severity_rank."""

from __future__ import annotations

import pytest

from kodiai.enforcement.severity_floors import (
    BUILTIN_SEVERITY_PATTERNS,
    LanguageRulesConfig,
    enforce_severity_floors,
    matches_pattern,
    severity_rank,
)

BY_ID = {p.id: p for p in BUILTIN_SEVERITY_PATTERNS}
FILES_BY_LANGUAGE = {
    "C++": ["src/engine.cpp", "test/engine_test.cpp"],
    "Go": ["cmd/main.go"],
    "Python": ["app/views.py", "tests/test_views.py"],
    "C": ["src/util.c"],
    "Rust": ["src/lib.rs"],
    "Java": ["src/Main.java"],
    "TypeScript": ["src/api.ts", "src/api.test.ts"],
}
FILES_BY_CATEGORY = {"test": ["test/engine_test.cpp", "tests/test_views.py", "src/api.test.ts"], "source": []}


def finding(path: str, title: str, severity: str, category: str = "correctness", **extra: object) -> dict:
    return {"file_path": path, "title": title, "severity": severity, "category": category, **extra}


def enforce(*findings: dict, rules: dict | None = None) -> list[dict]:
    return enforce_severity_floors(list(findings), FILES_BY_CATEGORY, FILES_BY_LANGUAGE, rules)


# matchesPattern
def test_4_30_sf_01_all_keywords_of_a_group() -> None:
    """R4.30 SF-01."""
    assert matches_pattern("Null pointer dereference", [["null", "dereference"]]) is True


def test_4_30_sf_02_first_or_group() -> None:
    """R4.30 SF-02."""
    assert matches_pattern("null dereference", [["null", "dereference"], ["npe"]]) is True


def test_4_30_sf_03_second_or_group() -> None:
    """R4.30 SF-03."""
    assert matches_pattern("Possible NPE here", [["null", "dereference"], ["npe"]]) is True


def test_4_30_sf_04_no_group_fully_present() -> None:
    """R4.30 SF-04."""
    assert matches_pattern("null value", [["null", "dereference"], ["npe"]]) is False


def test_4_30_sf_05_case_insensitive() -> None:
    """R4.30 SF-05."""
    assert matches_pattern("NULL DEREFERENCE", [["null", "dereference"]]) is True


def test_4_30_sf_06_single_keyword_group() -> None:
    """R4.30 SF-06."""
    assert matches_pattern("npe risk", [["npe"]]) is True


def test_4_30_sf_07_empty_and_group_is_true() -> None:
    """R4.30 SF-07."""
    assert matches_pattern("anything", [[]]) is True


def test_4_30_sf_08_empty_keywords_list_is_false() -> None:
    """R4.30 SF-08."""
    assert matches_pattern("anything", []) is False


@pytest.mark.parametrize("title", ["Null dereference", "Possible NPE", "null pointer access", "use nullptr"])
def test_4_30_sf_09_cpp_null_deref_variants(title: str) -> None:
    """R4.30 SF-09."""
    assert matches_pattern(title, BY_ID["cpp-null-deref"].keywords) is True


# severityRank
@pytest.mark.parametrize(
    ("checklist", "severity", "rank"),
    [("SF-10", "minor", 0), ("SF-11", "medium", 1), ("SF-12", "major", 2), ("SF-13", "critical", 3)],
)
def test_4_30_sf_10_to_13_severity_rank(checklist: str, severity: str, rank: int) -> None:
    """R4.30 SF-10…SF-13."""
    assert severity_rank(severity) == rank, checklist


# built-in catalogue
def test_4_30_sf_14_ten_builtin_patterns() -> None:
    """R4.30 SF-14."""
    assert len(BUILTIN_SEVERITY_PATTERNS) == 10


@pytest.mark.parametrize(
    "pattern_id",
    [
        "cpp-null-deref",
        "cpp-uninitialized",
        "go-unchecked-error",
        "python-bare-except",
        "c-null-deref",
        "c-buffer-overflow",
        "rust-unwrap",
        "java-unclosed-resource",
        "sql-injection",
        "ts-unhandled-promise",
    ],
)
def test_4_30_sf_15_builtin_ids_present(pattern_id: str) -> None:
    """R4.30 SF-15 (10 parameterised cases)."""
    assert pattern_id in BY_ID


def test_4_30_sf_16_sql_injection_not_relaxed_for_tests() -> None:
    """R4.30 SF-16."""
    assert BY_ID["sql-injection"].test_files_relaxed is False


def test_4_30_sf_17_cpp_null_deref_relaxed_for_tests() -> None:
    """R4.30 SF-17."""
    assert BY_ID["cpp-null-deref"].test_files_relaxed is True


def test_4_30_sf_18_every_other_pattern_relaxed() -> None:
    """R4.30 SF-18."""
    assert all(p.test_files_relaxed for p in BUILTIN_SEVERITY_PATTERNS if p.id != "sql-injection")


# enforceSeverityFloors
def test_4_30_sf_19_cpp_null_deref_elevated() -> None:
    """R4.30 SF-19."""
    [out] = enforce(finding("src/engine.cpp", "Potential null pointer dereference", "minor"))
    assert (
        out["severity"],
        out["original_severity"],
        out["severity_elevated"],
        out["enforcement_pattern_id"],
    ) == (
        "critical",
        "minor",
        True,
        "cpp-null-deref",
    )


def test_4_30_sf_20_same_in_test_file_unchanged() -> None:
    """R4.30 SF-20."""
    [out] = enforce(finding("test/engine_test.cpp", "Potential null pointer dereference", "minor"))
    assert (out["severity"], out["severity_elevated"]) == ("minor", False)
    assert "enforcement_pattern_id" not in out


def test_4_30_sf_21_go_unchecked_error() -> None:
    """R4.30 SF-21."""
    [out] = enforce(finding("cmd/main.go", "Error return value ignored", "minor"))
    assert (out["severity"], out["enforcement_pattern_id"]) == ("major", "go-unchecked-error")


def test_4_30_sf_22_python_bare_except() -> None:
    """R4.30 SF-22."""
    [out] = enforce(finding("app/views.py", "Bare except clause swallows errors", "medium"))
    assert (out["severity"], out["enforcement_pattern_id"]) == ("major", "python-bare-except")


def test_4_30_sf_23_already_critical_unchanged() -> None:
    """R4.30 SF-23."""
    [out] = enforce(finding("src/engine.cpp", "Null pointer dereference", "critical"))
    assert (out["severity"], out["severity_elevated"]) == ("critical", False)


def test_4_30_sf_24_go_already_major_unchanged() -> None:
    """R4.30 SF-24."""
    [out] = enforce(finding("cmd/main.go", "Unchecked error from Close()", "major"))
    assert (out["severity"], out["severity_elevated"]) == ("major", False)


def test_4_30_sf_25_user_floor_raises() -> None:
    """R4.30 SF-25."""
    rules = {
        "severity_floors": [
            {
                "pattern": "unvalidated input",
                "language": "TypeScript",
                "min_severity": "major",
                "skip_test_files": True,
            }
        ]
    }
    [out] = enforce(finding("src/api.ts", "Unvalidated input reaches query", "minor"), rules=rules)
    assert (out["severity"], out["severity_elevated"], out["enforcement_pattern_id"]) == (
        "major",
        True,
        "user-unvalidated-input",
    )


def test_4_30_sf_26_disable_builtin_floors() -> None:
    """R4.30 SF-26."""
    [out] = enforce(
        finding("src/engine.cpp", "Null pointer dereference", "minor"), rules={"disable_builtin_floors": True}
    )
    assert (out["severity"], out["severity_elevated"]) == ("minor", False)


def test_4_30_sf_27_disabled_builtins_with_user_floor() -> None:
    """R4.30 SF-27."""
    rules = {
        "disable_builtin_floors": True,
        "severity_floors": [
            {
                "pattern": "null pointer",
                "language": "C++",
                "min_severity": "critical",
                "skip_test_files": True,
            }
        ],
    }
    [out] = enforce(finding("src/engine.cpp", "Null pointer dereference", "minor"), rules=rules)
    assert (out["severity"], out["enforcement_pattern_id"]) == ("critical", "user-null-pointer")


def test_4_30_sf_28_unmatched_style_finding_unchanged() -> None:
    """R4.30 SF-28."""
    [out] = enforce(finding("src/api.ts", "Prefer const over let", "minor", "style"))
    assert (out["severity"], out["severity_elevated"], out["tooling_suppressed"]) == ("minor", False, False)


@pytest.mark.parametrize(
    ("checklist", "path", "title", "severity", "floor", "pid"),
    [
        (
            "SF-29",
            "src/engine.cpp",
            "Uninitialized member variable in ctor",
            "minor",
            "critical",
            "cpp-uninitialized",
        ),
        (
            "SF-30",
            "src/util.c",
            "Null pointer dereference after malloc failure",
            "minor",
            "critical",
            "c-null-deref",
        ),
        (
            "SF-31",
            "src/util.c",
            "Potential buffer overflow in copy",
            "medium",
            "critical",
            "c-buffer-overflow",
        ),
        ("SF-32", "src/util.c", "Use of strcpy is unsafe", "minor", "critical", "c-buffer-overflow"),
        ("SF-33", "src/lib.rs", "Unwrap may panic on None value", "minor", "major", "rust-unwrap"),
        (
            "SF-34",
            "src/Main.java",
            "Unclosed resource: FileInputStream",
            "minor",
            "major",
            "java-unclosed-resource",
        ),
        (
            "SF-35",
            "src/api.ts",
            "SQL injection via string concatenation",
            "medium",
            "critical",
            "sql-injection",
        ),
        (
            "SF-37",
            "src/api.ts",
            "Unhandled promise rejection in handler",
            "minor",
            "major",
            "ts-unhandled-promise",
        ),
    ],
)
def test_4_30_sf_29_to_37_builtin_floors(
    checklist: str, path: str, title: str, severity: str, floor: str, pid: str
) -> None:
    """R4.30 SF-29…SF-35 and SF-37: each built-in floor raises its language's findings."""
    [out] = enforce(finding(path, title, severity))
    assert (out["severity"], out["enforcement_pattern_id"], out["original_severity"]) == (
        floor,
        pid,
        severity,
    ), checklist


def test_4_30_sf_36_sql_injection_in_test_file_still_critical() -> None:
    """R4.30 SF-36."""
    [out] = enforce(finding("src/api.test.ts", "SQL injection in fixture", "minor"))
    assert (out["severity"], out["enforcement_pattern_id"]) == ("critical", "sql-injection")


def test_4_30_sf_38_findings_processed_independently() -> None:
    """R4.30 SF-38."""
    out = enforce(
        finding("src/engine.cpp", "Null pointer dereference", "minor"),
        finding("src/api.ts", "Naming nit", "minor", "style"),
        finding("cmd/main.go", "Error ignored on write", "minor"),
    )
    assert [o["severity"] for o in out] == ["critical", "minor", "major"]


def test_4_30_sf_39_cpp_pattern_not_for_go() -> None:
    """R4.30 SF-39."""
    [out] = enforce(finding("cmd/main.go", "Use nullptr instead of NULL", "minor"))
    assert (out["severity"], out["severity_elevated"]) == ("minor", False)


def test_4_30_sf_40_user_floor_skips_test_files() -> None:
    """R4.30 SF-40."""
    rules = {"severity_floors": [{"pattern": "flaky", "min_severity": "major", "skip_test_files": True}]}
    [out] = enforce(finding("src/api.test.ts", "Flaky timing", "minor"), rules=rules)
    assert out["severity"] == "minor"


def test_4_30_sf_41_user_floor_applies_to_test_files_when_asked() -> None:
    """R4.30 SF-41."""
    rules = {"severity_floors": [{"pattern": "flaky", "min_severity": "major", "skip_test_files": False}]}
    [out] = enforce(finding("src/api.test.ts", "Flaky timing", "minor"), rules=rules)
    assert out["severity"] == "major"


def test_4_30_sf_42_user_floor_without_language_applies_everywhere() -> None:
    """R4.30 SF-42."""
    rules = LanguageRulesConfig.model_validate(
        {
            "severity_floors": [
                {"pattern": "hardcoded secret", "min_severity": "critical", "skip_test_files": True}
            ]
        }
    )
    [out] = enforce(
        finding("app/views.py", "Hardcoded secret in settings", "medium"), rules=rules.model_dump()
    )
    assert out["severity"] == "critical"


def test_4_30_sf_43_empty_findings() -> None:
    """R4.30 SF-43."""
    assert enforce() == []


def test_4_30_sf_44_extra_properties_preserved() -> None:
    """R4.30 SF-44."""
    [out] = enforce(finding("src/api.ts", "x", "minor", customField="keep", comment_id=3))
    assert out["customField"] == "keep" and out["comment_id"] == 3


# README §3 traps
def test_trap_first_matching_pattern_wins_even_if_it_raises_nothing() -> None:
    """A built-in that matches but is already satisfied stops the search: the user floor is not consulted."""
    rules = {
        "severity_floors": [
            {
                "pattern": "null pointer",
                "language": "C++",
                "min_severity": "critical",
                "skip_test_files": False,
            }
        ]
    }
    [out] = enforce(finding("test/engine_test.cpp", "Null pointer deref", "minor"), rules=rules)
    assert (out["severity"], out["severity_elevated"]) == ("minor", False)


def test_trap_language_is_exact_string_equality() -> None:
    rules = {
        "severity_floors": [
            {"pattern": "todo", "language": "python", "min_severity": "major", "skip_test_files": False}
        ]
    }
    [out] = enforce(finding("app/views.py", "TODO left", "minor"), rules=rules)
    assert out["severity"] == "minor"


def test_trap_user_floor_id_uses_js_whitespace_runs() -> None:
    """`\\s+` is JS whitespace (NBSP and U+FEFF collapse to "-"; U+0085 does not)."""
    rules = {
        "severity_floors": [
            {"pattern": "Weak\u00a0\ufeff Hash\x85X", "min_severity": "major", "skip_test_files": False}
        ]
    }
    [out] = enforce(finding("app/views.py", "weak\u00a0\ufeff hash\x85x found", "minor"), rules=rules)
    assert out["enforcement_pattern_id"] == "user-weak-hash\x85x"


def test_trap_unknown_severity_ranks_zero_and_is_kept_as_original() -> None:
    [out] = enforce(finding("cmd/main.go", "error ignored", "MAJOR"))
    assert (out["severity"], out["original_severity"], out["severity_elevated"]) == ("major", "MAJOR", True)
    assert severity_rank("Critical") == 0


def test_language_comes_from_the_extension_even_when_files_by_language_omits_the_file() -> None:
    """A path missing from files_by_language still gets its extension's floors, as in the original."""
    [out] = enforce(finding("src/other.cxx", "Null pointer dereference", "minor"))
    assert (out["severity"], out["enforcement_pattern_id"]) == ("critical", "cpp-null-deref")


def test_a_file_named_go_without_a_dot_is_go() -> None:
    """JS ``"go".split(".").pop()`` is ``"go"``: the whole name is the extension; ``cmd/go`` is Unknown."""
    root, nested = enforce(
        finding("go", "Unchecked error from Close", "minor"),
        finding("cmd/go", "Unchecked error from Close", "minor"),
    )
    assert (root["severity"], nested["severity"]) == ("major", "minor")
