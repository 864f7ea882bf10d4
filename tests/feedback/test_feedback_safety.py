"""Safety guard: behaviour R4.35 (SG-01…13)."""

from __future__ import annotations

import pytest

from kodiai.feedback.safety import is_feedback_suppression_protected


@pytest.mark.parametrize(
    ("checklist", "severity", "category", "protected"),
    [
        ("SG-01", "critical", "security", True),
        ("SG-02", "critical", "style", True),
        ("SG-03", "critical", "correctness", True),
        ("SG-04", "critical", "performance", True),
        ("SG-05", "critical", "documentation", True),
        ("SG-06", "major", "security", True),
        ("SG-07", "major", "correctness", True),
        ("SG-08", "major", "style", False),
        ("SG-09", "major", "performance", False),
        ("SG-10", "major", "documentation", False),
        ("SG-11", "medium", "security", False),
        ("SG-12", "minor", "correctness", False),
        ("SG-13", "medium", "style", False),
    ],
)
def test_4_35_sg_01_to_13(checklist: str, severity: str, category: str, protected: bool) -> None:
    """R4.35 SG-01…SG-13: any critical; major security/correctness; nothing else."""
    assert is_feedback_suppression_protected({"severity": severity, "category": category}) is protected, (
        checklist
    )


def test_values_are_exact() -> None:
    """The guard compares exact strings (the vectors include `Critical` and `MAJOR`, which are not protected)."""
    assert is_feedback_suppression_protected({"severity": "Critical", "category": "security"}) is False
    assert is_feedback_suppression_protected({"severity": "MAJOR", "category": "security"}) is False
