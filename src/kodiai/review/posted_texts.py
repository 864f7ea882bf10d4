"""Deterministic texts the review handler posts (behaviour R3.5, R3.7, R3.8).

Error comments are built by ``kodiai.execution.errors``; the Review Details block by
``kodiai.review.details``. Every body still goes through the outgoing-mention sanitiser when posted.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kodiai.compat.js import to_fixed
from kodiai.execution.output_key import build_review_output_marker

NO_REVIEW_ACKNOWLEDGEMENT = "Review skipped per `[no-review]` in PR title."
NO_REVIEW_ACK_MARKER_PREFIX = "kodiai:no-review-ack"
_NO_REVIEW_RE = re.compile(r"\[no-review\]", re.IGNORECASE | re.ASCII)

APPROVAL_MERGE_CONFIDENCE_EMOJI = {
    "high": ":green_circle:",
    "medium": ":yellow_circle:",
    "low": ":red_circle:",
}
# The approval says "High"; the prompt says "High Confidence" for the same level.
APPROVAL_MERGE_CONFIDENCE_LABEL = {
    "high": "High",
    "medium": "Review Recommended",
    "low": "Careful Review Required",
}


class MergeConfidenceInput(BaseModel):
    """Reads ``kodiai.review.dep_bumps.merge_confidence.MergeConfidence`` (``level``, ``rationale``)."""

    model_config = ConfigDict(from_attributes=True, extra="ignore")

    level: Literal["high", "medium", "low"]
    rationale: list[str] = Field(default_factory=list)


def title_requests_no_review(title: str | None) -> bool:
    """Whether the PR title contains ``[no-review]`` (case-insensitive; the body is not read)."""
    return bool(title) and _NO_REVIEW_RE.search(title or "") is not None


def no_review_ack_marker(head_sha: str) -> str:
    """Invisible marker the port adds to the acknowledgement so it is posted once per head SHA (Q8 fix)."""
    return f"<!-- {NO_REVIEW_ACK_MARKER_PREFIX}:{head_sha} -->"


def build_no_review_acknowledgement(head_sha: str | None = None) -> str:
    """The ``[no-review]`` acknowledgement; with a head SHA, followed by the invisible once-per-SHA marker."""
    if head_sha is None:
        return NO_REVIEW_ACKNOWLEDGEMENT
    return f"{NO_REVIEW_ACKNOWLEDGEMENT}\n\n{no_review_ack_marker(head_sha)}"


def format_merge_confidence_for_approval(confidence: MergeConfidenceInput | object) -> str:
    """``<emoji> **Merge Confidence: <label>** — <first rationale item or "">`` (U+2014 dash)."""
    mc = MergeConfidenceInput.model_validate(confidence)
    first = mc.rationale[0] if mc.rationale else ""
    emoji = APPROVAL_MERGE_CONFIDENCE_EMOJI[mc.level]
    return f"{emoji} **Merge Confidence: {APPROVAL_MERGE_CONFIDENCE_LABEL[mc.level]}** \u2014 {first}"


def build_approval_body(
    review_output_key: str, merge_confidence: MergeConfidenceInput | object | None = None
) -> str:
    """The APPROVE review body: the output marker, plus the merge-confidence line for dep bumps."""
    marker = build_review_output_marker(review_output_key)
    if merge_confidence is None:
        return marker
    return f"{marker}\n\n{format_merge_confidence_for_approval(merge_confidence)}"


def should_post_cost_warning(
    *, telemetry_enabled: bool, cost_warning_usd: float, cost_usd: float | None
) -> bool:
    """Telemetry on, a positive threshold, and a known cost above it."""
    if not telemetry_enabled or cost_warning_usd <= 0 or cost_usd is None:
        return False
    return not math.isnan(cost_usd) and cost_usd > cost_warning_usd


def build_cost_warning(cost_usd: float, cost_warning_usd: float) -> str:
    """The seven-line blockquote cost warning (cost to 4 decimals, threshold to 2, JS ``toFixed``)."""
    return "\n".join(
        [
            f"> **Kodiai cost warning:** This execution cost ${to_fixed(cost_usd, 4)} USD, exceeding the "
            f"configured threshold of ${to_fixed(cost_warning_usd, 2)} USD.",
            ">",
            "> Configure in `.kodiai.yml`:",
            "> ```yml",
            "> telemetry:",
            ">   costWarningUsd: 5.0  # or 0 to disable",
            "> ```",
        ]
    )
