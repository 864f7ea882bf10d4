"""The deliberate fixes of PARITY.md (review Q1, Q2, Q3, Q8, Q15) and the issue's additions, through the
real handler stack: each test fails on the original's behaviour."""

from __future__ import annotations

from typing import Any

from support.review_harness import OWNER, REPO, ReviewHarness, inline
from support.scripted_transport import Result

OTHER = "export function legacy() { return open(); }\n"


def push(h: ReviewHarness, pull: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """A new commit on the PR branch; the PR's head moves to it."""
    sha = h.repo.commit(files, "follow-up", branch=pull["head"]["ref"])
    h.state.add_pull(OWNER, REPO, pull["number"], head_sha=sha)
    return {**pull, "head": {**pull["head"], "sha": sha}}


SYNC_ON = "review:\n  triggers:\n    onSynchronize: true\n"


async def test_q2_q1_second_review_is_incremental_with_delta_and_dedup(harness: ReviewHarness) -> None:
    """Q2: the second review of a PR runs in incremental mode (the original superseded the completed run
    before reading it) and gets the delta context. Q1: a prior finding on unchanged code, posted again,
    is recognised by its fingerprint and suppressed (the original's two fingerprint forms never matched)."""
    pull = harness.open_pr(
        config=SYNC_ON,
        base_files={"src/index.ts": "export const a = 1;\n", "src/other.ts": "export {};\n"},
        head_files={"src/index.ts": "export const a = 2;\n", "src/other.ts": OTHER},
    )
    title = "[MAJOR] Legacy helper leaks file handles\n\nClose it."
    harness.script(inline("src/other.ts", 1, title))
    await harness.deliver(pull)
    first_head = pull["head"]["sha"]

    pull = push(harness, pull, {"src/index.ts": "export const a = 3;\n"})
    harness.script(inline("src/other.ts", 1, title))
    await harness.deliver(pull, "synchronize")

    assert len(harness.executor.contexts) == 2
    prompt = harness.prompts[1]
    assert "## Incremental Review Mode" in prompt and first_head[:7] in prompt
    assert "## Delta Review Context" in prompt and "Kodiai Re-Review Summary" in prompt
    assert "Legacy helper leaks file handles" in prompt  # the unresolved prior finding is listed
    second = harness.rows(
        "knowledge.db",
        "SELECT f.suppressed, f.comment_id FROM findings f JOIN reviews r ON r.id = f.review_id "
        "WHERE r.head_sha = ?",
        (pull["head"]["sha"],),
    )
    assert [s for s, _ in second] == [1]
    deleted = [r.path for r in harness.calls("DELETE", r"/repos/acme/repo/pulls/comments/\d+")]
    assert deleted == [f"/repos/acme/repo/pulls/comments/{second[0][1]}"]
    delta = harness.logged("Delta classification")
    assert delta and (delta[0]["deltaStillOpen"], delta[0]["deltaNew"]) == (1, 0)


async def test_q2_a_gated_out_synchronize_does_not_hide_the_last_review(harness: ReviewHarness) -> None:
    """A push with ``onSynchronize`` off (the default) claims a run and drops it at the trigger gate; the
    next requested review is still incremental from the last *completed* one."""
    pull = harness.open_pr()
    await harness.deliver(pull)
    first_head = pull["head"]["sha"]
    pull = push(harness, pull, {"src/index.ts": "export const a = 4;\n"})
    await harness.deliver(pull, "synchronize")
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "kodiai"})
    assert len(harness.executor.contexts) == 2
    assert "## Incremental Review Mode" in harness.prompts[1] and first_head[:7] in harness.prompts[1]


async def test_q3_explicit_rerequest_of_an_unchanged_pr_runs_again(harness: ReviewHarness) -> None:
    harness.state.set_permission("acme", "repo", "alice", "write")  # approvals only on a writer's PR
    pull = harness.open_pr()
    await harness.deliver(pull)
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "kodiai"})
    assert len(harness.executor.contexts) == 2
    assert [r["state"] for r in harness.reviews()] == ["APPROVED", "APPROVED"]  # two runs, two keys


async def test_q3_an_unrequested_duplicate_of_the_same_shas_does_not_run(harness: ReviewHarness) -> None:
    pull = harness.open_pr(config="review:\n  triggers:\n    onReadyForReview: true\n")
    await harness.deliver(pull)
    await harness.deliver(pull, "ready_for_review")
    assert len(harness.executor.contexts) == 1
    assert [e["skipReason"] for e in harness.logs if e.get("gateResult") == "skipped"] == ["duplicate"]


def acks(h: ReviewHarness) -> list[str]:
    return [c["body"] for c in h.issue_comments() if "Review skipped per `[no-review]`" in c["body"]]


async def test_q8_no_review_is_acknowledged_once_per_head_and_only_when_a_review_would_run(
    harness: ReviewHarness,
) -> None:
    pull = harness.open_pr(title="[no-review] wip refactor")
    await harness.deliver(pull)  # would review: acknowledged
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "kodiai"})  # same head
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "alice"})  # not for us
    await harness.deliver(pull, "synchronize")  # trigger off by default: would not review
    assert harness.executor.contexts == []
    assert len(acks(harness)) == 1

    pull = push(harness, pull, {"src/index.ts": "export const a = 9;\n"})
    await harness.deliver(pull, "review_requested", requested_reviewer={"login": "kodiai"})
    assert len(acks(harness)) == 2  # a new head gets its own acknowledgement


async def test_q15_summary_beyond_the_first_100_comments_gets_the_details(harness: ReviewHarness) -> None:
    """The original looked for the summary in the first page of 100 issue comments only."""
    pull = harness.open_pr()
    for i in range(120):
        harness.state.add_issue_comment(OWNER, REPO, 101, f"discussion {i}")
    body = (
        "<details>\n<summary>Kodiai Review Summary</summary>\n\n## What Changed\nA constant.\n\n"
        "## Observations\n\n### Impact\n[MAJOR] src/index.ts (1): Constant changed\nCallers break.\n\n"
        "## Verdict\n:red_circle: **Address before merging** -- 1 blocking issue(s) found\n</details>"
    )
    harness.script(
        inline("src/index.ts", 1, "[MAJOR] Constant changed\n\nCallers break."),
        harness_tool_comment(body),
    )
    await harness.deliver(pull)
    comments = harness.issue_comments()
    (summary,) = [c for c in comments if "Kodiai Review Summary" in c["body"]]
    assert comments.index(summary) >= 100
    assert "<summary>Review Details</summary>" in summary["body"]
    assert not [c for c in comments if c is not summary and "<summary>Review Details</summary>" in c["body"]]


def harness_tool_comment(body: str) -> Any:
    from support.scripted_transport import ToolCall

    return ToolCall("github_comment", "create_comment", {"issueNumber": 101, "body": body})


async def test_empty_model_result_is_an_error_not_a_clean_approval(harness: ReviewHarness) -> None:
    """A run that produced no output tokens and published nothing is not a clean review: no approval,
    an error comment and ``executions.conclusion = error`` (the original approved it)."""
    pull = harness.open_pr()
    empty_usage = {"claude-sonnet-4-5": {"inputTokens": 10, "outputTokens": 0, "costUSD": 0.0}}
    harness.script(Result(result="", model_usage=empty_usage))
    await harness.deliver(pull)
    assert harness.reviews() == []
    errors = [c["body"] for c in harness.issue_comments() if "> **Kodiai" in c["body"]]
    assert len(errors) == 1 and "empty result" in errors[0]
    assert harness.rows("telemetry.db", "SELECT conclusion FROM executions") == [("error",)]
