"""The fake GitHub's pull-request endpoints, through the real PyGithub requester and the app's REST façade."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from github import Auth, Github, GithubException
from kodiai.github.pulls import PullRequestApi
from kodiai.github.rest import GitHubApiError, GitHubRest
from kodiai.webhook.payloads import PullRequestEvent, parse_payload
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState, install_pr_routes
from support.pr_payloads import pull_request_payload

OWNER, REPO, INSTALLATION, PR = "acme", "widgets", 42, 7
FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "webhooks"


@pytest.fixture(scope="module")
def _server() -> Iterator[tuple[FakeGitHub, PrState]]:
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        yield fake, state


@pytest.fixture
def fake(_server: tuple[FakeGitHub, PrState]) -> FakeGitHub:
    fake, state = _server
    state.clear()
    fake.faults.clear()
    fake.reset_calls()
    return fake


@pytest.fixture
def state(_server: tuple[FakeGitHub, PrState], fake: FakeGitHub) -> PrState:
    return _server[1]


def client(fake: FakeGitHub, per_page: int = 30) -> Github:
    """PyGithub as the app builds it (installation auth minted once per fake, no retries)."""
    auth = fake.data.get("_support_tests_auth")
    if auth is None:
        auth = Auth.AppAuth(fake.app_id, fake.private_key_pem).get_installation_auth(INSTALLATION)
        fake.data["_support_tests_auth"] = auth
    return Github(
        base_url=fake.url,
        auth=auth,
        retry=None,
        per_page=per_page,
        seconds_between_requests=None,  # PyGithub's write throttle would add a second per write
        seconds_between_writes=None,
    )


def api(fake: FakeGitHub) -> PullRequestApi:
    return PullRequestApi(GitHubRest(client(fake), OWNER, REPO), PR)


def test_add_pull_seeds_a_full_pull_request(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(
        OWNER,
        REPO,
        PR,
        title="Fix the parser",
        body="Details",
        author="alice",
        head_ref="fix-parser",
        head_sha="f" * 40,
        head_owner="forker",
        base_sha="b" * 40,
        draft=True,
        labels=["bug", "parser"],
        files=[{"filename": "src/p.py", "additions": 3, "deletions": 2, "patch": "@@ -1 +1 @@"}, "README.md"],
    )
    pull = client(fake).get_repo(f"{OWNER}/{REPO}").get_pull(PR)
    assert (pull.title, pull.body, pull.user.login, pull.draft) == (
        "Fix the parser",
        "Details",
        "alice",
        True,
    )
    assert (pull.head.ref, pull.head.sha, pull.head.repo.full_name) == (
        "fix-parser",
        "f" * 40,
        "forker/widgets",
    )
    assert pull.head.repo.fork and (pull.base.ref, pull.base.sha) == ("main", "b" * 40)
    assert (pull.additions, pull.deletions, pull.changed_files, pull.commits) == (4, 2, 2, 1)
    assert [label.name for label in pull.labels] == ["bug", "parser"]


def test_commits_and_files_paginate_with_link_headers(fake: FakeGitHub, state: PrState) -> None:
    commits = [(f"{i:040x}", f"commit {i}\n\nbody {i}") for i in range(5)]
    state.add_pull(OWNER, REPO, PR, commits=commits, files=["a.py", "b.py", "c.py"])
    pull = client(fake, per_page=2).get_repo(f"{OWNER}/{REPO}").get_pull(PR)

    assert [(c.sha, c.commit.message) for c in pull.get_commits()] == commits  # 3 pages via Link
    files = list(pull.get_files())
    assert [(f.filename, f.status, f.additions) for f in files] == [
        ("a.py", "modified", 1),
        ("b.py", "modified", 1),
        ("c.py", "modified", 1),
    ]
    pages = fake.calls_to("GET", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/commits")
    assert len(pages) == 3 and 'rel="next"' not in (pages[-1].headers.get("link") or "")


async def test_commits_through_the_apps_rest_facade(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR, commits=[("a" * 40, "first"), "second"], title="T")
    got = await api(fake).commits(10)
    assert got[0] == ("a" * 40, "first") and got[1][1] == "second" and len(got[1][0]) == 40
    assert fake.calls_to("GET", rf"/repos/{OWNER}/{REPO}/pulls/{PR}/commits")[0].query == "per_page=10"


def test_requested_reviewers_and_refused_teams(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR, author="alice", requested_reviewers=["carol"])
    state.refuse_team_requests("ghosts")
    pull = client(fake).get_repo(f"{OWNER}/{REPO}").get_pull(PR)

    pull.create_review_request(reviewers=["bob", "carol"], team_reviewers=["core"])
    users, teams = pull.get_review_requests()
    assert [u.login for u in users] == ["carol", "bob"] and [t.slug for t in teams] == ["core"]
    with pytest.raises(GithubException) as refused:
        pull.create_review_request(team_reviewers=["ghosts"])
    assert refused.value.status == 422 and "not a collaborator" in refused.value.data["message"]
    with pytest.raises(GithubException) as author:
        pull.create_review_request(reviewers=["Alice"])
    assert author.value.status == 422
    assert [(r["reviewers"], r["team_reviewers"], r["status"]) for r in state.review_requests] == [
        (["bob", "carol"], ["core"], 201),
        ([], ["ghosts"], 422),
        (["Alice"], [], 422),
    ]
    assert state.requested_teams(OWNER, REPO, PR) == ["core"]


def test_requested_teams_through_the_apps_helper(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR, requested_teams=["core"])
    teams = api(fake).requested_teams()
    teams.request_team("docs")
    assert [t.slug for t in teams.list_requested_teams()] == ["core", "docs"]
    state.refuse_team_requests("secret")
    with pytest.raises(GitHubApiError) as refused:
        teams.request_team("secret")
    assert refused.value.status == 422


def test_single_review_comment_get_and_delete(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    comment = state.add_review_comment(OWNER, REPO, PR, "nit", path="a.py", line=3)
    other = state.add_review_comment(OWNER, REPO, PR, "keep")
    pull = client(fake).get_repo(f"{OWNER}/{REPO}").get_pull(PR)

    fetched = pull.get_review_comment(comment["id"])
    assert (fetched.body, fetched.path, fetched.line, fetched.user.login) == ("nit", "a.py", 3, "kodiai[bot]")
    fetched.delete()
    assert [c["id"] for c in state.review_comments(OWNER, REPO, PR)] == [other["id"]]
    assert fake.calls_to("DELETE", rf"/repos/{OWNER}/{REPO}/pulls/comments/{comment['id']}")[0].status == 204
    with pytest.raises(GithubException) as gone:
        pull.get_review_comment(comment["id"])
    assert gone.value.status == 404


async def test_delete_unknown_review_comment_is_404(fake: FakeGitHub, state: PrState) -> None:
    with pytest.raises(GitHubApiError) as missing:
        await api(fake).delete_review_comment(999_999)
    assert missing.value.status == 404


def test_single_issue_comment(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    comment = state.add_issue_comment(OWNER, REPO, PR, "summary")
    issue = client(fake).get_repo(f"{OWNER}/{REPO}").get_issue(PR)
    assert issue.pull_request is not None and issue.title == "Update code"
    assert issue.get_comment(comment["id"]).body == "summary"
    with pytest.raises(GithubException) as missing:
        issue.get_comment(comment["id"] + 12345)
    assert missing.value.status == 404


def test_issue_reactions_persist_and_are_idempotent(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    human = state.add_issue_reaction(OWNER, REPO, PR, "+1", login="bob")
    issue = client(fake).get_repo(f"{OWNER}/{REPO}").get_issue(PR)

    eyes = issue.create_reaction("eyes")
    again = issue.create_reaction("eyes")  # GitHub: 200 with the existing reaction
    assert eyes.id == again.id and eyes.user.login == "kodiai[bot]"
    assert [r.status for r in fake.calls_to("POST", rf"/repos/{OWNER}/{REPO}/issues/{PR}/reactions")] == [
        201,
        200,
    ]
    assert [(r.content, r.user.login) for r in issue.get_reactions()] == [
        ("+1", "bob"),
        ("eyes", "kodiai[bot]"),
    ]
    assert human["id"] != eyes.id
    with pytest.raises(GithubException) as invalid:
        issue.create_reaction("thumbsup")
    assert invalid.value.status == 422


async def test_issue_reaction_through_the_apps_facade(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    await api(fake).add_reaction("eyes")
    [reaction] = state.issue_reactions(OWNER, REPO, PR)
    assert (reaction["content"], reaction["user"]["type"]) == ("eyes", "Bot")


def test_review_comment_reactions(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    comment = state.add_review_comment(OWNER, REPO, PR, "finding", path="a.py", line=1)
    state.add_comment_reaction(OWNER, REPO, comment["id"], "-1", login="carol")
    fetched = client(fake).get_repo(f"{OWNER}/{REPO}").get_pull(PR).get_review_comment(comment["id"])

    fetched.create_reaction("heart")
    reactions = list(fetched.get_reactions())
    assert [(r.content, r.user.login, r.user.type) for r in reactions] == [
        ("-1", "carol", "User"),
        ("heart", "kodiai[bot]", "Bot"),
    ]
    assert all(r.id and r.created_at for r in reactions)
    minus = httpx.get(
        f"{fake.url}/repos/{OWNER}/{REPO}/pulls/comments/{comment['id']}/reactions",
        params={"content": "-1"},
        headers={"Authorization": f"token {client(fake).requester.auth.token}"},  # type: ignore[union-attr]
    ).json()
    assert [r["user"]["login"] for r in minus] == ["carol"]
    fetched.delete()
    assert state.comment_reactions(OWNER, REPO, comment["id"]) == []


def test_reactions_on_unknown_review_comment_are_404(fake: FakeGitHub, state: PrState) -> None:
    token = client(fake).requester.auth.token  # type: ignore[union-attr]
    url = f"{fake.url}/repos/{OWNER}/{REPO}/pulls/comments/424242/reactions"
    headers = {"Authorization": f"token {token}"}
    assert httpx.get(url, headers=headers).status_code == 404
    assert httpx.post(url, headers=headers, json={"content": "eyes"}).status_code == 404


async def test_search_issues_counts_per_author(fake: FakeGitHub, state: PrState) -> None:
    state.set_search_count("Alice", 7)
    pulls = api(fake)
    assert await pulls.merged_pr_count(OWNER, REPO, "alice") == 7
    assert await pulls.merged_pr_count(OWNER, REPO, "newcomer") == 0
    assert state.searches == [
        f"repo:{OWNER}/{REPO} type:pr author:alice is:merged",
        f"repo:{OWNER}/{REPO} type:pr author:newcomer is:merged",
    ]
    assert client(fake).search_issues("author:alice is:merged").totalCount == 7


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/{PR}/commits"),
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/{PR}/files"),
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/{PR}/requested_reviewers"),
        ("POST", f"/repos/{OWNER}/{REPO}/pulls/{PR}/requested_reviewers"),
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/comments/1"),
        ("DELETE", f"/repos/{OWNER}/{REPO}/pulls/comments/1"),
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/comments/1/reactions"),
        ("POST", f"/repos/{OWNER}/{REPO}/pulls/comments/1/reactions"),
        ("GET", f"/repos/{OWNER}/{REPO}/issues/{PR}/reactions"),
        ("POST", f"/repos/{OWNER}/{REPO}/issues/{PR}/reactions"),
        ("GET", f"/repos/{OWNER}/{REPO}/issues/comments/1"),
        ("GET", f"/repos/{OWNER}/{REPO}/issues/{PR}"),
        ("GET", "/search/issues?q=author:x"),
    ],
)
def test_every_new_route_needs_an_installation_token(
    fake: FakeGitHub, state: PrState, method: str, path: str
) -> None:
    state.add_pull(OWNER, REPO, PR)
    response = httpx.request(method, fake.url + path, headers={"Authorization": "token ghs_unknown"}, json={})
    assert response.status_code == 401


def test_ids_are_unique_across_kinds(fake: FakeGitHub, state: PrState) -> None:
    state.add_pull(OWNER, REPO, PR)
    ids = [
        state.add_issue_comment(OWNER, REPO, PR, "a")["id"],
        state.add_review_comment(OWNER, REPO, PR, "b")["id"],
        state.add_issue_reaction(OWNER, REPO, PR, "eyes")["id"],
    ]
    assert len(set(ids)) == 3


def test_pull_request_payload_matches_the_fixture_shape_and_the_rest_state(
    fake: FakeGitHub, state: PrState
) -> None:
    pull = state.add_pull(
        OWNER, REPO, PR, title="Add feature", author="alice", head_sha="c" * 40, labels=["x"]
    )
    payload = pull_request_payload("opened", pull, installation_id=INSTALLATION)

    fixture = json.loads((FIXTURES / "pull_request.opened.with-organization.payload.json").read_text())
    assert set(fixture) == set(payload)
    assert set(fixture["pull_request"]) - {"_links"} <= set(payload["pull_request"])
    assert set(fixture["repository"]["owner"]) <= set(payload["repository"]["owner"]) | {
        "followers_url",
        "following_url",
        "gists_url",
        "starred_url",
        "subscriptions_url",
        "organizations_url",
        "repos_url",
        "events_url",
        "received_events_url",
        "user_view_type",
    }
    event = parse_payload("pull_request", payload)
    assert isinstance(event, PullRequestEvent)
    assert (event.number, event.pull_request.head.sha, event.pull_request.title) == (
        PR,
        "c" * 40,
        "Add feature",
    )
    assert event.installation is not None and event.installation.id == INSTALLATION
    assert event.sender is not None and event.sender.login == "alice"
    assert not any(key.startswith("_") for key in payload["pull_request"])
    rest = client(fake).get_repo(f"{OWNER}/{REPO}").get_pull(PR)
    assert (rest.head.sha, rest.title, rest.user.login) == ("c" * 40, "Add feature", "alice")

    synchronize = pull_request_payload(
        "synchronize", pull, installation_id=1, before="0" * 40, after="c" * 40
    )
    assert synchronize["before"] == "0" * 40 and "organization" in synchronize
    with pytest.raises(ValueError, match="not a pull_request action"):
        pull_request_payload("created", pull)
