"""Review-output marker stamping and the async "already published" scan the tools run (behaviour E2.5).

The key and the marker format are :mod:`kodiai.execution.output_key` (the review package builds the key);
this module adds what the MCP tools need on top: stamping a body, and scanning a PR through the REST
façade before the first inline comment of a run.
"""

from __future__ import annotations

from kodiai.execution.output_key import OUTPUT_MARKER_PREFIX, build_review_output_marker
from kodiai.github.pulls import find_marker
from kodiai.github.rest import RestApi

MARKER_PREFIX = OUTPUT_MARKER_PREFIX

__all__ = ["MARKER_PREFIX", "build_review_output_marker", "review_output_published", "stamp_review_marker"]


def stamp_review_marker(body: str, review_output_key: str | None) -> str:
    """Append the marker after a blank line unless there is no key or the body already has it."""
    if not review_output_key:
        return body
    marker = build_review_output_marker(review_output_key)
    return body if marker in body else f"{body}\n\n{marker}"


async def review_output_published(rest: RestApi, pr_number: int, review_output_key: str) -> bool:
    """Whether any review comment, issue comment or review of the PR contains the marker (the scan of
    :func:`kodiai.github.pulls.find_marker`: 100 a page, at most 2000 items per surface)."""
    return await find_marker(rest, pr_number, build_review_output_marker(review_output_key)) is not None
