"""behaviour R4.8 (author classifier, AC-01…AC-22) and its JS traps."""

from __future__ import annotations

import pytest

from kodiai.review.author import AuthorClassification, classify_author

CASES = [
    ("AC-01", "MEMBER", None, "core"),
    ("AC-02", "OWNER", None, "core"),
    ("AC-03", "FIRST_TIMER", None, "first-time"),
    ("AC-04", "FIRST_TIME_CONTRIBUTOR", None, "first-time"),
    ("AC-05", "COLLABORATOR", None, "regular"),
    ("AC-06", "CONTRIBUTOR", None, "regular"),
    ("AC-07", "NONE", None, "first-time"),
    ("AC-08", "MANNEQUIN", None, "first-time"),
    ("AC-09", "NONE", 0, "first-time"),
    ("AC-10", "NONE", 1, "first-time"),
    ("AC-11", "NONE", 2, "regular"),
    ("AC-12", "NONE", 9, "regular"),
    ("AC-13", "NONE", 10, "core"),
    ("AC-14", "NONE", 50, "core"),
    ("AC-15", "COLLABORATOR", 0, "first-time"),
    ("AC-16", "COLLABORATOR", 5, "regular"),
    ("AC-17", "COLLABORATOR", 15, "core"),
    ("AC-18", "CONTRIBUTOR", 1, "first-time"),
    ("AC-19", "MEMBER", 0, "core"),
    ("AC-20", "FIRST_TIMER", 50, "first-time"),
    ("AC-21", "UNKNOWN_VALUE", None, "first-time"),
]


@pytest.mark.parametrize(("cid", "association", "count", "tier"), CASES, ids=[c[0] for c in CASES])
def test_ac_01_to_21_tiers(cid: str, association: str, count: int | None, tier: str) -> None:
    """R4.8 AC-01…AC-21: the tier for each association / PR count."""
    assert classify_author(association, count).tier == tier, cid


def test_ac_22_exact_result() -> None:
    assert classify_author("OWNER", 12) == AuthorClassification(
        tier="core", author_association="OWNER", pr_count=12, cached_at=None
    )


def test_trap_js_to_upper_case_without_trim() -> None:
    """JS ``toUpperCase``: ``straße`` → ``STRASSE``, ``ﬁrst_timer`` → ``FIRST_TIMER``; no trim."""
    assert classify_author("straße").author_association == "STRASSE"
    assert classify_author("ﬁrst_timer", 50).tier == "first-time"
    assert classify_author(" MEMBER", 1.01).tier == "regular", "a leading space is not trimmed"


def test_trap_bool_is_not_a_js_number() -> None:
    result = classify_author("NONE", True)
    assert result.pr_count is None and result.tier == "first-time"


def test_fractional_counts_are_echoed_and_compared() -> None:
    assert classify_author("NONE", 1.5).model_dump() == {
        "tier": "regular",
        "author_association": "NONE",
        "pr_count": 1.5,
        "cached_at": None,
    }
    assert classify_author("NONE", 9.5).tier == "core"
