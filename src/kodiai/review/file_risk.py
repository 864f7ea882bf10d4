"""Per-file risk scores and large-PR triage (behaviour R2.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from kodiai.compat.glob import any_glob_match
from kodiai.compat.js import js_round
from kodiai.review.diff_analysis import (
    AUTH_PATTERNS,
    INFRA_RISK_PATTERNS,
    MANIFEST_PATTERNS,
    SCHEMA_PATTERNS,
    SECRET_PATTERNS,
    FileLineStats,
)
from kodiai.text.languages import classify_file_language, file_extension

__all__ = [
    "CATEGORY_RISK",
    "DEFAULT_RISK_WEIGHTS",
    "EXECUTABLE_EXTENSIONS",
    "LANGUAGE_RISK",
    "FileLineStats",
    "FileRiskScore",
    "RiskBreakdown",
    "RiskWeights",
    "TieredFiles",
    "compute_file_risk_scores",
    "is_executable_extension",
    "triage_files_by_risk",
]


class RiskWeights(BaseModel):
    """Relative weights of the five risk components (normalised by their sum at runtime)."""

    lines_changed: float = 0.3
    path_risk: float = 0.3
    file_category: float = 0.2
    language_risk: float = 0.1
    file_extension: float = 0.1


DEFAULT_RISK_WEIGHTS = RiskWeights()

#: (patterns, weight); a file takes the maximum weight over the groups it matches.
PATH_RISK_PATTERNS: tuple[tuple[tuple[str, ...], float], ...] = (
    (AUTH_PATTERNS, 1.0),
    (SECRET_PATTERNS, 1.0),
    (SCHEMA_PATTERNS, 0.8),
    (INFRA_RISK_PATTERNS, 0.5),
    (MANIFEST_PATTERNS, 0.4),
)

CATEGORY_RISK: dict[str, float] = {"source": 1.0, "infra": 0.7, "config": 0.4, "test": 0.2, "docs": 0.1}
UNKNOWN_CATEGORY_RISK = 0.5

LANGUAGE_RISK: dict[str, float] = {
    "C": 1.0,
    "C++": 1.0,
    "PHP": 0.6,
    "Go": 0.6,
    "Rust": 0.5,
    "Java": 0.5,
    "JavaScript": 0.5,
    "TypeScript": 0.4,
    "Python": 0.4,
    "Ruby": 0.4,
    "Unknown": 0.3,
}
DEFAULT_LANGUAGE_RISK = 0.3

EXECUTABLE_EXTENSIONS = frozenset(
    [
        "ts",
        "tsx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "mts",
        "cts",
        "py",
        "pyw",
        "go",
        "rs",
        "java",
        "kt",
        "kts",
        "swift",
        "cs",
        "cpp",
        "cc",
        "cxx",
        "c",
        "rb",
        "php",
        "scala",
        "sh",
        "bash",
        "zsh",
        "sql",
        "dart",
        "lua",
        "ex",
        "exs",
        "zig",
    ]
)


class RiskBreakdown(BaseModel):
    """Each component ×100, rounded the JS way."""

    lines_changed: int
    path_risk: int
    file_category: int
    language_risk: int
    file_extension: int


class FileRiskScore(BaseModel):
    file_path: str
    score: int
    breakdown: RiskBreakdown


class TieredFiles(BaseModel):
    """Files split into full review, abbreviated review and mention-only tiers."""

    full: list[FileRiskScore]
    abbreviated: list[FileRiskScore]
    mention_only: list[FileRiskScore]
    total_files: int
    threshold: int
    is_large_pr: bool


def is_executable_extension(file_path: str) -> bool:
    """Whether the extension (text after the last ``.``, lowercased) is an executable-code one."""
    return file_extension(file_path) in EXECUTABLE_EXTENSIONS


def _path_risk(path: str) -> float:
    risk = 0.0
    for patterns, weight in PATH_RISK_PATTERNS:
        if weight > risk and any_glob_match(patterns, path):
            risk = weight
    return risk


def _normalised(weights: RiskWeights | Mapping[str, Any] | None) -> RiskWeights:
    w = DEFAULT_RISK_WEIGHTS if weights is None else RiskWeights.model_validate(weights)
    total = w.lines_changed + w.path_risk + w.file_category + w.language_risk + w.file_extension
    if total <= 0:
        return DEFAULT_RISK_WEIGHTS
    return RiskWeights(
        lines_changed=w.lines_changed / total,
        path_risk=w.path_risk / total,
        file_category=w.file_category / total,
        language_risk=w.language_risk / total,
        file_extension=w.file_extension / total,
    )


def _lines(stats: FileLineStats | Mapping[str, Any] | None) -> float:
    if stats is None:
        return 0
    if isinstance(stats, FileLineStats):
        return stats.added + stats.removed
    total: float = stats["added"] + stats["removed"]  # numstat counts, as in FileLineStats
    return total


def compute_file_risk_scores(
    files: Sequence[str],
    per_file_stats: Mapping[str, FileLineStats | Mapping[str, Any]],
    files_by_category: Mapping[str, Sequence[str]],
    weights: RiskWeights | Mapping[str, Any] | None = None,
) -> list[FileRiskScore]:
    """Score every file 0–100 and sort descending (stable); duplicate files give duplicate rows."""
    w = _normalised(weights)
    category_of: dict[str, str] = {}
    for category, paths in files_by_category.items():
        for path in paths:
            category_of[path] = category  # a file listed twice takes the later category
    line_counts = [_lines(per_file_stats.get(path)) for path in files]
    max_lines = max(line_counts, default=0)
    scored: list[FileRiskScore] = []
    for path, lines in zip(files, line_counts, strict=True):
        lines_score = min(1.0, math.log10(lines + 1) / math.log10(max_lines + 1)) if max_lines > 0 else 0.0
        path_risk = _path_risk(path)
        category_risk = CATEGORY_RISK.get(category_of.get(path, "source"), UNKNOWN_CATEGORY_RISK)
        language_risk = LANGUAGE_RISK.get(classify_file_language(path), DEFAULT_LANGUAGE_RISK)
        extension_risk = 1.0 if is_executable_extension(path) else 0.3
        total = (
            w.lines_changed * lines_score
            + w.path_risk * path_risk
            + w.file_category * category_risk
            + w.language_risk * language_risk
            + w.file_extension * extension_risk
        )
        scored.append(
            FileRiskScore(
                file_path=path,
                score=int(js_round(total * 100)),
                breakdown=RiskBreakdown(
                    lines_changed=int(js_round(lines_score * 100)),
                    path_risk=int(js_round(path_risk * 100)),
                    file_category=int(js_round(category_risk * 100)),
                    language_risk=int(js_round(language_risk * 100)),
                    file_extension=int(js_round(extension_risk * 100)),
                ),
            )
        )
    scored.sort(key=lambda s: -s.score)
    return scored


def triage_files_by_risk(
    risk_scores: Sequence[FileRiskScore | Mapping[str, Any]],
    file_threshold: int,
    full_review_count: int,
    abbreviated_count: int,
    total_file_count: int | None = None,
) -> TieredFiles:
    """Split already-sorted scores into tiers; the PR is large when it has more files than the threshold."""
    scores = [s if isinstance(s, FileRiskScore) else FileRiskScore.model_validate(s) for s in risk_scores]
    total = total_file_count if total_file_count is not None else len(scores)
    is_large = total > file_threshold
    if not is_large:
        return TieredFiles(
            full=scores,
            abbreviated=[],
            mention_only=[],
            total_files=total,
            threshold=file_threshold,
            is_large_pr=False,
        )
    f = full_review_count
    a = full_review_count + abbreviated_count
    return TieredFiles(
        full=scores[:f],
        abbreviated=scores[f:a],
        mention_only=scores[a:],
        total_files=total,
        threshold=file_threshold,
        is_large_pr=True,
    )
