"""The review output key and its markers (behaviour R0.2, R2.1 and R3.10; behaviour E2.5).

The key names one review output (one delivery of one event on one head SHA); the markers are HTML
comments GitHub does not display. The "already published" scan that looks for them on a PR is
:func:`kodiai.github.pulls.find_marker`. It lives in the execution package, below the review package
that builds the key, because the executor's MCP tools stamp and look for the marker too.
"""

from __future__ import annotations

from kodiai.compat.js import js_trim

OUTPUT_MARKER_PREFIX = "kodiai:review-output-key"
DETAILS_MARKER_PREFIX = "kodiai:review-details"
UNKNOWN_HEAD_SHA = "unknown-head-sha"


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
