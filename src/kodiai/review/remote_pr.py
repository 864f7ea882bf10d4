"""``kodiai review URL``: a real pull request, fetched, cloned and reviewed from the command line.

The PR is read through the REST API with a token: ``GITHUB_TOKEN`` from the environment, else an
installation token of the configured GitHub App for that repository. The clone is the webhook handler's
(:func:`kodiai.handler_kit.checkout.clone_for_pull_request`: the base repository at the base ref, then
``refs/pull/N/head`` fetched and checked out), with the token handed to git as an ``extraHeader`` in the
environment, never in a URL, argv or ``.git/config``. The review is built by
:func:`kodiai.review.local_branch.build_local_review` from the PR's own facts, and the clone is removed
when the ``async with`` ends.

:func:`post_review` publishes what the model produced (recorded, not posted, during the run): the inline
comments as one PR review with event ``COMMENT``, the summary as an issue comment.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github import Auth, Github, GithubException, GithubIntegration
from kodiai.execution.local_rest import RecordingGitHub
from kodiai.github.app_auth import GitHubApp, GitHubAppError
from kodiai.github.models import PullRequest
from kodiai.github.pulls import PullRequestApi
from kodiai.github.rest import GitHubApiError, GitHubRest
from kodiai.github.workspace import GitCommandError, WorkspaceManager, git_base_url_for, scrub
from kodiai.handler_kit.checkout import clone_for_pull_request
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.log import stderr_logger
from kodiai.review.local_branch import LocalReview, LocalReviewError, PullContext, build_local_review
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.pull_url import PullRef, PullUrlError, check_api_matches, parse_pull_url
from kodiai.settings import Settings

CLONE_DEPTH = 50  # the handler's
PR_BRANCH = "pr-review"
TOKEN_VARIABLE = "GITHUB_TOKEN"


class RemoteReviewError(Exception):
    """The PR cannot be reviewed: bad URL, no credentials, not found, clone failure. Already redacted."""


@dataclass(frozen=True)
class Credentials:
    """A token for one repository and where it came from (for messages; the token is never shown)."""

    token: str
    source: str


@dataclass(frozen=True)
class OpenedPull:
    """A PR ready to run: its built review, the checkout and an authenticated API client."""

    ref: PullRef
    review: LocalReview
    checkout: Path
    rest: GitHubRest
    credentials: Credentials


def _scrubbed(text: str, credentials: Credentials | None) -> str:
    return scrub(text, [credentials.token] if credentials else [])


def resolve_credentials(
    ref: PullRef, settings: Settings, environ: dict[str, str] | None = None
) -> Credentials:
    """``GITHUB_TOKEN``, else the App's installation on the repository; a clear error when neither."""
    env = os.environ if environ is None else environ
    token = (env.get(TOKEN_VARIABLE) or "").strip()
    if token:
        return Credentials(token, TOKEN_VARIABLE)
    key = settings.private_key_pem
    if not (settings.github_app_id or "").strip() or key is None:
        raise RemoteReviewError(
            f"no GitHub credentials to read {ref.full_name}: set {TOKEN_VARIABLE} (a token that can read "
            "the repository; with --post also write pull requests and issues), or configure the GitHub "
            "App (GITHUB_APP_ID and GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_BASE64) installed on it"
        )
    api = settings.github_api_url
    try:
        integration = GithubIntegration(
            auth=Auth.AppAuth(settings.github_app_id or "", key.get_secret_value()), base_url=api
        )
        installation = integration.get_repo_installation(ref.owner, ref.repo)
    except GithubException as exc:
        if exc.status == 404:
            raise RemoteReviewError(
                f"the GitHub App (id {settings.github_app_id}) is not installed on {ref.full_name}: install "
                f"it there, or set {TOKEN_VARIABLE}"
            ) from None
        raise RemoteReviewError(
            f"GitHub App authentication failed against {api} (HTTP {exc.status}): check GITHUB_APP_ID, "
            "GITHUB_PRIVATE_KEY and GITHUB_API_URL, or set " + TOKEN_VARIABLE
        ) from None
    except Exception as exc:
        raise RemoteReviewError(
            scrub(f"cannot reach GitHub at {api}: {type(exc).__name__}: {exc}", [])
        ) from None
    try:
        app = GitHubApp(settings.github_app_id or "", key.get_secret_value(), base_url=api)
        return Credentials(
            app.installation_token(installation.id), f"GitHub App installation {installation.id}"
        )
    except GitHubAppError as exc:
        raise RemoteReviewError(str(exc)) from None


def facts_from_pull(ref: PullRef, pull: PullRequest) -> PullRequestFacts:
    """The review's facts from ``GET /pulls/N`` (the same fields the webhook's payload carries)."""
    base, head = pull.base, pull.head
    return PullRequestFacts(
        owner=ref.owner,
        repo=ref.repo,
        number=ref.number,
        title=pull.title or "",
        body=pull.body,
        author=(pull.user.login if pull.user is not None else None) or "",
        author_association=pull.author_association or "NONE",
        base_ref=(base.ref if base is not None else None) or "",
        base_sha=(base.sha if base is not None else None) or "",
        head_ref=(head.ref if head is not None else None) or "",
        head_sha=(head.sha if head is not None else None) or "",
        labels=tuple(str(label.name) for label in pull.labels),
        additions=pull.additions or 0,
        deletions=pull.deletions or 0,
        commit_count=pull.commits,
    )


async def fetch_pull(rest: GitHubRest, ref: PullRef, credentials: Credentials) -> PullRequest:
    try:
        pull = await rest.get(f"/pulls/{ref.number}")
    except GitHubApiError as exc:
        if exc.status == 404:
            raise RemoteReviewError(
                f"pull request {ref.full_name}#{ref.number} not found (or {credentials.source} cannot see "
                "the repository): check the URL and the token's access"
            ) from None
        if exc.status == 401:
            raise RemoteReviewError(
                f"GitHub rejected the credentials from {credentials.source} (HTTP 401): check the token"
            ) from None
        raise RemoteReviewError(
            _scrubbed(f"fetching {ref.html_url} failed (HTTP {exc.status}): {exc}", credentials)
        ) from None
    except Exception as exc:
        raise RemoteReviewError(
            _scrubbed(
                f"cannot reach GitHub to fetch {ref.html_url}: {type(exc).__name__}: {exc}", credentials
            )
        ) from None
    if not isinstance(pull, dict):
        raise RemoteReviewError(f"unexpected answer for {ref.html_url}")
    return PullRequest.model_validate(pull)


@asynccontextmanager
async def open_pull(
    url: str,
    settings: Settings,
    *,
    memory_uri: str | None,
    embedder_factory: Callable[[], EmbeddingProvider],
    environ: dict[str, str] | None = None,
) -> AsyncIterator[OpenedPull]:
    """Parse ``url``, fetch the PR, clone it and build its review; the clone is removed on exit."""
    try:
        ref = parse_pull_url(url)
        check_api_matches(ref, settings.github_api_url)
    except PullUrlError as exc:
        raise RemoteReviewError(str(exc)) from None
    credentials = await asyncio.to_thread(resolve_credentials, ref, settings, environ)
    client = Github(
        auth=Auth.Token(credentials.token), base_url=settings.github_api_url, seconds_between_requests=None
    )
    rest = GitHubRest(client, ref.owner, ref.repo)
    pull = await fetch_pull(rest, ref, credentials)
    facts = facts_from_pull(ref, pull)
    if pull.changed_files == 0:
        raise RemoteReviewError(f"{ref.html_url} changes no file: nothing to review")

    async def token(_installation_id: int) -> str:
        return credentials.token

    manager = WorkspaceManager(
        token, root=Path(settings.workspace_root), git_base_url=git_base_url_for(settings.github_api_url)
    )
    # The manager's progress lines go to stderr at the command's level, like the rest of the command's
    # logging (local.py): never onto stdout, where the prompt or the JSON is printed, and no process-wide
    # logging set-up from a command.
    manager._log = stderr_logger(os.environ.get("LOG_LEVEL") or "warn", repo=ref.full_name)
    try:
        workspace = await clone_for_pull_request(
            manager,
            0,
            owner=ref.owner,
            repo=ref.repo,
            ref=facts.base_ref,
            depth=CLONE_DEPTH,
            base_ref=facts.base_ref,
            pull_head=(ref.number, PR_BRANCH),
        )
    except (GitCommandError, ValueError) as exc:
        raise RemoteReviewError(
            _scrubbed(f"cloning {ref.full_name} (pull/{ref.number}/head) failed: {exc}", credentials)
        ) from None
    try:
        try:
            review = await build_local_review(
                workspace.dir,
                f"origin/{facts.base_ref}",
                "HEAD",
                embedder_factory=embedder_factory,
                memory_uri=memory_uri,
                pull=PullContext(
                    facts=facts,
                    workspace=workspace,
                    commits=PullRequestApi(rest, ref.number).commits,
                    url=ref.html_url,
                ),
            )
        except LocalReviewError as exc:
            raise RemoteReviewError(_scrubbed(str(exc), credentials)) from None
        except GitCommandError as exc:
            raise RemoteReviewError(_scrubbed(f"reading the clone failed: {exc}", credentials)) from None
        yield OpenedPull(ref, review, workspace.dir, rest, credentials)
    finally:
        await asyncio.shield(workspace.cleanup())


def _review_comment(comment: dict[str, Any]) -> dict[str, Any]:
    """A recorded inline comment as an entry of a review's ``comments`` (the endpoint's fields)."""
    keys = ("path", "body", "line", "side", "start_line", "start_side")
    return {k: comment[k] for k in keys if comment.get(k) is not None}


async def post_review(opened: OpenedPull, recorder: RecordingGitHub) -> str:
    """Publish the recorded output on the PR: the inline comments as one ``COMMENT`` review, then each
    summary (issue) comment. Returns a one-line account of what was posted."""
    pr = PullRequestApi(opened.rest, opened.ref.number)
    inline = [_review_comment(c) for c in recorder.review_comments if c.get("in_reply_to_id") is None]
    bodies = [str(r.get("body") or "") for r in recorder.reviews if r.get("body")]
    posted: list[str] = []
    try:
        if inline or bodies:
            review: dict[str, Any] = {
                "commit_id": opened.review.head_sha,
                "event": "COMMENT",
                "body": "\n\n".join(bodies),
                "comments": inline,
            }
            await opened.rest.post(f"/pulls/{opened.ref.number}/reviews", review)
            posted.append(f"a review with {len(inline)} inline comment(s)")
        for comment in recorder.issue_comments:
            await pr.create_issue_comment(str(comment["body"]))
        if recorder.issue_comments:
            posted.append(f"{len(recorder.issue_comments)} comment(s)")
    except GitHubApiError as exc:
        hint = (
            " (the token needs write access to pull requests and issues)" if exc.status in (403, 404) else ""
        )
        done = f" after posting {' and '.join(posted)}" if posted else ""
        raise RemoteReviewError(
            _scrubbed(
                f"posting to {opened.ref.html_url} failed{done}: HTTP {exc.status}: {exc}{hint}",
                opened.credentials,
            )
        ) from None
    if not posted:
        return f"nothing to post on {opened.ref.html_url}: the review produced no comment"
    return f"posted {' and '.join(posted)} on {opened.ref.html_url}"
