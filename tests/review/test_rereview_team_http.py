"""R4.3 RT-02…RT-04 once more, through the GitHub adapter the handler uses (``RequestedTeams`` over the
REST façade) against the fake GitHub: its 422s and listings are what the helper sees in production."""

from __future__ import annotations

import asyncio

from kodiai.github.pulls import RequestedTeams
from kodiai.github.rest import GitHubRest
from kodiai.review.rereview_team import request_rereview_team_best_effort
from support.review_harness import OWNER, REPO, ReviewHarness


def teams(h: ReviewHarness) -> RequestedTeams:
    return RequestedTeams(GitHubRest(h.github.installation_client(42), OWNER, REPO), 101)


async def test_rt_03_422_falls_back_to_the_alias_over_http(harness: ReviewHarness) -> None:
    harness.open_pr()
    harness.state.refuse_team_requests("aireview")
    result = await asyncio.to_thread(
        request_rereview_team_best_effort, teams(harness), "xbmc/aireview", "kodiai"
    )
    assert result.requested_team == "ai-review" and result.already_requested is False
    assert [r["team_reviewers"] for r in harness.state.review_requests] == [["aireview"], ["ai-review"]]
    assert [r["status"] for r in harness.state.review_requests] == [422, 201]


async def test_rt_02_already_requested_team_is_not_requested_again(harness: ReviewHarness) -> None:
    harness.open_pr()
    await asyncio.to_thread(teams(harness).request_team, "aireview")
    result = await asyncio.to_thread(request_rereview_team_best_effort, teams(harness), "ai-review", "kodiai")
    assert result.already_requested is True
    assert len(harness.state.review_requests) == 1


async def test_rt_04_both_refused_then_the_app_user_is_requested(harness: ReviewHarness) -> None:
    harness.open_pr()
    harness.state.refuse_team_requests("aireview", "ai-review")
    await asyncio.to_thread(request_rereview_team_best_effort, teams(harness), "aireview", "kodiai")
    last = harness.state.review_requests[-1]
    assert last["reviewers"] == ["kodiai"] and last["team_reviewers"] == []
