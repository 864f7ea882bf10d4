"""behaviour E5.1 (comment-server, 62 behaviours) against the fake GitHub server over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from exec_tool_calls import call, payload, text
from execution_helpers import OWNER, PR, REPO

from kodiai.execution.tools.comment_server import comment_tools
from kodiai.execution.tools.validators import (
    CommentValidationError,
    sanitize_review_summary,
    validate_comment_body,
    validate_rereview_summary,
)
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState

ISSUE = PR


def summary(
    *,
    what: str = "## What Changed\nRefactors the payment retry loop.",
    strengths: str | None = None,
    observations: str = (
        "## Observations\n\n### Impact\n[MAJOR] src/app.py (12, 15): Retry loop never terminates\n"
        "The loop condition ignores the max attempt counter."
    ),
    suggestions: str | None = None,
    verdict: str = "## Verdict\n:red_circle: **Address before merging** -- 1 blocking issue(s) found",
    order: list[str] | None = None,
    extra_before: str = "",
) -> str:
    parts = {
        "what": what,
        "strengths": strengths,
        "observations": observations,
        "suggestions": suggestions,
        "verdict": verdict,
    }
    keys = order or ["what", "strengths", "observations", "suggestions", "verdict"]
    sections = [parts[k] for k in keys if parts[k] is not None]
    return (
        "<details>\n<summary>Kodiai Review Summary</summary>\n\n"
        + extra_before
        + "\n\n".join(sections)
        + "\n</details>"
    )


def delta(
    *,
    header: str | None = "## Re-review -- Changes since abc1234",
    what: str | None = "## What Changed\nFixed the retry loop.",
    sections: str = "## New Findings\n:new: [MINOR] src/app.py (3): Typo in log message\nThe word is misspelt.",
    verdict: str | None = "## Verdict Update\n:green_circle: **Blockers resolved** -- Ready to merge",
) -> str:
    parts = [p for p in (header, what, sections, verdict) if p is not None]
    return "<details>\n<summary>Kodiai Re-Review Summary</summary>\n\n" + "\n\n".join(parts) + "\n</details>"


APPROVE_BODY = (
    "<details>\n<summary>kodiai response</summary>\n\nDecision: APPROVE\nIssues: none\n\n</details>"
)
NOT_APPROVED_BODY = (
    "<details>\n<summary>kodiai response</summary>\n\nDecision: NOT APPROVED\nIssues:\n"
    "- (1) [major] src/app.py (12, 15): Retry loop never terminates\n\n</details>"
)


async def create(make_env: Any, body: str, **env_kwargs: Any) -> tuple[dict[str, Any], Any]:
    env = make_env(**env_kwargs)
    result = await call(comment_tools(env), "create_comment", {"issueNumber": ISSUE, "body": body})
    return result, env


def posted(pr_state: PrState) -> list[str]:
    return [c["body"] for c in pr_state.issue_comments(OWNER, REPO, ISSUE)]


# --------------------------------------------------------------------------- createCommentServer (7)


async def test_5_1_01_plain_body_posted_unchanged(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #1: a plain body via create_comment is posted unchanged, no error."""
    result, env = await create(make_env, "Thanks, looks fine.")
    data = payload(result)
    assert data["success"] is True and isinstance(data["comment_id"], int)
    assert posted(pr_state) == ["Thanks, looks fine."]
    assert env.publish.published is True


async def test_5_1_02_legacy_line_stripped_and_valid_summary_posted(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #2: legacy **What changed:** stripped; valid summary accepted; Impact text and spaced path kept."""
    body = summary(
        extra_before="**What changed:** old style line\n",
        observations=(
            "## Observations\n\n### Impact\n[MAJOR] docs/with space.md (4): Broken link target\n"
            "The Impact explanation text survives."
        ),
    )
    result, _ = await create(make_env, body)
    payload(result)
    [out] = posted(pr_state)
    assert "**What changed:**" not in out
    assert "docs/with space.md (4): Broken link target" in out
    assert "The Impact explanation text survives." in out


async def test_5_1_03_summary_without_structure_rejected(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #3: a review summary without the section structure is rejected with "missing required section"."""
    body = "<details>\n<summary>Kodiai Review Summary</summary>\n\nLooks good overall.\n</details>"
    result, env = await create(make_env, body)
    assert result.get("is_error") is True
    assert text(result).startswith("Error: ") and "missing required section" in text(result)
    assert posted(pr_state) == [] and env.publish.published is False


async def test_5_1_04_approve_with_pr_submits_review(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """E5.1 #4: decision APPROVE + Issues: none with a PR number submits an APPROVE review, no comment."""
    result, env = await create(make_env, APPROVE_BODY)
    assert payload(result) == {"success": True, "approved": True, "pull_number": PR}
    [review] = pr_state.reviews(OWNER, REPO, PR)
    assert review["state"] == "APPROVED" and review["body"] == APPROVE_BODY
    assert posted(pr_state) == []
    assert (
        fake_gh.calls_to("POST", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/reviews")[0].json["event"] == "APPROVE"
    )
    assert env.publish.published is True


async def test_approve_on_an_untrusted_authors_pr_is_a_comment_review(
    make_env: Any, pr_state: PrState, fake_gh: FakeGitHub
) -> None:
    """Port deviation (issue 23): with ``may_approve`` off (a fork or a non-writer's PR) the model's
    APPROVE becomes a COMMENT review with the same body: it cannot count toward required reviews."""
    env = make_env()
    env.may_approve = False
    result = await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": APPROVE_BODY})
    assert payload(result) == {"success": True, "approved": False, "pull_number": PR}
    [review] = pr_state.reviews(OWNER, REPO, PR)
    assert review["state"] == "COMMENTED" and review["body"] == APPROVE_BODY
    assert [c.json["event"] for c in fake_gh.calls_to("POST", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/reviews")] == [
        "COMMENT"
    ]


async def test_5_1_05_approve_without_pr_is_plain_comment(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #5: the same APPROVE body without a PR number is posted as a normal comment, no review.
    (An issue run: its target is the issue, ``ToolEnv.issue_number``; a run without a target writes nothing.)"""
    env = make_env(pr_number=None)
    env.issue_number = ISSUE
    result = await call(comment_tools(env), "create_comment", {"issueNumber": ISSUE, "body": APPROVE_BODY})
    assert "comment_id" in payload(result)
    assert posted(pr_state) == [APPROVE_BODY]
    assert pr_state.reviews(OWNER, REPO, PR) == []


async def test_5_1_06_not_approved_is_plain_comment(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #6: a NOT APPROVED body with a valid issue line and a PR number is a normal comment."""
    result, _ = await create(make_env, NOT_APPROVED_BODY)
    assert "comment_id" in payload(result)
    assert posted(pr_state) == [NOT_APPROVED_BODY]
    assert pr_state.reviews(OWNER, REPO, PR) == []


async def test_5_1_07_finding_then_blank_line_rejected(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #7: a finding followed by a blank line and the next section is rejected ("missing explanation")."""
    body = summary(
        observations="## Observations\n\n### Impact\n[MAJOR] src/app.py (12): Retry loop never terminates\n",
    )
    result, _ = await create(make_env, body)
    assert result.get("is_error") and "missing explanation" in text(result)
    assert posted(pr_state) == []


# --------------------------------------------------------------------------- sanitizeKodiaiReviewSummary (25)


def ok_body(body: str) -> str:
    return sanitize_review_summary(body).body


def rejects(body: str, fragment: str) -> None:
    with pytest.raises(CommentValidationError) as info:
        sanitize_review_summary(body)
    assert fragment in str(info.value)


STRENGTHS = "## Strengths\n- :white_check_mark: Good test coverage"
SUGGESTIONS = "## Suggestions\n- Optional: extract a helper"
YELLOW = (
    "## Verdict\n:yellow_circle: **Ready to merge with minor items** -- Optional cleanup suggestions below"
)
GREEN = "## Verdict\n:green_circle: **Ready to merge** -- No blocking issues found"


def obs(*lines: str) -> str:
    return "## Observations\n\n" + "\n".join(lines)


MEDIUM_IMPACT = ("### Impact", "[MEDIUM] src/app.py (3): Unclear name", "The name hides intent.")


def test_5_1_08_all_five_sections_accepted() -> None:
    """E5.1 #8: all five sections in order accepted; the body keeps all five headings."""
    out = ok_body(summary(strengths=STRENGTHS, suggestions=SUGGESTIONS))
    for heading in ("## What Changed", "## Strengths", "## Observations", "## Suggestions", "## Verdict"):
        assert heading in out


def test_5_1_09_only_required_sections_accepted() -> None:
    """E5.1 #9: only the three required sections accepted."""
    assert ok_body(summary()) == summary()


def test_5_1_10_strengths_without_suggestions() -> None:
    """E5.1 #10: Strengths without Suggestions accepted."""
    assert "## Strengths" in ok_body(summary(strengths=STRENGTHS))


def test_5_1_11_impact_and_preference_together() -> None:
    """E5.1 #11: Impact and Preference subsections together accepted."""
    body = summary(
        observations=obs(
            "### Impact",
            "[MAJOR] src/app.py (12): Loop never ends",
            "Counter ignored.",
            "",
            "### Preference",
            "[MINOR] src/app.py (30): Long function",
            "Optional: split it.",
        )
    )
    assert "### Preference" in ok_body(body)


def test_5_1_12_missing_what_changed() -> None:
    """E5.1 #12: missing ## What Changed rejected, error names it."""
    rejects(summary(what="Intro only."), "missing required section '## What Changed'")


def test_5_1_13_missing_observations() -> None:
    """E5.1 #13: missing ## Observations rejected, error names it."""
    rejects(summary(observations="Nothing here."), "missing required section '## Observations'")


def test_5_1_14_missing_verdict() -> None:
    """E5.1 #14: missing ## Verdict rejected, error names it."""
    rejects(summary(verdict="All done."), "missing required section '## Verdict'")


def test_5_1_15_out_of_order() -> None:
    """E5.1 #15: sections out of canonical order rejected (error contains "order")."""
    rejects(summary(order=["observations", "what", "verdict"]), "order")


def test_5_1_16_bad_verdict_line() -> None:
    """E5.1 #16: a verdict line without the emoji/bold/double-dash format is rejected."""
    rejects(summary(verdict="## Verdict\nReady to merge."), "Verdict must use format")


def test_5_1_17_prose_without_impact() -> None:
    """E5.1 #17: Observations prose without ### Impact rejected (mentions ### Impact)."""
    rejects(summary(observations=obs("Some general remarks about the code.")), "### Impact")


def test_5_1_18_extra_heading_rejected() -> None:
    """E5.1 #18: an extra ## Notes heading is rejected ("unexpected section")."""
    rejects(summary(suggestions="## Notes\nA note."), "unexpected section '## Notes'")


def test_5_1_19_non_summary_unchanged() -> None:
    """E5.1 #19: a body without the summary tag passes unchanged."""
    body = "**What changed:** kept because this is not a summary\n## Anything"
    assert ok_body(body) == body


def test_5_1_20_impact_only() -> None:
    """E5.1 #20: Impact-only Observations accepted."""
    ok_body(summary(observations=obs(*MEDIUM_IMPACT), verdict=YELLOW))


def test_5_1_21_impact_plus_preference() -> None:
    """E5.1 #21: Impact + Preference accepted."""
    ok_body(
        summary(
            observations=obs(
                *MEDIUM_IMPACT, "", "### Preference", "[MINOR] src/b.py (1): Nit", "Optional: rename."
            ),
            verdict=YELLOW,
        )
    )


def test_5_1_22_several_findings_blank_separated() -> None:
    """E5.1 #22: several blank-line-separated findings under Impact accepted."""
    ok_body(
        summary(
            observations=obs(
                "### Impact",
                "[MAJOR] src/a.py (1): One",
                "Why one.",
                "",
                "[MEDIUM] src/b.py (2-4, 9): Two",
                "Why two.",
                "",
                "[MINOR] src/c.py (5): Three",
                "Why three.",
            )
        )
    )


def test_5_1_23_preference_only_rejected() -> None:
    """E5.1 #23: Preference-only Observations rejected (mentions ### Impact)."""
    rejects(
        summary(
            observations=obs("### Preference", "[MINOR] src/b.py (1): Nit", "Optional: rename."),
            verdict=YELLOW,
        ),
        "### Impact",
    )


def test_5_1_24_finding_without_severity_rejected() -> None:
    """E5.1 #24: a finding line without a severity tag rejected (mentions ### Impact)."""
    rejects(
        summary(observations=obs("### Impact", "src/app.py (12): No tag", "Why."), verdict=YELLOW),
        "### Impact",
    )


def test_5_1_25_unknown_severity_rejected() -> None:
    """E5.1 #25: unknown severity [HIGH] rejected (mentions ### Impact)."""
    rejects(
        summary(observations=obs("### Impact", "[HIGH] src/app.py (12): Bad", "Why."), verdict=YELLOW),
        "### Impact",
    )


def test_5_1_26_old_critical_subheading_rejected() -> None:
    """E5.1 #26: an old ### Critical sub-heading is not a subsection (mentions ### Impact)."""
    rejects(
        summary(observations=obs("### Critical", "[CRITICAL] src/app.py (12): Bad", "Why.")), "### Impact"
    )


def test_5_1_27_intro_prose_under_impact() -> None:
    """E5.1 #27: intro prose before the first finding under Impact is allowed."""
    ok_body(
        summary(observations=obs("### Impact", "A few things stood out.", *MEDIUM_IMPACT[1:]), verdict=YELLOW)
    )


def test_5_1_28_finding_last_line_rejected() -> None:
    """E5.1 #28: a finding as the last line of Observations (no explanation) is rejected."""
    rejects(summary(observations=obs("### Impact", "[MAJOR] src/app.py (12): Loop")), "missing explanation")


def test_5_1_29_major_under_preference_warns_only() -> None:
    """E5.1 #29: a MAJOR finding under Preference only warns, it is not rejected."""
    result = sanitize_review_summary(
        summary(
            observations=obs(
                *MEDIUM_IMPACT, "", "### Preference", "[MAJOR] src/b.py (1): Style", "Optional: x."
            ),
            verdict=YELLOW,
        )
    )
    assert any("Preference" in w for w in result.warnings)


def test_5_1_30_bold_wrapped_tag_accepted() -> None:
    """E5.1 #30: a bold-wrapped **[CRITICAL]** tag is accepted (and counts as a blocker)."""
    ok_body(
        summary(observations=obs("### Impact", "**[CRITICAL]** src/app.py (12): SQL injection", "Raw input."))
    )


def test_5_1_31_out_of_order_and_bad_verdict_rejected() -> None:
    """E5.1 #31: out-of-order sections and a bad verdict line together are still rejected."""
    with pytest.raises(CommentValidationError):
        sanitize_review_summary(
            summary(order=["verdict", "what", "observations"], verdict="## Verdict\nfine")
        )


def test_5_1_32_two_consecutive_findings_rejected() -> None:
    """E5.1 #32: two consecutive finding lines are rejected ("missing explanation")."""
    rejects(
        summary(
            observations=obs("### Impact", "[MAJOR] src/a.py (1): One", "[MAJOR] src/b.py (2): Two", "Why.")
        ),
        "missing explanation",
    )


# --------------------------------------------------------------------------- verdict cross-check (8)

RED = "## Verdict\n:red_circle: **Address before merging** -- 1 blocking issue(s) found"


def test_5_1_33_red_with_only_medium_rejected() -> None:
    """E5.1 #33: red verdict with only MEDIUM findings rejected."""
    rejects(summary(observations=obs(*MEDIUM_IMPACT), verdict=RED), "no CRITICAL or MAJOR findings exist")


def test_5_1_34_red_with_only_minor_rejected() -> None:
    """E5.1 #34: red verdict with only MINOR findings rejected (same message)."""
    rejects(
        summary(observations=obs("### Impact", "[MINOR] src/a.py (1): Nit", "Why."), verdict=RED),
        "no CRITICAL or MAJOR findings exist",
    )


def test_5_1_35_red_with_critical_accepted() -> None:
    """E5.1 #35: red verdict with a CRITICAL finding accepted."""
    ok_body(
        summary(observations=obs("### Impact", "[CRITICAL] src/a.py (1): Injection", "Why."), verdict=RED)
    )


def test_5_1_36_red_with_major_accepted() -> None:
    """E5.1 #36: red verdict with a MAJOR finding accepted."""
    ok_body(summary(verdict=RED))


def test_5_1_37_yellow_with_medium_accepted() -> None:
    """E5.1 #37: yellow verdict with only MEDIUM findings accepted."""
    ok_body(summary(observations=obs(*MEDIUM_IMPACT), verdict=YELLOW))


def test_5_1_38_green_with_critical_warns() -> None:
    """E5.1 #38: green verdict with a CRITICAL finding accepted with a warning mentioning "blocker(s)"."""
    result = sanitize_review_summary(
        summary(observations=obs("### Impact", "[CRITICAL] src/a.py (1): Injection", "Why."), verdict=GREEN)
    )
    assert any("blocker(s)" in w for w in result.warnings)


def test_5_1_39_yellow_medium_impact_minor_preference() -> None:
    """E5.1 #39: yellow verdict with MEDIUM under Impact and MINOR under Preference accepted."""
    result = sanitize_review_summary(
        summary(
            observations=obs(
                *MEDIUM_IMPACT, "", "### Preference", "[MINOR] src/b.py (1): Nit", "Optional: x."
            ),
            verdict=YELLOW,
        )
    )
    assert result.warnings == []


def test_5_1_40_appended_review_details_tolerated() -> None:
    """E5.1 #40: a second details block (Review Details + marker) after the summary is kept."""
    tail = "\n\n<details>\n<summary>Review Details</summary>\n\n- Files reviewed: 3\n</details>\n\n<!-- kodiai:review-details:k -->"
    body = summary() + tail
    assert ok_body(body).endswith(tail)


# --------------------------------------------------------------------------- delta re-review (16)


def rejects_delta(body: str, fragment: str) -> None:
    with pytest.raises(CommentValidationError) as info:
        validate_rereview_summary(body)
    assert fragment in str(info.value)


async def test_5_1_41_valid_delta_posted_unchanged(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #41: a valid delta summary is posted unchanged."""
    body = delta()
    payload((await create(make_env, body))[0])
    assert posted(pr_state) == [body]


def test_5_1_42_only_new_findings() -> None:
    """E5.1 #42: delta with only New Findings accepted."""
    validate_rereview_summary(delta())


def test_5_1_43_only_resolved() -> None:
    """E5.1 #43: delta with only Resolved Findings accepted."""
    validate_rereview_summary(
        delta(sections="## Resolved Findings\n:white_check_mark: [MAJOR] src/a.py: Loop -- resolved")
    )


def test_5_1_44_only_still_open() -> None:
    """E5.1 #44: delta with only Still Open accepted."""
    validate_rereview_summary(
        delta(sections="## Still Open\n1 finding(s) from the previous review remain open.")
    )


def test_5_1_45_green_blockers_resolved() -> None:
    """E5.1 #45: delta with a green "Blockers resolved" verdict accepted."""
    validate_rereview_summary(
        delta(verdict="## Verdict Update\n:green_circle: **Blockers resolved** -- Ready to merge")
    )


def test_5_1_46_blue_still_ready() -> None:
    """E5.1 #46: delta with a large_blue_circle "Still ready" verdict accepted."""
    validate_rereview_summary(
        delta(verdict="## Verdict Update\n:large_blue_circle: **Still ready** -- No new issues")
    )


def test_5_1_47_non_rereview_unchanged() -> None:
    """E5.1 #47: a non-re-review body passes unchanged."""
    body = "## Observations\nplain text"
    validate_rereview_summary(body)
    assert validate_comment_body(body).body == body


def test_5_1_48_missing_rereview_header() -> None:
    """E5.1 #48: missing ## Re-review header rejected."""
    rejects_delta(delta(header=None), "missing required section '## Re-review'")


def test_5_1_49_missing_what_changed() -> None:
    """E5.1 #49: missing ## What Changed rejected (named)."""
    rejects_delta(delta(what=None), "missing required section '## What Changed'")


def test_5_1_50_missing_verdict_update() -> None:
    """E5.1 #50: missing ## Verdict Update rejected (named)."""
    rejects_delta(delta(verdict=None), "missing required section '## Verdict Update'")


def test_5_1_51_no_delta_section() -> None:
    """E5.1 #51: no delta section at all rejected."""
    rejects_delta(
        delta(sections="Nothing changed."),
        "must contain at least one of: New Findings, Resolved Findings, Still Open",
    )


def test_5_1_52_observations_inside_delta() -> None:
    """E5.1 #52: ## Observations inside a delta rejected."""
    rejects_delta(
        delta(sections="## Still Open\n1 open.\n\n## Observations\nx"), "unexpected section '## Observations'"
    )


def test_5_1_53_strengths_inside_delta() -> None:
    """E5.1 #53: ## Strengths inside a delta rejected."""
    rejects_delta(
        delta(sections="## Still Open\n1 open.\n\n## Strengths\n- good"), "unexpected section '## Strengths'"
    )


def test_5_1_54_bare_verdict_rejected_as_missing_update() -> None:
    """E5.1 #54: a bare ## Verdict (no Update) fails with "missing required section '## Verdict Update'"."""
    rejects_delta(
        delta(verdict="## Verdict\n:green_circle: **Ready** -- fine"),
        "missing required section '## Verdict Update'",
    )


def test_5_1_55_red_verdict_update_rejected() -> None:
    """E5.1 #55: a red-circle verdict update is rejected ("Verdict Update must use format")."""
    rejects_delta(
        delta(verdict="## Verdict Update\n:red_circle: **Blocked** -- still bad"),
        "Verdict Update must use format",
    )


def test_5_1_56_unknown_summary_heading() -> None:
    """E5.1 #56: an unknown ## Summary heading is rejected."""
    rejects_delta(
        delta(sections="## Still Open\n1 open.\n\n## Summary\nx"), "unexpected section '## Summary'"
    )


# --------------------------------------------------------------------------- outgoing mention sanitization (4)


async def test_5_1_57_create_comment_sanitizes_mention(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #57: create_comment turns @kodiai into kodiai."""
    payload((await create(make_env, "Ping @kodiai please"))[0])
    assert posted(pr_state) == ["Ping kodiai please"]


async def test_5_1_58_update_comment_sanitizes_mention(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #58: update_comment turns @kodiai into kodiai."""
    existing = pr_state.add_issue_comment(OWNER, REPO, ISSUE, "old")
    env = make_env()
    result = await call(
        comment_tools(env), "update_comment", {"commentId": existing["id"], "body": "Hi @KODIAI"}
    )
    assert payload(result) == {"success": True, "comment_id": existing["id"]}
    assert posted(pr_state) == ["Hi kodiai"]
    assert env.publish.published is True


async def test_5_1_59_approval_body_has_no_mention(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #59: the approval review body contains no @kodiai."""
    body = APPROVE_BODY.replace("Decision: APPROVE", "Decision: APPROVE").replace(
        "<summary>kodiai response</summary>", "<summary>kodiai response</summary>\n"
    )
    body = body.replace("\n\n</details>", "\n\n</details>\n\ncc @kodiai")
    payload((await create(make_env, body))[0])
    [review] = pr_state.reviews(OWNER, REPO, PR)
    assert "@kodiai" not in review["body"] and "cc kodiai" in review["body"]


async def test_5_1_60_strips_claude_and_kodiai(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #60: create_comment strips both @claude and @kodiai."""
    payload((await create(make_env, "@claude and @kodiai agree"))[0])
    assert posted(pr_state) == ["claude and kodiai agree"]


# --------------------------------------------------------------------------- validator discrimination (2)


async def test_5_1_61_valid_summary_passes_whole_chain(make_env: Any, pr_state: PrState) -> None:
    """E5.1 #61: a valid initial review summary passes the whole chain unchanged in substance."""
    body = summary(strengths=STRENGTHS, suggestions=SUGGESTIONS)
    payload((await create(make_env, body))[0])
    assert posted(pr_state) == [body]


def test_5_1_62_delta_not_subject_to_initial_rules() -> None:
    """E5.1 #62: a delta summary is not held to the initial-summary rules (no Observations required)."""
    body = delta()
    assert validate_comment_body(body).body == body


# --------------------------------------------------------------------------- decision format (E2.1.1 details)


@pytest.mark.parametrize(
    ("inner", "fragment"),
    [
        ("Issues: none\nNo Decision: yet", "missing Decision line"),
        ("Decision: MAYBE\nIssues: none", "Decision must be"),
        ("Decision: APPROVE", "requires a line 'Issues: none'"),
        ("Decision: APPROVE\nIssues: none\nLooks great!", "must contain only"),
        ("Decision: APPROVE\nDecision: APPROVE\nIssues: none", "must contain only"),
        ("Decision: NOT APPROVED\nIssues: none", "cannot use 'Issues: none'"),
        ("Decision: NOT APPROVED\n- (1) [major] a.py (1): x", "requires a line 'Issues:'"),
        ("Decision: NOT APPROVED\nIssues:", "at least one issue line"),
        ("Decision: NOT APPROVED\nIssues:\n- (1) [high] a.py (1): x", "issue line must use format"),
        ("Decision: NOT APPROVED\nIssues:\n- (1) [major] a.py (1): x\nThanks!", "unexpected line"),
    ],
)
def test_2_1_1_decision_format_errors(inner: str, fragment: str) -> None:
    """E2.1.1: every decision-format rule rejects with an "Invalid kodiai response" message."""
    body = f"<details>\n<summary>kodiai response</summary>\n\n{inner}\n\n</details>"
    with pytest.raises(CommentValidationError) as info:
        validate_comment_body(body)
    assert str(info.value).startswith("Invalid kodiai response") and fragment in str(info.value)


def test_2_1_1_decision_value_uses_js_split_semantics() -> None:
    """E2.1.1: the value is the text between the first and second colon ("APPROVE: now" → "APPROVE")."""
    body = (
        "<details>\n<summary>kodiai response</summary>\n\nDecision: APPROVE: now\nIssues: none\n\n</details>"
    )
    assert validate_comment_body(body).body == body
