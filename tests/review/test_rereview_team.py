"""R4.3 rereview team (RT-01…04) and the rest of R2.2's decision rules.

The GitHub side is a small in-memory stand-in for the three reviewer endpoints (an outside service);
the logic under test is the real helper.
"""

from __future__ import annotations

from collections.abc import Sequence

from kodiai.review.rereview_team import (
    RequestedTeam,
    build_rereview_team_candidates,
    request_rereview_team_best_effort,
)


class HttpError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class FakeReviewers:
    def __init__(
        self,
        teams: Sequence[RequestedTeam] = (),
        failures: dict[str, int] | None = None,
        list_error: bool = False,
        reviewer_error: bool = False,
    ) -> None:
        self.teams = list(teams)
        self.failures = failures or {}
        self.list_error = list_error
        self.reviewer_error = reviewer_error
        self.team_attempts: list[str] = []
        self.reviewer_requests: list[str] = []

    def list_requested_teams(self) -> Sequence[RequestedTeam]:
        if self.list_error:
            raise HttpError(500)
        return self.teams

    def request_team(self, team_slug: str) -> None:
        self.team_attempts.append(team_slug)
        if team_slug in self.failures:
            raise HttpError(self.failures[team_slug])

    def request_reviewer(self, login: str) -> None:
        self.reviewer_requests.append(login)
        if self.reviewer_error:
            raise HttpError(422)


def test_rt_01_candidates() -> None:
    assert build_rereview_team_candidates("xbmc/aireview") == ["aireview", "ai-review"]
    assert build_rereview_team_candidates("ai-review") == ["ai-review", "aireview"]
    assert build_rereview_team_candidates("  Org/Backend ") == ["backend"]
    assert build_rereview_team_candidates("") == []
    assert build_rereview_team_candidates(None) == []


def test_rt_02_already_requested() -> None:
    client = FakeReviewers(teams=[RequestedTeam(slug="aireview", name="AI Review")])
    result = request_rereview_team_best_effort(client, "xbmc/aireview", fallback_reviewer="kodiai")
    assert result.already_requested is True
    assert result.requested_team is None
    assert client.team_attempts == []
    assert client.reviewer_requests == []


def test_rt_03_422_falls_back_to_alias() -> None:
    client = FakeReviewers(failures={"aireview": 422})
    result = request_rereview_team_best_effort(client, "aireview")
    assert client.team_attempts == ["aireview", "ai-review"]
    assert result.requested_team == "ai-review"
    assert result.already_requested is False


def test_rt_04_both_fail_then_fallback_reviewer() -> None:
    client = FakeReviewers(failures={"aireview": 422, "ai-review": 422})
    result = request_rereview_team_best_effort(client, "aireview", fallback_reviewer=" kodiai ")
    assert client.team_attempts == ["aireview", "ai-review"]
    assert client.reviewer_requests == ["kodiai"]
    assert result.already_requested is False and result.requested_team is None


def test_non_422_stops_candidate_loop_and_never_raises() -> None:
    client = FakeReviewers(failures={"ai-review": 403}, list_error=True, reviewer_error=True)
    result = request_rereview_team_best_effort(client, "ai-review", fallback_reviewer="kodiai")
    assert client.team_attempts == ["ai-review"]
    assert client.reviewer_requests == ["kodiai"]
    assert result.requested_team is None


def test_no_candidates_does_nothing() -> None:
    client = FakeReviewers()
    assert (
        request_rereview_team_best_effort(client, "  ", fallback_reviewer="kodiai").already_requested is False
    )
    assert client.team_attempts == [] and client.reviewer_requests == []


def test_team_matched_by_name_case_insensitively() -> None:
    client = FakeReviewers(teams=[RequestedTeam(slug="x", name=" AI-Review ")])
    assert request_rereview_team_best_effort(client, "aireview").already_requested is True
