"""review.jsonl, library B: every row of the 20 functions of confidence, prioritisation, enforcement,
errors, formatting, delta/dedup and feedback (parity-vectors/README.md §1, §1a, §2)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import pytest

from kodiai.review.findings import fingerprint_finding_title
from support.vectors import (
    assert_matches,
    cases,
    check_rows,
    dump,
    float_for_int,
    functions,
    local_cases,
    rows_of,
    snake_keys,
)


class VectorError(Exception):
    """An ``Error`` object from a row: ``str()`` is its message, with ``name`` and ``status``."""

    def __init__(self, message: str, name: str | None, status: int | None) -> None:
        super().__init__(message)
        self.name = name
        self.status = status


class StoreStub:
    """The plain object of README §1a: synchronous ``aggregate_feedback_patterns(repo)``."""

    def __init__(self, patterns: list[Any]) -> None:
        self._patterns = patterns
        self.calls: list[str] = []

    def aggregate_feedback_patterns(self, repo: str) -> list[Any]:
        self.calls.append(repo)
        return list(self._patterns)


def _model(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


# README §1.3: every function must accept the pydantic model *or* the plain snake_case dict.
_AS_MODELS: ContextVar[bool] = ContextVar("as_models", default=True)


def _build(module: str, name: str, value: Any) -> Any:
    if value is None or not _AS_MODELS.get():
        return value
    return _model(module, name).model_validate(value)


KNOW = "kodiai.review.confidence"
PRIO = "kodiai.review.prioritizer"
FLOORS = "kodiai.enforcement.severity_floors"
TOOLS = "kodiai.enforcement.tooling"
DELTA = "kodiai.review.delta"
DEDUP = "kodiai.review.dedup"
AGG = "kodiai.feedback.aggregator"
ADJ = "kodiai.feedback.adjuster"


def _confidence(a: dict) -> dict:
    a["input"] = _build(KNOW, "ConfidenceInput", a["input"])
    return a


def _suppression(a: dict) -> dict:
    a["finding"] = _build(KNOW, "SuppressionFinding", a["finding"])
    if isinstance(a["suppression"], dict):
        a["suppression"] = _build(KNOW, "SuppressionPattern", a["suppression"])
    return a


def _score(a: dict) -> dict:
    a["finding"] = _build(PRIO, "FindingForPrioritization", a["finding"])
    if "weights" in a:
        a["weights"] = _build(PRIO, "FindingPriorityWeights", a["weights"])
    return a


def _prioritize(a: dict) -> dict:
    a["findings"] = [_build(PRIO, "FindingForPrioritization", f) for f in a["findings"]]
    if "weights" in a:
        a["weights"] = _build(PRIO, "FindingPriorityWeights", a["weights"])
    return a


def _floors(a: dict) -> dict:
    if "language_rules" in a:
        a["language_rules"] = _build(FLOORS, "LanguageRulesConfig", a["language_rules"])
    return a


def _tooling(a: dict) -> dict:
    a["detected_tooling"] = _build(TOOLS, "DetectedTooling", a["detected_tooling"])
    if "language_rules" in a:
        a["language_rules"] = _build(FLOORS, "LanguageRulesConfig", a["language_rules"])
    return a


def _error(a: dict) -> dict:
    e = a["error"]
    if isinstance(e, dict):
        a["error"] = VectorError(e["message"], e.get("name"), e.get("status"))
    return a


def _deltas(a: dict) -> dict:
    a["prior_findings"] = [_build(DELTA, "PriorFinding", p) for p in a["prior_findings"]]
    a["fingerprint_fn"] = {
        "fp": fingerprint_finding_title,
        "bare": lambda t: fingerprint_finding_title(t).removeprefix("fp-"),
    }[a["fingerprint_fn"]]
    return a


def _prior_context(a: dict) -> dict:
    a["prior_findings"] = [_build(DELTA, "PriorFinding", p) for p in a["prior_findings"]]
    return a


def _should_suppress(a: dict) -> dict:
    a["suppression_fingerprints"] = set(a["suppression_fingerprints"])
    return a


def _aggregate(a: dict) -> dict:
    a["store"] = StoreStub(
        [_build(AGG, "FeedbackPattern", p) for p in a["store"]["aggregate_feedback_patterns"]]
    )
    a["thresholds"] = _build(AGG, "FeedbackThresholds", a["thresholds"])
    return a


def _adjust(a: dict) -> dict:
    a["feedback"] = _build(ADJ, "FeedbackCounts", a["feedback"])
    return a


def _same(a: dict) -> dict:
    return a


# fn → (module, data-keyed map paths inside args, argument builder)
SPECS: dict[str, tuple[str, frozenset[str], Callable[[dict], dict]]] = {
    "compute_confidence": (KNOW, frozenset(), _confidence),
    "match_pattern": (KNOW, frozenset(), _same),
    "matches_suppression": (KNOW, frozenset(), _suppression),
    "score_finding": (PRIO, frozenset(), _score),
    "prioritize_findings": (PRIO, frozenset(), _prioritize),
    "enforce_severity_floors": (FLOORS, frozenset({"files_by_category", "files_by_language"}), _floors),
    "matches_pattern": (FLOORS, frozenset(), _same),
    "severity_rank": (FLOORS, frozenset(), _same),
    "suppress_tooling_findings": (
        TOOLS,
        frozenset({"detected_tooling.formatters", "detected_tooling.linters"}),
        _tooling,
    ),
    "is_formatting_finding": (TOOLS, frozenset(), _same),
    "is_import_order_finding": (TOOLS, frozenset(), _same),
    "classify_error": ("kodiai.execution.errors", frozenset(), _error),
    "format_error_comment": ("kodiai.execution.errors", frozenset(), _same),
    "wrap_in_details": ("kodiai.text.formatting", frozenset(), _same),
    "classify_finding_deltas": (DELTA, frozenset(), _deltas),
    "build_prior_finding_context": (DEDUP, frozenset(), _prior_context),
    "should_suppress_finding": (DEDUP, frozenset(), _should_suppress),
    "aggregate_suppressible_patterns": (AGG, frozenset(), _aggregate),
    "adjust_confidence_for_feedback": (ADJ, frozenset(), _adjust),
    "is_feedback_suppression_protected": ("kodiai.feedback.safety", frozenset(), _same),
}

ROWS = [r for r in cases("review.jsonl") if r["fn"] in SPECS]
# The project's own rows, in the same format, for behaviours of the original the shared file does not pin.
LOCAL_ROWS = [r for r in local_cases("review_extra.jsonl") if r["fn"] in SPECS]

EXPECTED_COUNTS = {
    "compute_confidence": 40,
    "match_pattern": 150,
    "matches_suppression": 120,
    "score_finding": 100,
    "prioritize_findings": 120,
    "enforce_severity_floors": 150,
    "matches_pattern": 80,
    "severity_rank": 40,
    "suppress_tooling_findings": 120,
    "is_formatting_finding": 80,
    "is_import_order_finding": 80,
    "classify_error": 150,
    "format_error_comment": 80,
    "wrap_in_details": 80,
    "classify_finding_deltas": 100,
    "build_prior_finding_context": 80,
    "should_suppress_finding": 80,
    "aggregate_suppressible_patterns": 60,
    "adjust_confidence_for_feedback": 60,
    "is_feedback_suppression_protected": 48,
}


def test_every_row_of_every_function_is_collected() -> None:
    counts: dict[str, int] = {}
    for r in ROWS:
        counts[r["fn"]] = counts.get(r["fn"], 0) + 1
    assert counts == EXPECTED_COUNTS


def _check(row: dict) -> None:
    module, keep, build = SPECS[row["fn"]]
    func = getattr(importlib.import_module(module), row["fn"])
    kwargs = build(snake_keys(row["args"], keep))
    expected = row["expected"]
    if isinstance(expected, dict) and expected.get("error") is True and row["fn"] == "match_pattern":
        with pytest.raises(Exception):  # noqa: B017 - README §1.6: any exception type will do
            func(**kwargs)
        return
    result = func(**kwargs)
    assert_matches(result, snake_keys(expected))
    assert float_for_int(dump(result), snake_keys(expected)) is None


@pytest.mark.parametrize("fn", functions(ROWS))
def test_review_vector(fn: str) -> None:
    """Every row, with the models of README §1a built from the arguments."""
    check_rows(rows_of(ROWS, fn), _check)


@pytest.mark.parametrize("fn", functions(LOCAL_ROWS))
def test_project_review_vector(fn: str) -> None:
    """The project's own rows (tests/parity/vectors/review_extra.jsonl), run like the shared ones."""
    check_rows(rows_of(LOCAL_ROWS, fn), _check)


@pytest.mark.parametrize("fn", functions(ROWS))
def test_review_vector_with_plain_dicts(fn: str) -> None:
    """Every row again, passing plain snake_case dicts wherever a model is expected (README §1.3)."""
    token = _AS_MODELS.set(False)
    try:
        check_rows(rows_of(ROWS, fn), _check)
    finally:
        _AS_MODELS.reset(token)
