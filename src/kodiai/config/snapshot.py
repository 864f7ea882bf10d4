"""`reviews.config_snapshot`: the compact JSON summary of the review config stored with each review.

behaviour R1 step 48 and X-22: keys in the order mode, severityMinLevel, focusAreas, maxComments,
suppressionCount, minConfidence, profile (left out when unset), shareGlobal; raw config values (before any
profile is applied); `JSON.stringify` formatting (compact separators, `7` not `7.0`, non-ASCII kept).
"""

from __future__ import annotations

import json
from typing import Any

from kodiai.compat.js import js_number_to_string
from kodiai.config.models import RepoConfig


def _json(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (str, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return js_number_to_string(value)


def config_snapshot(config: RepoConfig) -> str:
    """The `config_snapshot` text of a review run with `config`."""
    review = config.review
    fields: list[tuple[str, Any]] = [
        ("mode", review.mode),
        ("severityMinLevel", review.severity.min_level),
        ("focusAreas", list(review.focus_areas)),
        ("maxComments", review.max_comments),
        ("suppressionCount", len(review.suppressions)),
        ("minConfidence", review.min_confidence),
    ]
    if review.profile is not None:
        fields.append(("profile", review.profile))
    fields.append(("shareGlobal", config.knowledge.share_global))
    return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in fields) + "}"
