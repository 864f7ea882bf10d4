"""Review-output marker stamping and the async "already published" scan the tools run (spec/exec.md §2.5).

The key, the marker format and the scan limits are the review package's (``kodiai.review.output_key``);
this module adds what the MCP tools need on top: stamping a body, and scanning a PR through the REST
façade before the first inline comment of a run.
"""

from __future__ import annotations

from kodiai.github.rest import RestApi
from kodiai.review.output_key import (
    OUTPUT_MARKER_PREFIX,
    SCAN_ITEM_CAP,
    SCAN_PAGE_SIZE,
    body_has_marker,
    build_review_output_marker,
)

MARKER_PREFIX = OUTPUT_MARKER_PREFIX

__all__ = ["MARKER_PREFIX", "build_review_output_marker", "review_output_published", "stamp_review_marker"]


def stamp_review_marker(body: str, review_output_key: str | None) -> str:
    """Append the marker after a blank line unless there is no key or the body already has it."""
    if not review_output_key:
        return body
    marker = build_review_output_marker(review_output_key)
    return body if marker in body else f"{body}\n\n{marker}"


async def review_output_published(rest: RestApi, pr_number: int, review_output_key: str) -> bool:
    """Whether any review comment, issue comment or review of the PR contains the marker.

    Scanned in order — PR review comments, issue comments, PR reviews — 100 a page, each scan stopping
    after 2000 items or a short page, and the whole scan stopping at the first hit.
    """
    marker = build_review_output_marker(review_output_key)
    sources: tuple[tuple[str, dict[str, str]], ...] = (
        (f"/pulls/{pr_number}/comments", {"sort": "created", "direction": "desc"}),
        (f"/issues/{pr_number}/comments", {"sort": "created", "direction": "desc"}),
        (f"/pulls/{pr_number}/reviews", {}),
    )
    for suffix, params in sources:
        seen, page = 0, 1
        while seen < SCAN_ITEM_CAP:
            batch = await rest.get(suffix, per_page=SCAN_PAGE_SIZE, page=page, **params)
            if not isinstance(batch, list):
                break
            for item in batch[: SCAN_ITEM_CAP - seen]:
                if body_has_marker(item.get("body"), marker):
                    return True
            seen += len(batch)
            if len(batch) < SCAN_PAGE_SIZE:
                break
            page += 1
    return False
