"""The typed finding as it crosses the packages: read back from the run's inline comments (review), raised
by the language floors (enforcement), then post-processed, recorded and remembered (review, feedback,
knowledge, learned memory). It imports nothing of Kodiai, so every layer may use it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Severity = Literal["critical", "major", "medium", "minor"]
Category = Literal["security", "correctness", "performance", "style", "documentation"]


class ExtractedFinding(BaseModel):
    """One finding read back from this run's inline comments (behaviour R1 step 38)."""

    comment_id: int
    file_path: str
    title: str
    severity: Severity
    category: Category
    start_line: int | None = None
    end_line: int | None = None


class EnforcedFinding(ExtractedFinding):
    """An extracted finding after language enforcement (step 39), the input of post-processing.

    ``severity`` is the floor's when one raised it (``original_severity`` keeps the model's);
    ``tooling_suppressed`` marks a formatting or import-order finding the repository's tooling covers.
    """

    original_severity: Severity
    severity_elevated: bool = False
    tooling_suppressed: bool = False
    enforcement_pattern_id: str | None = None
