"""Realistic GitHub objects for tests: users, repositories, pull requests and ``pull_request`` webhooks.

Why one place: a test that drives a webhook and then lets the app read the same PR over REST needs the
payload and the fake server's state to agree (head sha, refs, author, counts). ``PrState.add_pull``
builds its stored PR with :func:`pull_request_object`; :func:`pull_request_payload` wraps such a PR
in the envelope GitHub delivers (shape of ``shared/fixtures/webhooks/pull_request.opened*.json``)::

    pull = pr_state.add_pull("acme", "widgets", 7, title="Fix", author="alice", head_sha=sha)
    payload = pull_request_payload("opened", pull, installation_id=42)

Every builder is pure (no server needed); ``api_url``/``html_url`` default to github.com's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

API_URL = "https://api.github.com"
HTML_URL = "https://github.com"
PR_ACTIONS = frozenset(
    {
        "opened",
        "reopened",
        "synchronize",
        "edited",
        "closed",
        "ready_for_review",
        "converted_to_draft",
        "labeled",
        "unlabeled",
        "review_requested",
        "review_request_removed",
        "assigned",
        "unassigned",
    }
)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stable_id(*parts: object) -> int:
    """A deterministic positive id for a name (GitHub ids are stable; tests like repeatable payloads)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:8], 16) + 1000


def user_object(
    login: str, *, user_type: str = "User", api_url: str = API_URL, html_url: str = HTML_URL
) -> dict[str, Any]:
    """A user (or ``Bot``/``Organization``) as GitHub embeds it in payloads."""
    uid = stable_id("user", login.lower())
    return {
        "login": login,
        "id": uid,
        "node_id": f"MDQ6VXNlcj{uid}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": f"{api_url}/users/{login}",
        "html_url": f"{html_url}/{login}",
        "type": user_type,
        "site_admin": False,
    }


def repository_object(
    owner: str,
    name: str,
    *,
    owner_type: str = "Organization",
    private: bool = False,
    default_branch: str = "main",
    fork: bool = False,
    api_url: str = API_URL,
    html_url: str = HTML_URL,
) -> dict[str, Any]:
    """A repository as embedded in webhooks and ``head.repo``/``base.repo``."""
    full = f"{owner}/{name}"
    rid = stable_id("repo", full.lower())
    return {
        "id": rid,
        "node_id": f"MDEwOlJlcG9zaXRvcnk{rid}",
        "name": name,
        "full_name": full,
        "private": private,
        "owner": user_object(owner, user_type=owner_type, api_url=api_url, html_url=html_url),
        "html_url": f"{html_url}/{full}",
        "description": None,
        "fork": fork,
        "url": f"{api_url}/repos/{full}",
        "pulls_url": f"{api_url}/repos/{full}/pulls{{/number}}",
        "clone_url": f"{html_url}/{full}.git",
        "git_url": f"git://github.com/{full}.git",
        "ssh_url": f"git@github.com:{full}.git",
        "default_branch": default_branch,
        "visibility": "private" if private else "public",
        "archived": False,
        "disabled": False,
    }


def label_object(name: str, owner: str, repo: str, *, api_url: str = API_URL) -> dict[str, Any]:
    lid = stable_id("label", owner.lower(), repo.lower(), name)
    return {
        "id": lid,
        "node_id": f"MDU6TGFiZWw{lid}",
        "url": f"{api_url}/repos/{owner}/{repo}/labels/{name}",
        "name": name,
        "color": "ededed",
        "default": False,
        "description": None,
    }


def team_object(slug: str, org: str, *, api_url: str = API_URL) -> dict[str, Any]:
    tid = stable_id("team", org.lower(), slug)
    return {
        "id": tid,
        "node_id": f"MDQ6VGVhbT{tid}",
        "slug": slug,
        "name": slug.replace("-", " ").title(),
        "url": f"{api_url}/organizations/{org}/team/{tid}",
        "privacy": "closed",
        "permission": "pull",
    }


def pull_request_object(
    owner: str,
    repo: str,
    number: int,
    *,
    title: str = "Update code",
    body: str | None = "",
    author: str = "octocat",
    author_type: str = "User",
    author_association: str = "CONTRIBUTOR",
    state: str = "open",
    draft: bool = False,
    merged: bool = False,
    head_ref: str = "feature",
    head_sha: str = "abc123def456",
    head_owner: str | None = None,
    head_repo_name: str | None = None,
    base_ref: str = "main",
    base_sha: str = "base000",
    labels: Iterable[str] = (),
    requested_reviewers: Iterable[str] = (),
    requested_teams: Iterable[str] = (),
    additions: int = 0,
    deletions: int = 0,
    commits: int = 1,
    changed_files: int = 0,
    comments: int = 0,
    review_comments: int = 0,
    owner_type: str = "Organization",
    private: bool = False,
    created_at: str | None = None,
    updated_at: str | None = None,
    api_url: str = API_URL,
    html_url: str = HTML_URL,
) -> dict[str, Any]:
    """A pull request as ``GET /repos/{o}/{r}/pulls/{n}`` returns it and webhooks embed it.

    ``head_owner`` other than ``owner`` makes the PR come from a fork (``head.repo.fork`` true).
    """
    full = f"{owner}/{repo}"
    api = f"{api_url}/repos/{full}"
    created = created_at or now_iso()
    fork_owner = head_owner or owner
    head_name = head_repo_name or repo
    is_fork = fork_owner.lower() != owner.lower() or head_name != repo
    kw: dict[str, Any] = {"api_url": api_url, "html_url": html_url}
    base_repo = repository_object(owner, repo, owner_type=owner_type, private=private, **kw)
    head_repo = (
        repository_object(fork_owner, head_name, owner_type="User", private=private, fork=True, **kw)
        if is_fork
        else base_repo
    )
    pid = stable_id("pull", full.lower(), number)
    return {
        "url": f"{api}/pulls/{number}",
        "id": pid,
        "node_id": f"PR_kwDO{pid}",
        "html_url": f"{html_url}/{full}/pull/{number}",
        "diff_url": f"{html_url}/{full}/pull/{number}.diff",
        "patch_url": f"{html_url}/{full}/pull/{number}.patch",
        "issue_url": f"{api}/issues/{number}",
        "number": number,
        "state": state,
        "locked": False,
        "title": title,
        "user": user_object(author, user_type=author_type, **kw),
        "body": body,
        "created_at": created,
        "updated_at": updated_at or created,
        "closed_at": None if state == "open" else created,
        "merged_at": created if merged else None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [user_object(login, **kw) for login in requested_reviewers],
        "requested_teams": [team_object(slug, owner, api_url=api_url) for slug in requested_teams],
        "labels": [label_object(name, owner, repo, api_url=api_url) for name in labels],
        "milestone": None,
        "draft": draft,
        "commits_url": f"{api}/pulls/{number}/commits",
        "review_comments_url": f"{api}/pulls/{number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "statuses_url": f"{api}/statuses/{head_sha}",
        "head": {
            "label": f"{fork_owner}:{head_ref}",
            "ref": head_ref,
            "sha": head_sha,
            "user": user_object(fork_owner, user_type="User" if is_fork else owner_type, **kw),
            "repo": head_repo,
        },
        "base": {
            "label": f"{owner}:{base_ref}",
            "ref": base_ref,
            "sha": base_sha,
            "user": user_object(owner, user_type=owner_type, **kw),
            "repo": base_repo,
        },
        "author_association": author_association,
        "auto_merge": None,
        "active_lock_reason": None,
        "merged": merged,
        "mergeable": None,
        "rebaseable": None,
        "mergeable_state": "unknown",
        "merged_by": None,
        "comments": comments,
        "review_comments": review_comments,
        "maintainer_can_modify": False,
        "commits": commits,
        "additions": additions,
        "deletions": deletions,
        "changed_files": changed_files,
    }


def pull_request_payload(
    action: str,
    pull: Mapping[str, Any],
    *,
    installation_id: int | None = None,
    sender: str | Mapping[str, Any] | None = None,
    repository: Mapping[str, Any] | None = None,
    organization: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ``pull_request`` webhook body for ``pull`` (from :func:`pull_request_object` / ``add_pull``).

    ``repository`` defaults to ``pull["base"]["repo"]``; ``sender`` to the PR author; ``organization``
    is added (as GitHub does) when the owner is an organization unless ``organization=False``.
    ``extra`` adds action-specific keys (``label=...``, ``requested_reviewer=...``, ``before``/``after``
    for ``synchronize``...).
    """
    if action not in PR_ACTIONS:
        raise ValueError(f"not a pull_request action: {action!r}")
    pr = {k: v for k, v in pull.items() if not k.startswith("_")}
    repo = dict(repository or pr["base"]["repo"])
    if isinstance(sender, str):
        sender_obj: Mapping[str, Any] = user_object(sender)
    else:
        sender_obj = sender or pr["user"]
    payload: dict[str, Any] = {
        "action": action,
        "number": pr["number"],
        "pull_request": pr,
        "repository": repo,
    }
    owner = repo["owner"]
    if organization is None:
        organization = owner.get("type") == "Organization"
    if organization:
        payload["organization"] = {
            "login": owner["login"],
            "id": owner["id"],
            "node_id": owner.get("node_id", ""),
            "url": f"{API_URL}/orgs/{owner['login']}",
            "description": None,
        }
    payload["sender"] = dict(sender_obj)
    if installation_id is not None:
        payload["installation"] = {
            "id": installation_id,
            "node_id": f"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{installation_id}",
        }
    payload.update(extra)
    return payload
