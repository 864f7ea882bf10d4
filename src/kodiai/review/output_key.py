"""The review output key, its markers, and the pure part of the "already published" scan.

spec/review.md §0.2, §2.1 and §3.10; spec/exec.md §2.5. The key names one review output (one delivery
of one event on one head SHA); the markers are HTML comments GitHub does not display.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from kodiai.text.js import js_trim

OUTPUT_MARKER_PREFIX = "kodiai:review-output-key"
DETAILS_MARKER_PREFIX = "kodiai:review-details"
UNKNOWN_HEAD_SHA = "unknown-head-sha"
SCAN_PAGE_SIZE = 100
SCAN_ITEM_CAP = 2000

Surface = Literal["review-comment", "issue-comment", "review"]
SCAN_ORDER: tuple[Surface, ...] = ("review-comment", "issue-comment", "review")


def _norm(value: str) -> str:
    return js_trim(value).lower()


def build_review_output_key(
    *,
    installation_id: int,
    owner: str,
    repo: str,
    pr_number: int,
    action: str,
    delivery_id: str,
    head_sha: str | None,
) -> str:
    """``kodiai-review-output:v1:inst-<id>:<owner>/<repo>:pr-<n>:action-<a>:delivery-<d>:head-<sha>``.

    owner, repo, action, delivery id and head SHA are trimmed and lowercased; a missing head SHA becomes
    ``unknown-head-sha``. The installation id and PR number are used as they come.
    """
    sha = head_sha if head_sha is not None else UNKNOWN_HEAD_SHA
    return ":".join(
        [
            "kodiai-review-output",
            "v1",
            f"inst-{installation_id}",
            f"{_norm(owner)}/{_norm(repo)}",
            f"pr-{pr_number}",
            f"action-{_norm(action)}",
            f"delivery-{_norm(delivery_id)}",
            f"head-{_norm(sha)}",
        ]
    )


def build_review_output_marker(review_output_key: str) -> str:
    """``<!-- kodiai:review-output-key:<key> -->``: stamped on inline comments, summaries and approvals."""
    return f"<!-- {OUTPUT_MARKER_PREFIX}:{review_output_key} -->"


def build_review_details_marker(review_output_key: str) -> str:
    """``<!-- kodiai:review-details:<key> -->``: the last line of the Review Details block."""
    return f"<!-- {DETAILS_MARKER_PREFIX}:{review_output_key} -->"


def build_run_key(*, owner: str, repo: str, pr_number: int, base_sha: str, head_sha: str) -> str:
    """Run-state key of the knowledge store: ``<owner>/<repo>:pr-<n>:base-<sha>:head-<sha>`` (not lowercased)."""
    return f"{owner}/{repo}:pr-{pr_number}:base-{base_sha}:head-{head_sha}"


def body_has_marker(body: object, marker: str) -> bool:
    """A body "contains" the marker by plain substring; non-string bodies never do."""
    return isinstance(body, str) and marker in body


class PublicationCheck(BaseModel):
    """Result of the "already published" scan (§2.1 ``ensureReviewOutputNotPublished``)."""

    review_output_key: str
    marker: str
    should_publish: bool
    existing_location: Surface | None


PageFetcher = Callable[[Surface, int, int], Sequence[object]]
"""``fetch(surface, page, per_page)`` → the bodies on that page (1-based); I/O lives in the caller."""


def scan_surface(bodies_by_page: Iterable[Sequence[object]], marker: str) -> bool:
    """Whether the marker appears within the first 2000 items; a page shorter than 100 ends the scan."""
    scanned = 0
    for page in bodies_by_page:
        for body in page:
            if scanned >= SCAN_ITEM_CAP:
                return False
            scanned += 1
            if body_has_marker(body, marker):
                return True
        if len(page) < SCAN_PAGE_SIZE or scanned >= SCAN_ITEM_CAP:
            return False
    return False


def _pages(fetch: PageFetcher, surface: Surface) -> Iterable[Sequence[object]]:
    page = 1
    while True:
        yield fetch(surface, page, SCAN_PAGE_SIZE)
        page += 1


def check_review_output_published(review_output_key: str, fetch: PageFetcher) -> PublicationCheck:
    """Scan review comments, then issue comments, then reviews, stopping at the first marker hit.

    ``fetch`` does the API calls and may raise: errors propagate (the step is fail-closed).
    """
    marker = build_review_output_marker(review_output_key)
    for surface in SCAN_ORDER:
        if scan_surface(_pages(fetch, surface), marker):
            return PublicationCheck(
                review_output_key=review_output_key,
                marker=marker,
                should_publish=False,
                existing_location=surface,
            )
    return PublicationCheck(
        review_output_key=review_output_key, marker=marker, should_publish=True, existing_location=None
    )
