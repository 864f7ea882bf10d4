"""Finding prioritisation: score each finding and keep the best ``maxComments`` (behaviour R2.16)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import fixed_number, js_trim

SEVERITY_SCORES: dict[str, int] = {"critical": 100, "major": 80, "medium": 30, "minor": 15}
CATEGORY_SCORES: dict[str, int] = {
    "security": 80,
    "correctness": 80,
    "performance": 60,
    "documentation": 35,
    "style": 25,
}
UNKNOWN_SCORE = 50
MAX_RECURRENCE = 5


class FindingPriorityWeights(BaseModel):
    """Relative weights of the four score components."""

    severity: float
    file_risk: float
    category: float
    recurrence: float


DEFAULT_FINDING_PRIORITY_WEIGHTS = FindingPriorityWeights(
    severity=0.45, file_risk=0.3, category=0.15, recurrence=0.1
)


class FindingForPrioritization(BaseModel):
    """A finding as prioritisation sees it; unknown fields are kept and echoed in the ranking."""

    model_config = ConfigDict(extra="allow")

    file_path: str
    title: str
    severity: str
    category: str
    file_risk_score: int | float | None = None
    recurrence_count: int | float | None = None


class ScoreBreakdown(BaseModel):
    """The unweighted component scores (each 0–100); integral values stay ``int``, as JS prints them."""

    severity: int
    file_risk: int | float
    category: int
    recurrence: int | float


class FindingScore(BaseModel):
    score: int | float
    score_breakdown: ScoreBreakdown


class RankedFinding(FindingForPrioritization):
    """An input finding plus its score, breakdown and original position."""

    score: int | float
    score_breakdown: ScoreBreakdown
    original_index: int


class PrioritizationStats(BaseModel):
    findings_scored: int
    top_score: int | float | None
    threshold_score: int | float | None


class PrioritizeFindingsResult(BaseModel):
    ranked_findings: list[RankedFinding]
    selected_findings: list[RankedFinding]
    stats: PrioritizationStats


def _non_negative(value: float) -> float:
    return value if math.isfinite(value) and value > 0 else 0.0


def normalize_weights(
    weights: FindingPriorityWeights | Mapping[str, object] | None,
) -> FindingPriorityWeights:
    """Clamp each weight at ≥ 0 and divide by their sum; a sum ≤ 0 (or no weights) gives the defaults."""
    if weights is None:
        return DEFAULT_FINDING_PRIORITY_WEIGHTS
    w = FindingPriorityWeights.model_validate(weights)
    s, f, c, r = (_non_negative(v) for v in (w.severity, w.file_risk, w.category, w.recurrence))
    total = s + f + c + r
    if total <= 0:
        return DEFAULT_FINDING_PRIORITY_WEIGHTS
    return FindingPriorityWeights(
        severity=s / total, file_risk=f / total, category=c / total, recurrence=r / total
    )


def _clamp(value: float | None, high: int) -> int | float:
    if value is None or not math.isfinite(value):
        return 0
    return min(max(value, 0), high)


def _js_number(value: int | float) -> int | float:
    """A JS number as Python would print it: integral floats become ``int`` (``50.0`` → ``50``)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _breakdown(finding: FindingForPrioritization) -> ScoreBreakdown:
    return ScoreBreakdown(
        severity=SEVERITY_SCORES.get(js_trim(finding.severity).lower(), UNKNOWN_SCORE),
        file_risk=_js_number(_clamp(finding.file_risk_score, 100)),
        category=CATEGORY_SCORES.get(js_trim(finding.category).lower(), UNKNOWN_SCORE),
        recurrence=_js_number(_clamp(finding.recurrence_count, MAX_RECURRENCE) / MAX_RECURRENCE * 100),
    )


def _score(breakdown: ScoreBreakdown, w: FindingPriorityWeights) -> int | float:
    raw = (
        breakdown.severity * w.severity
        + breakdown.file_risk * w.file_risk
        + breakdown.category * w.category
        + breakdown.recurrence * w.recurrence
    )
    return _js_number(fixed_number(raw, 2))


def score_finding(
    finding: FindingForPrioritization | Mapping[str, object],
    weights: FindingPriorityWeights | Mapping[str, object] | None = None,
) -> FindingScore:
    """Σ component × normalised weight, rounded to 2 decimals with ``toFixed`` (half-up) semantics."""
    f = FindingForPrioritization.model_validate(finding)
    breakdown = _breakdown(f)
    return FindingScore(score=_score(breakdown, normalize_weights(weights)), score_breakdown=breakdown)


def prioritize_findings(
    findings: Sequence[FindingForPrioritization | dict[str, Any]],
    max_comments: float | None = None,
    weights: FindingPriorityWeights | Mapping[str, object] | None = None,
) -> PrioritizeFindingsResult:
    """Rank by score (descending, ties keep input order) and select the first ``floor(max(0, max_comments))``.

    Without a finite ``max_comments`` every finding is selected.
    """
    w = normalize_weights(weights)
    ranked: list[RankedFinding] = []
    for index, item in enumerate(findings):
        f = FindingForPrioritization.model_validate(item)
        breakdown = _breakdown(f)
        data = f.model_dump()
        data.update(score=_score(breakdown, w), score_breakdown=breakdown, original_index=index)
        ranked.append(RankedFinding.model_validate(data))
    ranked.sort(key=lambda r: (-r.score, r.original_index))
    if max_comments is not None and math.isfinite(max_comments):
        limit = math.floor(max(0, max_comments))
    else:
        limit = len(ranked)
    selected = ranked[:limit]
    stats = PrioritizationStats(
        findings_scored=len(ranked),
        top_score=ranked[0].score if ranked else None,
        threshold_score=selected[-1].score if selected else None,
    )
    return PrioritizeFindingsResult(ranked_findings=ranked, selected_findings=selected, stats=stats)
