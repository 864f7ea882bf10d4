"""R3.5 approval body, R3.7 ``[no-review]`` acknowledgement, R3.8 cost warning (byte-exact), X-19, RV-27…29."""

from __future__ import annotations

import math

import pytest

from kodiai.execution.output_key import build_review_output_marker
from kodiai.review.posted_texts import (
    NO_REVIEW_ACKNOWLEDGEMENT,
    build_approval_body,
    build_cost_warning,
    build_no_review_acknowledgement,
    format_merge_confidence_for_approval,
    should_post_cost_warning,
    title_requests_no_review,
)

KEY = "kodiai-review-output:v1:inst-1:acme/repo:pr-2:action-opened:delivery-x:head-y"


def test_no_review_acknowledgement_exact() -> None:
    assert NO_REVIEW_ACKNOWLEDGEMENT == "Review skipped per `[no-review]` in PR title."
    assert build_no_review_acknowledgement() == NO_REVIEW_ACKNOWLEDGEMENT
    with_marker = build_no_review_acknowledgement("abc123")
    assert with_marker == NO_REVIEW_ACKNOWLEDGEMENT + "\n\n<!-- kodiai:no-review-ack:abc123 -->"


def test_x_03_no_review_title_match_is_case_insensitive() -> None:
    assert title_requests_no_review("WIP [No-Review] docs")
    assert title_requests_no_review("[NO-REVIEW]")
    assert not title_requests_no_review("no-review")
    assert not title_requests_no_review(None)


def test_approval_body_is_the_marker() -> None:
    assert build_approval_body(KEY) == build_review_output_marker(KEY)


@pytest.mark.parametrize(
    ("level", "line"),
    [
        ("high", ":green_circle: **Merge Confidence: High** \u2014 Patch version bump (bug fix only)"),
        (
            "medium",
            ":yellow_circle: **Merge Confidence: Review Recommended** \u2014 Patch version bump (bug fix only)",
        ),
        (
            "low",
            ":red_circle: **Merge Confidence: Careful Review Required** \u2014 Patch version bump (bug fix only)",
        ),
    ],
)
def test_x_19_dep_bump_approval_body(level: str, line: str) -> None:
    mc = {"level": level, "rationale": ["Patch version bump (bug fix only)", "No known security advisories"]}
    assert build_approval_body(KEY, mc) == f"{build_review_output_marker(KEY)}\n\n{line}"


def test_approval_line_with_empty_rationale_and_foreign_object() -> None:
    class MergeConfidence:
        level = "high"
        rationale: tuple[str, ...] = ()

    assert (
        format_merge_confidence_for_approval(MergeConfidence())
        == ":green_circle: **Merge Confidence: High** \u2014 "
    )


def test_cost_warning_exact() -> None:
    assert build_cost_warning(2.5, 1.0) == (
        "> **Kodiai cost warning:** This execution cost $2.5000 USD, exceeding the configured threshold of "
        "$1.00 USD.\n"
        ">\n"
        "> Configure in `.kodiai.yml`:\n"
        "> ```yml\n"
        "> telemetry:\n"
        ">   costWarningUsd: 5.0  # or 0 to disable\n"
        "> ```"
    )


def test_cost_warning_rounds_like_js_to_fixed() -> None:
    """``toFixed`` rounds the exact binary value half-up: 1.005 is 1.00499… → "1.00"; 0.125 → "0.13"."""
    text = build_cost_warning(0.12345, 1.005)
    assert "$0.1235 USD" in text  # 0.12345 is 0.123450000000000004…
    assert "$1.00 USD" in text
    assert "$0.13 USD" in build_cost_warning(1, 0.125)


def test_rv_27_to_29_cost_warning_gate() -> None:
    assert should_post_cost_warning(telemetry_enabled=True, cost_warning_usd=1.0, cost_usd=2.5)
    assert not should_post_cost_warning(telemetry_enabled=True, cost_warning_usd=0, cost_usd=50)
    assert not should_post_cost_warning(telemetry_enabled=False, cost_warning_usd=1.0, cost_usd=5)
    assert not should_post_cost_warning(telemetry_enabled=True, cost_warning_usd=1.0, cost_usd=1.0)
    assert not should_post_cost_warning(telemetry_enabled=True, cost_warning_usd=1.0, cost_usd=None)
    assert not should_post_cost_warning(telemetry_enabled=True, cost_warning_usd=1.0, cost_usd=math.nan)
