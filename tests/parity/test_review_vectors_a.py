"""review.jsonl, library A: every row of the 21 functions of diff analysis, file risk, PR intent,
dependency bumps, merge confidence, timeouts, author, profiles, scope and usage
(parity-vectors/README.md §1, §1a, §2)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from support.vectors import (
    assert_matches,
    cases,
    check_rows,
    dump,
    float_for_int,
    functions,
    rows_of,
    snake_keys,
)

DIFF = "kodiai.review.diff_analysis"
RISK = "kodiai.review.file_risk"
INTENT = "kodiai.review.pr_intent"
DEP = "kodiai.review.dep_bumps.detect"
ENRICH = "kodiai.review.dep_bumps.enrichment"
MERGE = "kodiai.review.dep_bumps.merge_confidence"
TIMEOUT = "kodiai.review.timeout"


def _model(module: str, name: str, fallback: str | None = None) -> Any:
    """README §1a: the class is looked up in the function's module first, then where it is defined."""
    mod = importlib.import_module(module)
    if hasattr(mod, name):
        return getattr(mod, name)
    if fallback is not None:
        return getattr(importlib.import_module(fallback), name)
    return None


def _build(module: str, name: str, value: Any, fallback: str | None = None) -> Any:
    model = _model(module, name, fallback)
    if value is None or model is None:
        return value
    return model.model_validate(value)


def _analyze(a: dict) -> dict:
    a["input"] = _build(DIFF, "DiffAnalysisInput", a["input"])
    # README §3: the 50 ms budget never trips in these vectors. The clock is the injected dependency of
    # analyze_diff; a frozen one keeps a loaded CI machine from truncating the analysis.
    a["clock"] = lambda: 0.0
    return a


def _risk(a: dict) -> dict:
    a["per_file_stats"] = {
        path: _build(RISK, "FileLineStats", stats, DIFF) for path, stats in a["per_file_stats"].items()
    }
    if "weights" in a:
        a["weights"] = _build(RISK, "RiskWeights", a["weights"])
    return a


def _triage(a: dict) -> dict:
    a["risk_scores"] = [_build(RISK, "FileRiskScore", s) for s in a["risk_scores"]]
    return a


def _intent(a: dict) -> dict:
    if "commits" in a and a["commits"] is not None:
        a["commits"] = [_build(INTENT, "CommitMessage", c) for c in a["commits"]]
    return a


def _keyword(a: dict) -> dict:
    a["intent"] = _build(INTENT, "ParsedPRIntent", a["intent"])
    return a


def _details(a: dict) -> dict:
    a["detection"] = _build(DEP, "DepBumpDetection", a["detection"])
    return a


def _notes(a: dict) -> dict:
    a["release_notes"] = [_build(ENRICH, "ReleaseNote", n) for n in a["release_notes"]]
    return a


def _merge(a: dict) -> dict:
    # ``security`` absent from the row stays absent from the model (README §2: absent ≠ null).
    a["ctx"] = _build(MERGE, "DepBumpContext", a["ctx"])
    return a


def _same(a: dict) -> dict:
    return a


# fn → (module, data-keyed paths in args, data-keyed paths in expected, argument builder)
SPECS: dict[str, tuple[str, frozenset[str], frozenset[str], Callable[[dict], dict]]] = {
    "analyze_diff": (
        DIFF,
        frozenset({"input.file_categories"}),
        frozenset({"files_by_category", "files_by_language"}),
        _analyze,
    ),
    "parse_numstat_per_file": (DIFF, frozenset(), frozenset({""}), _same),
    "classify_languages": (DIFF, frozenset(), frozenset({""}), _same),
    "compute_file_risk_scores": (
        RISK,
        frozenset({"per_file_stats", "files_by_category"}),
        frozenset(),
        _risk,
    ),
    "triage_files_by_risk": (RISK, frozenset(), frozenset(), _triage),
    "is_executable_extension": (RISK, frozenset(), frozenset(), _same),
    "parse_pr_intent": (INTENT, frozenset(), frozenset(), _intent),
    "build_keyword_parsing_section": (INTENT, frozenset(), frozenset(), _keyword),
    "detect_dep_bump": (DEP, frozenset(), frozenset(), _same),
    "extract_dep_bump_details": (DEP, frozenset(), frozenset(), _details),
    "parse_semver": (DEP, frozenset(), frozenset(), _same),
    "classify_dep_bump": (DEP, frozenset(), frozenset(), _same),
    "extract_breaking_changes": (ENRICH, frozenset(), frozenset(), _notes),
    "compute_merge_confidence": (MERGE, frozenset(), frozenset(), _merge),
    "compute_language_complexity": (TIMEOUT, frozenset({"files_by_language"}), frozenset(), _same),
    "estimate_timeout_risk": (TIMEOUT, frozenset(), frozenset(), _same),
    "classify_author": ("kodiai.review.author", frozenset(), frozenset(), _same),
    "resolve_review_profile": ("kodiai.review.profiles", frozenset(), frozenset(), _same),
    "detect_scope_coordination": ("kodiai.review.scope", frozenset(), frozenset(), _same),
    "build_search_terms": ("kodiai.review.usage", frozenset(), frozenset(), _same),
    "parse_git_grep_output": ("kodiai.review.usage", frozenset(), frozenset(), _same),
}

ROWS = [r for r in cases("review.jsonl") if r["fn"] in SPECS]

EXPECTED_COUNTS = {
    "analyze_diff": 150, "parse_numstat_per_file": 80, "classify_languages": 60,
    "compute_file_risk_scores": 150, "triage_files_by_risk": 80, "is_executable_extension": 80,
    "parse_pr_intent": 150, "build_keyword_parsing_section": 100, "detect_dep_bump": 150,
    "extract_dep_bump_details": 120, "parse_semver": 120, "classify_dep_bump": 120,
    "extract_breaking_changes": 120, "compute_merge_confidence": 120, "compute_language_complexity": 60,
    "estimate_timeout_risk": 150, "classify_author": 100, "resolve_review_profile": 60,
    "detect_scope_coordination": 100, "build_search_terms": 100, "parse_git_grep_output": 100,
}  # fmt: skip


def test_every_row_of_every_function_is_collected() -> None:
    counts: dict[str, int] = {}
    for r in ROWS:
        counts[r["fn"]] = counts.get(r["fn"], 0) + 1
    assert counts == EXPECTED_COUNTS


@pytest.mark.parametrize("fn", functions(ROWS))
def test_review_vector(fn: str) -> None:
    check_rows(rows_of(ROWS, fn), _check)


def _check(row: dict) -> None:
    module, keep_args, keep_expected, build = SPECS[row["fn"]]
    func = getattr(importlib.import_module(module), row["fn"])
    kwargs = build(snake_keys(row["args"], keep_args))
    result = func(**kwargs)
    expected = snake_keys(row["expected"], keep_expected)
    assert_matches(result, expected)
    if row["fn"] not in FLOAT_RESULTS:
        assert float_for_int(dump(result), expected) is None


#: README §1.6: the only float-valued results among these functions (compared with a tolerance).
FLOAT_RESULTS = frozenset({"compute_language_complexity"})


#: Functions whose keywords README §1a builds as models; each must also accept the plain dicts.
MODEL_ARGS = frozenset(
    {
        "analyze_diff",
        "compute_file_risk_scores",
        "triage_files_by_risk",
        "parse_pr_intent",
        "build_keyword_parsing_section",
        "extract_dep_bump_details",
        "extract_breaking_changes",
        "compute_merge_confidence",
    }
)
DICT_ROWS = [r for r in ROWS if r["fn"] in MODEL_ARGS]


@pytest.mark.parametrize("fn", functions(DICT_ROWS))
def test_review_vector_with_plain_dicts(fn: str) -> None:
    """README §1.3: every function also accepts a plain snake_case dict where a model is expected."""
    check_rows(rows_of(DICT_ROWS, fn), _check_plain_dicts)


def _check_plain_dicts(row: dict) -> None:
    module, keep_args, keep_expected, _ = SPECS[row["fn"]]
    func = getattr(importlib.import_module(module), row["fn"])
    kwargs = snake_keys(row["args"], keep_args)
    if row["fn"] == "analyze_diff":
        kwargs["clock"] = lambda: 0.0
    assert_matches(func(**kwargs), snake_keys(row["expected"], keep_expected))
