"""Retries against the fake server's injected faults: 5xx backoff, primary/secondary rate limits, 429."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from github.GithubException import RateLimitExceededExceedsMaxWait

from github import Github, GithubException
from kodiai.github.app_auth import GitHubApp
from kodiai.github.retry import GitHubRetry
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes


def client(fake: FakeGitHub, **retry_kw: object):  # type: ignore[no-untyped-def]
    kw = {"total": 4, "backoff_factor": 0.01, "max_wait": 5.0, "secondary_rate_wait": 0.2}
    kw.update(retry_kw)
    app = GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url, retry=GitHubRetry(**kw))  # type: ignore[arg-type]
    app.installation_token(1)
    fake.reset_calls()
    return app.installation_client(1)


def repo_calls(fake: FakeGitHub) -> list[int]:
    return [c.status for c in fake.calls_to("GET", "/repos/acme/widgets")]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_retried_with_backoff_then_succeeds(fake_github: FakeGitHub, status: int) -> None:
    gh = client(fake_github)
    fake_github.fail(status, times=2, path="^/repos/acme/widgets$")
    assert gh.get_repo("acme/widgets").name == "widgets"
    assert repo_calls(fake_github) == [status, status, 200]


def test_5xx_gives_up_after_the_retry_budget(fake_github: FakeGitHub) -> None:
    gh = client(fake_github, total=2)
    fake_github.fail(502, times=10, path="^/repos/acme/widgets$")
    with pytest.raises(GithubException) as err:
        gh.get_repo("acme/widgets")
    assert err.value.status == 502
    assert repo_calls(fake_github) == [502, 502, 502]


def test_primary_rate_limit_waits_until_reset(fake_github: FakeGitHub) -> None:
    """403 + X-RateLimit-Remaining: 0 → wait until X-RateLimit-Reset (+1 s), then retry."""
    gh = client(fake_github)
    fake_github.fail_primary_rate_limit(reset_in=1, path="^/repos/acme/widgets$")
    started = time.monotonic()
    assert gh.get_repo("acme/widgets").name == "widgets"
    assert time.monotonic() - started >= 1.0
    assert repo_calls(fake_github) == [403, 200]


def test_primary_rate_limit_header_only_429(fake_github: FakeGitHub) -> None:
    """429 with only the rate-limit headers (no message, no Retry-After) is still a primary limit."""
    gh = client(fake_github)
    reset = int(time.time() + 1)
    fake_github.fail(
        429,
        path="^/repos/acme/widgets$",
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
        body={"message": "slow down"},
    )
    started = time.monotonic()
    assert gh.get_repo("acme/widgets").name == "widgets"
    assert time.monotonic() - started >= 0.9
    assert repo_calls(fake_github) == [429, 200]


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_honours_retry_after(fake_github: FakeGitHub, status: int) -> None:
    gh = client(fake_github)
    fake_github.fail_secondary_rate_limit(retry_after=1, status=status, path="^/repos/acme/widgets$")
    started = time.monotonic()
    assert gh.get_repo("acme/widgets").name == "widgets"
    assert time.monotonic() - started >= 1.0
    assert repo_calls(fake_github) == [status, 200]


def test_429_without_headers_waits_the_secondary_wait(fake_github: FakeGitHub) -> None:
    gh = client(fake_github, secondary_rate_wait=0.3)
    fake_github.fail(429, path="^/repos/acme/widgets$", body={"message": "Too many requests"})
    started = time.monotonic()
    assert gh.get_repo("acme/widgets").name == "widgets"
    assert time.monotonic() - started >= 0.3
    assert repo_calls(fake_github) == [429, 200]


def test_wait_beyond_max_wait_raises_instead_of_sleeping(fake_github: FakeGitHub) -> None:
    """A reset an hour away is not slept through: RateLimitExceededExceedsMaxWait at once."""
    gh = client(fake_github, max_wait=2.0)
    fake_github.fail_primary_rate_limit(reset_in=3600, path="^/repos/acme/widgets$")
    started = time.monotonic()
    with pytest.raises(RateLimitExceededExceedsMaxWait):
        gh.get_repo("acme/widgets")
    assert time.monotonic() - started < 2


def test_plain_403_is_not_retried(fake_github: FakeGitHub) -> None:
    """A permission 403 (no rate-limit signal) is an immediate error."""
    gh = client(fake_github)
    fake_github.fail(
        403, path="^/repos/acme/widgets$", body={"message": "Resource not accessible by integration"}
    )
    with pytest.raises(GithubException) as err:
        gh.get_repo("acme/widgets")
    assert err.value.status == 403
    assert repo_calls(fake_github) == [403]


# --- non-idempotent writes are never duplicated by the transport retry --------------------------------
@pytest.fixture
def pr_fake() -> Iterator[tuple[FakeGitHub, PrState]]:
    """A fake GitHub of its own with the PR/comment routes (the lost-response fault lives there)."""
    fake = FakeGitHub()
    fake.add_installation(1, account="acme")
    fake.add_repo("acme", "widgets", installation_id=1)
    state = install_pr_routes(fake)
    with fake:
        yield fake, state


def _post_comment(gh: Github, body: str) -> Any:
    return gh.requester.requestJsonAndCheck(
        "POST", "/repos/acme/widgets/issues/7/comments", input={"body": body}
    )


@pytest.mark.parametrize("status", [500, 502, 503])
def test_post_after_lost_5xx_response_is_not_resent(pr_fake: tuple[FakeGitHub, PrState], status: int) -> None:
    """GitHub created the comment but the response was lost: the client must not post it a second time."""
    fake, state = pr_fake
    gh = client(fake)
    state.lose_next_response("POST", r"^/repos/acme/widgets/issues/7/comments$", status=status)
    with pytest.raises(GithubException) as err:
        _post_comment(gh, "only once")
    assert err.value.status == status
    assert [c.status for c in fake.calls_to("POST", "/repos/acme/widgets/issues/7/comments")] == [status]
    assert [c["body"] for c in state.issue_comments("acme", "widgets", 7)] == ["only once"]


def test_patch_after_5xx_is_not_resent(pr_fake: tuple[FakeGitHub, PrState]) -> None:
    fake, _state = pr_fake
    gh = client(fake)
    fake.fail(502, method="PATCH", path=r"^/repos/acme/widgets/issues/comments/1$")
    with pytest.raises(GithubException):
        gh.requester.requestJsonAndCheck(
            "PATCH", "/repos/acme/widgets/issues/comments/1", input={"body": "x"}
        )
    assert len(fake.calls_to("PATCH", "/repos/acme/widgets/issues/comments/1")) == 1


@pytest.mark.parametrize("status", [403, 429])
def test_post_refused_by_secondary_rate_limit_is_retried_once_allowed(
    pr_fake: tuple[FakeGitHub, PrState], status: int
) -> None:
    """A rate-limit refusal means GitHub did not process the POST: retrying after Retry-After is safe."""
    fake, state = pr_fake
    gh = client(fake)
    fake.fail_secondary_rate_limit(
        retry_after=1, status=status, path=r"^/repos/acme/widgets/issues/7/comments$"
    )
    _post_comment(gh, "after the limit")
    assert [c.status for c in fake.calls_to("POST", "/repos/acme/widgets/issues/7/comments")] == [status, 201]
    assert [c["body"] for c in state.issue_comments("acme", "widgets", 7)] == ["after the limit"]


def test_get_is_still_retried_on_5xx(pr_fake: tuple[FakeGitHub, PrState]) -> None:
    fake, _state = pr_fake
    gh = client(fake)
    fake.fail(502, times=1, method="GET", path=r"^/repos/acme/widgets/issues/7/comments$")
    assert gh.requester.requestJsonAndCheck("GET", "/repos/acme/widgets/issues/7/comments")[1] == []
    assert [c.status for c in fake.calls_to("GET", "/repos/acme/widgets/issues/7/comments")] == [502, 200]
