"""Review timeout estimation from PR size and language mix (behaviour R2.5, behaviour E3.20)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel

from kodiai.compat.js import js_number_to_string, js_round, to_fixed
from kodiai.review.file_risk import DEFAULT_LANGUAGE_RISK, LANGUAGE_RISK

__all__ = ["TimeoutEstimate", "compute_language_complexity", "estimate_timeout_risk"]

RiskLevel = Literal["low", "medium", "high"]

MIN_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 1800
REDUCED_FILE_CAP = 50
NEUTRAL_LANGUAGE_COMPLEXITY = 0.3


class TimeoutEstimate(BaseModel):
    risk_level: RiskLevel
    dynamic_timeout_seconds: int | float
    should_reduce_scope: bool
    reduced_file_count: int | None
    reasoning: str


def compute_language_complexity(files_by_language: Mapping[str, Sequence[str]]) -> float:
    """File-count-weighted mean of the language risks, clamped to [0, 1]; 0.3 with no files."""
    total_files = 0
    weighted = 0.0
    for language, files in files_by_language.items():
        count = len(files)
        weighted += LANGUAGE_RISK.get(language, DEFAULT_LANGUAGE_RISK) * count
        total_files += count
    if total_files == 0:
        return NEUTRAL_LANGUAGE_COMPLEXITY
    return min(1.0, max(0.0, weighted / total_files))


def estimate_timeout_risk(
    file_count: int,
    lines_changed: int | float,
    language_complexity: float,
    is_large_pr: bool,
    base_timeout_seconds: int | float,
) -> TimeoutEstimate:
    """Estimate the risk of a timeout and a dynamic timeout. ``is_large_pr`` is accepted but unused (as in TS)."""
    del is_large_pr
    complexity = (
        min(file_count / 100, 1) * 0.4 + min(lines_changed / 5000, 1) * 0.4 + language_complexity * 0.2
    )
    level: RiskLevel = "low" if complexity < 0.3 else "medium" if complexity < 0.6 else "high"
    raw = base_timeout_seconds * (0.5 + complexity)
    timeout = js_round(min(MAX_TIMEOUT_SECONDS, max(MIN_TIMEOUT_SECONDS, raw)))
    high = level == "high"
    reasoning = (
        f"Complexity score: {to_fixed(complexity, 2)} (files: {js_number_to_string(file_count)}, "
        f"lines: {js_number_to_string(lines_changed)}, "
        f"lang risk: {js_number_to_string(js_round(language_complexity * 100))}%). "
        f"Risk level: {level}. Dynamic timeout: {js_number_to_string(timeout)}s "
        f"(base: {js_number_to_string(base_timeout_seconds)}s)."
    )
    return TimeoutEstimate(
        risk_level=level,
        dynamic_timeout_seconds=timeout,
        should_reduce_scope=high,
        reduced_file_count=min(file_count, REDUCED_FILE_CAP) if high else None,
        reasoning=reasoning,
    )
