"""R4.2 review-output key and idempotency helpers (RI-01…05), R0.2 markers, R3.10 run key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kodiai.execution.output_key import (
    body_has_marker,
    build_review_details_marker,
    build_review_output_key,
    build_review_output_marker,
    build_run_key,
)
from kodiai.github.pulls import SCAN_ITEM_CAP, MarkerSurface, find_marker

BASE = {
    "installation_id": 42,
    "owner": "acme",
    "repo": "repo",
    "pr_number": 101,
    "action": "review_requested",
    "delivery_id": "delivery-123",
    "head_sha": "abcdef1234567890",
}


SURFACES: dict[str, MarkerSurface] = {
    "/pulls/101/comments": "review-comment",
    "/issues/101/comments": "issue-comment",
    "/pulls/101/reviews": "review",
}


class Pages:
    """GitHub's three list endpoints of PR 101 (a REST façade double): item bodies per surface, served
    ``per_page`` at a time; records each fetch."""

    def __init__(self, bodies: dict[MarkerSurface, Sequence[object]]) -> None:
        self.bodies = bodies
        self.fetches: list[tuple[MarkerSurface, int]] = []

    async def get(self, suffix: str, **params: Any) -> Any:
        surface = SURFACES[suffix]
        page, per_page = int(params["page"]), int(params["per_page"])
        self.fetches.append((surface, page))
        items = self.bodies.get(surface, [])
        return [{"body": body} for body in items[(page - 1) * per_page : page * per_page]]


async def check(key: str, pages: Any) -> MarkerSurface | None:
    return await find_marker(pages, 101, build_review_output_marker(key))


def test_key_example_from_spec() -> None:
    """R0.2: the documented example key."""
    assert build_review_output_key(**BASE) == (
        "kodiai-review-output:v1:inst-42:acme/repo:pr-101:action-review_requested:"
        "delivery-delivery-123:head-abcdef1234567890"
    )


def test_ri_01_same_inputs_same_key_mixed_case() -> None:
    mixed = {
        **BASE,
        "owner": " ACME ",
        "repo": "Repo",
        "action": "Review_Requested",
        "delivery_id": "DELIVERY-123",
        "head_sha": "ABCDEF1234567890 ",
    }
    assert build_review_output_key(**BASE) == build_review_output_key(**BASE)
    assert build_review_output_key(**mixed) == build_review_output_key(**BASE)


@pytest.mark.parametrize(
    ("field", "value"),
    [("delivery_id", "delivery-124"), ("head_sha", "0123456789abcdef"), ("pr_number", 102)],
)
def test_ri_02_key_changes_with_delivery_head_or_pr(field: str, value: object) -> None:
    assert build_review_output_key(**{**BASE, field: value}) != build_review_output_key(**BASE)


def test_missing_head_sha_falls_back() -> None:
    assert build_review_output_key(**{**BASE, "head_sha": None}).endswith(":head-unknown-head-sha")


async def test_ri_03_marker_in_review_comment() -> None:
    key = build_review_output_key(**BASE)
    marker = build_review_output_marker(key)
    assert marker == f"<!-- kodiai:review-output-key:{key} -->"
    pages = Pages({"review-comment": ["unrelated", f"[MAJOR] bug\n\n{marker}"], "issue-comment": [marker]})
    assert await check(key, pages) == "review-comment"
    assert all(surface == "review-comment" for surface, _ in pages.fetches)


async def test_ri_04_marker_absent_everywhere() -> None:
    key = build_review_output_key(**BASE)
    other = build_review_output_marker(build_review_output_key(**{**BASE, "delivery_id": "other"}))
    pages = Pages({"review-comment": [other, None], "issue-comment": ["hi"], "review": ["", other]})
    assert await check(key, pages) is None
    assert [s for s, _ in pages.fetches] == ["review-comment", "issue-comment", "review"]


async def test_ri_05_marker_in_issue_comment() -> None:
    key = build_review_output_key(**BASE)
    pages = Pages(
        {"review-comment": ["x"], "issue-comment": ["a", f"summary {build_review_output_marker(key)}"]}
    )
    assert await check(key, pages) == "issue-comment"


async def test_marker_found_in_review_body() -> None:
    key = build_review_output_key(**BASE)
    assert await check(key, Pages({"review": [build_review_output_marker(key)]})) == "review"


async def test_scan_pages_until_short_page_and_stops_at_cap() -> None:
    """R2.1: pages of 100; a short page ends a surface; at most 2000 items per surface are read."""
    key = build_review_output_key(**BASE)
    marker = build_review_output_marker(key)
    deep = Pages({"issue-comment": ["x"] * 250 + [marker]})
    assert await check(key, deep) == "issue-comment"
    assert [p for s, p in deep.fetches if s == "issue-comment"] == [1, 2, 3]
    beyond_cap = Pages({"review-comment": ["x"] * SCAN_ITEM_CAP + [marker]})
    assert await check(key, beyond_cap) is None
    assert max(p for s, p in beyond_cap.fetches if s == "review-comment") == SCAN_ITEM_CAP // 100


async def test_fetch_errors_propagate() -> None:
    """The scan is fail-closed: an API error reaches the caller."""

    class Broken:
        async def get(self, suffix: str, **params: Any) -> Any:
            raise RuntimeError("HTTP 502")

    with pytest.raises(RuntimeError, match="502"):
        await check("k", Broken())


def test_details_marker_and_run_key() -> None:
    assert build_review_details_marker("k1") == "<!-- kodiai:review-details:k1 -->"
    assert build_run_key(owner="Acme", repo="Repo", pr_number=5, base_sha="B", head_sha="H") == (
        "Acme/Repo:pr-5:base-B:head-H"
    )
    assert body_has_marker("x <!-- m --> y", "<!-- m -->")
    assert not body_has_marker(None, "<!-- m -->")
