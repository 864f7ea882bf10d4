"""The safety guard: findings that feedback may never auto-suppress (behaviour R2.29)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROTECTED_MAJOR_CATEGORIES = frozenset({"security", "correctness"})


def is_feedback_suppression_protected(finding: Mapping[str, Any]) -> bool:
    """True for any ``critical`` finding and for ``major`` security or correctness findings (exact values)."""
    severity = finding.get("severity")
    if severity == "critical":
        return True
    return severity == "major" and finding.get("category") in PROTECTED_MAJOR_CATEGORIES
