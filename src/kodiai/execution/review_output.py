"""The review-output marker and the "already published" scan (spec/exec.md §2.5, review.md §0.2).

The key itself is built by the review handler; the tools stamp ``<!-- kodiai:review-output-key:<key> -->``
on what they post and, before the first inline comment of a run, scan the PR for it.
"""

from __future__ import annotations

from kodiai.execution.github_rest import RestApi

MARKER_PREFIX = "kodiai:review-output-key"
SCAN_LIMIT = 2000


def build_review_output_marker(review_output_key: str) -> str:
    """``<!-- kodiai:review-output-key:<key> -->``."""
    return f"<!-- {MARKER_PREFIX}:{review_output_key} -->"


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
        while seen < SCAN_LIMIT:
            batch = await rest.get(suffix, per_page=100, page=page, **params)
            if not isinstance(batch, list):
                break
            if any(marker in str(item.get("body") or "") for item in batch):
                return True
            seen += len(batch)
            if len(batch) < 100:
                break
            page += 1
    return False
