"""Pull-request endpoints for the fake GitHub server (comments, reviews, reactions, reviewers, CI, search).

Register with ``install_pr_routes(fake)`` (or ``fake.register(install_pr_routes)``) and seed state with
:class:`PrState`. Every route needs a minted installation token, like the real API. State persists like
GitHub's: comments, reviews, reactions and review requests stay until deleted, and every id comes from
``fake.next_id()`` (unique across kinds). List endpoints paginate with ``per_page`` (capped at 100, as on
GitHub) and ``page`` and send a ``Link`` header (``rel="next"``/``"last"``…) so PyGithub's
``PaginatedList`` walks them; PR review comments honour ``direction=desc`` (issue comments ignore
sort/direction and come back oldest first, as on GitHub).

Endpoints (``{o}/{r}`` = owner/repo):

- ``GET /repos/{o}/{r}/pulls/{n}`` (the PR object of :func:`support.pr_payloads.pull_request_object`)
- ``GET /repos/{o}/{r}/pulls`` (``state=open|closed|all``, default open; ``head=<owner>:<branch>``;
  ``base=<branch>``; newest first, paginated) and ``POST /repos/{o}/{r}/pulls`` (``title``, ``head``
  as ``<branch>`` or ``<owner>:<branch>``, ``base``, ``body``, ``draft``; the next number in the repo,
  authored by the bot; 422 like GitHub for a missing field or an open PR with the same head and base).
  Created PRs are listed by :meth:`PrState.created_pulls`.
- ``GET …/pulls/{n}/commits``, ``GET …/pulls/{n}/files`` (seeded by ``add_pull(commits=, files=)``)
- ``GET|POST …/pulls/{n}/requested_reviewers`` (POST records; teams in ``refuse_team_requests`` and the
  PR's author answer 422 like GitHub)
- ``GET|POST …/pulls/{n}/comments``, ``POST …/pulls/{n}/comments/{id}/replies``,
  ``GET|DELETE …/pulls/comments/{id}``, ``GET|POST …/pulls/comments/{id}/reactions``
- ``GET|POST …/pulls/{n}/reviews`` (a review's ``comments`` become review comments, or a 422 for all)
- ``GET …/collaborators/{user}/permission`` (roles from :meth:`PrState.set_permission`; others read)
- ``GET …/branches/{branch}`` (``protected`` from :meth:`PrState.protect_branch`; others unprotected)
- ``GET …/issues/{n}`` (a PR as an issue), ``GET|POST …/issues/{n}/comments``, ``GET|PATCH …/issues/comments/{id}``, ``GET|POST …/issues/{n}/reactions``
- ``GET|POST …/issues/comments/{id}/reactions`` (the comment need not be seeded: a webhook's triggering
  comment is known to the test only through its payload; see :meth:`PrState.issue_comment_reactions`)
- ``GET …/actions/runs``, ``GET …/actions/runs/{id}/jobs``
- ``GET /search/issues?q=…`` (``total_count`` from ``set_search_count(author, n)``, ``items`` empty)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from support.fake_github import FakeGitHub
from support.pr_payloads import API_URL, pull_request_object, team_object, user_object

#: The reaction contents GitHub accepts (anything else is a 422).
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
MAX_PER_PAGE = 100
FileSpec = str | Mapping[str, Any]
CommitSpec = str | tuple[str, str] | Mapping[str, Any]

DOC = "https://docs.github.com/rest"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _paging(request: Request) -> tuple[int, int]:
    per_page = min(max(int(request.query_params.get("per_page", "30")), 1), MAX_PER_PAGE)
    return per_page, max(int(request.query_params.get("page", "1")), 1)


def _page(items: list[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    per_page, page = _paging(request)
    return items[(page - 1) * per_page : page * per_page]


def _link_header(total: int, request: Request) -> dict[str, str]:
    """GitHub's ``Link`` header (first/prev/next/last) for a list of ``total`` items."""
    per_page, page = _paging(request)
    last = max((total + per_page - 1) // per_page, 1)
    base = str(request.url.replace(query=""))

    def url(number: int) -> str:
        params = {**dict(request.query_params), "per_page": str(per_page), "page": str(number)}
        return f"{base}?{urlencode(params)}"

    links = []
    if page > 1:
        links += [f'<{url(page - 1)}>; rel="prev"', f'<{url(1)}>; rel="first"']
    if page < last:
        links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
    return {"Link": ", ".join(links)} if links else {}


def _paged(items: list[dict[str, Any]], request: Request) -> JSONResponse:
    """One page of ``items`` (private keys stripped) with the ``Link`` header."""
    return JSONResponse(
        [_public(i) for i in _page(items, request)], headers=_link_header(len(items), request)
    )


def _fake_sha(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


_STATE_KEYS: dict[str, type[list[Any]] | type[dict[Any, Any]] | type[set[Any]]] = {
    "pulls": dict,
    "issue_comments": list,
    "review_comments": list,
    "reviews": list,
    "workflow_runs": list,
    "jobs": dict,
    "lost_responses": list,
    "reactions": list,
    "review_requests": list,
    "unrequestable_teams": set,
    "search_counts": dict,
    "searches": list,
    "permissions": dict,
    "protected_branches": set,
}

#: GitHub's legacy ``permission`` value for each repository role (maintain reads as write, triage as read).
_LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


def _file_detail(spec: FileSpec, owner: str, repo: str, head_sha: str) -> dict[str, Any]:
    """A ``GET …/pulls/{n}/files`` entry from a name or a partial dict."""
    detail: dict[str, Any] = {"filename": spec} if isinstance(spec, str) else dict(spec)
    name = detail["filename"]
    detail.setdefault("status", "modified")
    detail.setdefault("additions", 1)
    detail.setdefault("deletions", 0)
    detail.setdefault("changes", detail["additions"] + detail["deletions"])
    detail.setdefault("sha", _fake_sha("blob", name, head_sha))
    detail.setdefault("blob_url", f"https://github.com/{owner}/{repo}/blob/{head_sha}/{name}")
    detail.setdefault("raw_url", f"https://github.com/{owner}/{repo}/raw/{head_sha}/{name}")
    return detail


def _commit_object(
    spec: CommitSpec, index: int, owner: str, repo: str, author: str, api_url: str
) -> dict[str, Any]:
    """A ``GET …/pulls/{n}/commits`` entry from ``(sha, message)``, a message, or a full object."""
    if isinstance(spec, Mapping):
        return dict(spec)
    sha, message = spec if isinstance(spec, tuple) else (_fake_sha("commit", owner, repo, index, spec), spec)
    person = {"name": author, "email": f"{author}@users.noreply.github.com", "date": _now()}
    return {
        "sha": sha,
        "node_id": f"C_kwDO{sha[:12]}",
        "commit": {"message": message, "author": person, "committer": person},
        "url": f"{api_url}/repos/{owner}/{repo}/commits/{sha}",
        "html_url": f"https://github.com/{owner}/{repo}/commit/{sha}",
        "author": user_object(author, api_url=api_url),
        "committer": user_object(author, api_url=api_url),
        "parents": [],
    }


class PrState:
    """Typed access to the PR part of ``fake.data``."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        for key, empty in _STATE_KEYS.items():
            fake.data.setdefault(key, empty())

    def clear(self) -> None:
        """Forget every PR, comment, review, reaction, request, run and setting (module-scoped fakes)."""
        with self.fake.lock:
            for key in _STATE_KEYS:
                self.fake.data[key].clear()

    @property
    def bot_user(self) -> dict[str, Any]:
        """The installation's bot user: the author of everything the app writes."""
        return user_object(f"{self.fake.app_slug}[bot]", user_type="Bot", api_url=self._api_url())

    def _api_url(self) -> str:
        return self.fake.url if self.fake.port else API_URL

    def lose_next_response(self, method: str, path_regex: str, status: int = 502) -> None:
        """Apply the next matching write, then answer ``status`` as if the response was lost."""
        with self.fake.lock:
            self.fake.data["lost_responses"].append((method.upper(), path_regex, status))

    def take_lost_response(self, method: str, path: str) -> int | None:
        with self.fake.lock:
            for i, (m, regex, status) in enumerate(self.fake.data["lost_responses"]):
                if m == method.upper() and re.fullmatch(regex, path):
                    del self.fake.data["lost_responses"][i]
                    return status
        return None

    def add_pull(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        head_sha: str = "abc123def456",
        files: Sequence[FileSpec] | None = None,
        commits: Sequence[CommitSpec] | None = None,
        title: str = "Update code",
        body: str | None = "",
        author: str = "octocat",
        author_type: str = "User",
        author_association: str = "CONTRIBUTOR",
        state: str = "open",
        draft: bool = False,
        head_ref: str = "feature",
        head_owner: str | None = None,
        base_ref: str = "main",
        base_sha: str = "base000",
        labels: Iterable[str] = (),
        additions: int | None = None,
        deletions: int | None = None,
        requested_reviewers: Iterable[str] = (),
        requested_teams: Iterable[str] = (),
        **fields: Any,
    ) -> dict[str, Any]:
        """Register (or replace) a PR; returns the stored object, which the routes serve live.

        ``files``: names or ``{filename, status, additions, deletions, patch}`` dicts; review comments
        on other paths are refused (None accepts any path). ``commits``: ``(sha, message)`` pairs,
        messages, or full commit objects (default: one commit, the head, titled like the PR).
        ``additions``/``deletions`` default to the files' sums; ``fields`` override any other key.
        Build the webhook with ``pull_request_payload(action, pull, installation_id=...)``.
        """
        file_details = [_file_detail(f, owner, repo, head_sha) for f in files or []]
        commit_objects = [
            _commit_object(c, i, owner, repo, author, self._api_url())
            for i, c in enumerate(commits if commits is not None else [(head_sha, title)])
        ]
        pull = pull_request_object(
            owner,
            repo,
            number,
            title=title,
            body=body,
            author=author,
            author_type=author_type,
            author_association=author_association,
            state=state,
            draft=draft,
            head_ref=head_ref,
            head_sha=head_sha,
            head_owner=head_owner,
            base_ref=base_ref,
            base_sha=base_sha,
            labels=labels,
            requested_reviewers=requested_reviewers,
            requested_teams=requested_teams,
            additions=sum(f["additions"] for f in file_details) if additions is None else additions,
            deletions=sum(f["deletions"] for f in file_details) if deletions is None else deletions,
            commits=len(commit_objects),
            changed_files=len(file_details),
            api_url=self._api_url(),
        )
        pull.update(fields)
        pull["_files"] = None if files is None else [f["filename"] for f in file_details]
        pull["_file_details"] = file_details
        pull["_commits"] = commit_objects
        with self.fake.lock:
            self.fake.data["pulls"][(owner.lower(), repo.lower(), number)] = pull
        return pull

    def pull(self, owner: str, repo: str, number: int) -> dict[str, Any] | None:
        with self.fake.lock:
            return self.fake.data["pulls"].get((owner.lower(), repo.lower(), number))

    def pulls(self, owner: str, repo: str) -> list[dict[str, Any]]:
        """Every PR of the repository, by number."""
        key = (owner.lower(), repo.lower())
        with self.fake.lock:
            found = [p for (o, r, _n), p in self.fake.data["pulls"].items() if (o, r) == key]
        return sorted(found, key=lambda p: p["number"])

    def created_pulls(self, owner: str, repo: str) -> list[dict[str, Any]]:
        """The PRs opened through ``POST /repos/{o}/{r}/pulls`` (e.g. the app's bot PRs), in order."""
        return [p for p in self.pulls(owner, repo) if p.get("_created")]

    def next_pull_number(self, owner: str, repo: str) -> int:
        """The number GitHub would give the next PR of the repo (one past the highest known)."""
        return max((p["number"] for p in self.pulls(owner, repo)), default=0) + 1

    # ------------------------------------------------------------------ review requests
    def refuse_team_requests(self, *slugs: str) -> None:
        """Requests for these team slugs answer 422, as GitHub does for a team without repo access."""
        with self.fake.lock:
            self.fake.data["unrequestable_teams"].update(slugs)

    def requested_reviewers(self, owner: str, repo: str, number: int) -> list[str]:
        pull = self.pull(owner, repo, number) or {}
        return [u["login"] for u in pull.get("requested_reviewers", [])]

    def requested_teams(self, owner: str, repo: str, number: int) -> list[str]:
        pull = self.pull(owner, repo, number) or {}
        return [t["slug"] for t in pull.get("requested_teams", [])]

    @property
    def review_requests(self) -> list[dict[str, Any]]:
        """Every ``POST …/requested_reviewers`` as ``{repo, number, reviewers, team_reviewers, status}``."""
        with self.fake.lock:
            return list(self.fake.data["review_requests"])

    # ------------------------------------------------------------------ search
    def set_search_count(self, author: str, count: int) -> None:
        """``GET /search/issues`` with ``author:<login>`` in ``q`` reports ``total_count = count``."""
        with self.fake.lock:
            self.fake.data["search_counts"][author.lower()] = count

    @property
    def searches(self) -> list[str]:
        """The ``q`` of every search, in order."""
        with self.fake.lock:
            return list(self.fake.data["searches"])

    # ------------------------------------------------------------------ reactions
    def add_issue_reaction(
        self,
        owner: str,
        repo: str,
        number: int,
        content: str,
        *,
        login: str = "alice",
        user_type: str = "User",
    ) -> dict[str, Any]:
        """A reaction by someone else (a human by default) on the PR/issue itself."""
        return self._react(owner, repo, ("issue", number), content, user_object(login, user_type=user_type))

    def add_comment_reaction(
        self,
        owner: str,
        repo: str,
        comment_id: int,
        content: str,
        *,
        login: str = "alice",
        user_type: str = "User",
    ) -> dict[str, Any]:
        """A reaction by someone else (a human by default) on a PR review comment."""
        user = user_object(login, user_type=user_type)
        return self._react(owner, repo, ("review_comment", comment_id), content, user)

    def remove_reaction(self, reaction_id: int) -> None:
        """A reactor withdrew a reaction (GitHub deletes it)."""
        with self.fake.lock:
            self.fake.data["reactions"][:] = [
                r for r in self.fake.data["reactions"] if r["id"] != reaction_id
            ]

    def protect_branch(self, owner: str, repo: str, branch: str) -> None:
        """``GET …/branches/{branch}`` answers ``protected: true`` for it (every other branch: false)."""
        with self.fake.lock:
            self.fake.data["protected_branches"].add((owner.lower(), repo.lower(), branch))

    def set_permission(self, owner: str, repo: str, login: str, role: str) -> None:
        """``login``'s role on the repo (admin, maintain, write, triage, read); unknown users read."""
        with self.fake.lock:
            self.fake.data["permissions"][(f"{owner}/{repo}".lower(), login.lower())] = role

    def issue_reactions(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        return self._reactions(owner, repo, ("issue", number))

    def comment_reactions(self, owner: str, repo: str, comment_id: int) -> list[dict[str, Any]]:
        return self._reactions(owner, repo, ("review_comment", comment_id))

    def issue_comment_reactions(
        self, owner: str, repo: str, comment_id: int | None = None
    ) -> list[dict[str, Any]]:
        """Reactions on issue comments: on ``comment_id``, or on any issue comment of the repo (in order)."""
        if comment_id is not None:
            return self._reactions(owner, repo, ("issue_comment", comment_id))
        key = f"{owner}/{repo}".lower()
        with self.fake.lock:
            return [
                r
                for r in self.fake.data["reactions"]
                if r["_repo"] == key and r["_target"][0] == "issue_comment"
            ]

    def _reactions(self, owner: str, repo: str, target: tuple[str, int]) -> list[dict[str, Any]]:
        key = f"{owner}/{repo}".lower()
        with self.fake.lock:
            return [r for r in self.fake.data["reactions"] if r["_repo"] == key and r["_target"] == target]

    def _react(
        self, owner: str, repo: str, target: tuple[str, int], content: str, user: dict[str, Any]
    ) -> dict[str, Any]:
        rid = self.fake.next_id()
        reaction = {
            "id": rid,
            "node_id": f"REA_lATO{rid}",
            "user": user,
            "content": content,
            "created_at": _now(),
            "_repo": f"{owner}/{repo}".lower(),
            "_target": target,
        }
        with self.fake.lock:
            self.fake.data["reactions"].append(reaction)
        return reaction

    # ------------------------------------------------------------------ single items
    def issue_comment(self, owner: str, repo: str, comment_id: int) -> dict[str, Any] | None:
        return self._find("issue_comments", owner, repo, comment_id)

    def review_comment(self, owner: str, repo: str, comment_id: int) -> dict[str, Any] | None:
        return self._find("review_comments", owner, repo, comment_id)

    def _find(self, kind: str, owner: str, repo: str, item_id: int) -> dict[str, Any] | None:
        key = f"{owner}/{repo}".lower()
        with self.fake.lock:
            return next((c for c in self.fake.data[kind] if c["id"] == item_id and c["_repo"] == key), None)

    def add_workflow_run(self, owner: str, repo: str, **run: Any) -> dict[str, Any]:
        entry = {"id": self.fake.next_id(), "created_at": _now(), "_repo": f"{owner}/{repo}".lower(), **run}
        entry.setdefault("html_url", f"https://github.com/{owner}/{repo}/actions/runs/{entry['id']}")
        with self.fake.lock:
            self.fake.data["workflow_runs"].append(entry)
        return entry

    def add_jobs(self, run_id: int, jobs: list[dict[str, Any]]) -> None:
        with self.fake.lock:
            self.fake.data["jobs"][run_id] = jobs

    def _of(self, kind: str, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        key = f"{owner}/{repo}".lower()
        with self.fake.lock:
            return [c for c in self.fake.data[kind] if c["_repo"] == key and c["_number"] == number]

    def issue_comments(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        return self._of("issue_comments", owner, repo, number)

    def review_comments(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        return self._of("review_comments", owner, repo, number)

    def reviews(self, owner: str, repo: str, number: int) -> list[dict[str, Any]]:
        return self._of("reviews", owner, repo, number)

    def add_issue_comment(self, owner: str, repo: str, number: int, body: str) -> dict[str, Any]:
        return self._store("issue_comments", owner, repo, number, {"body": body})

    def add_review_comment(
        self, owner: str, repo: str, number: int, body: str, **extra: Any
    ) -> dict[str, Any]:
        return self._store("review_comments", owner, repo, number, {"body": body, **extra})

    def _store(self, kind: str, owner: str, repo: str, number: int, fields: dict[str, Any]) -> dict[str, Any]:
        cid = self.fake.next_id()
        api = f"{self._api_url()}/repos/{owner}/{repo}"
        urls = {
            "issue_comments": {"url": f"{api}/issues/comments/{cid}", "issue_url": f"{api}/issues/{number}"},
            "review_comments": {
                "url": f"{api}/pulls/comments/{cid}",
                "pull_request_url": f"{api}/pulls/{number}",
            },
            "reviews": {
                "url": f"{api}/pulls/{number}/reviews/{cid}",
                "pull_request_url": f"{api}/pulls/{number}",
            },
        }
        item = {
            "id": cid,
            "created_at": _now(),
            "updated_at": _now(),
            "user": self.bot_user,
            **urls.get(kind, {}),
            "html_url": f"https://github.com/{owner}/{repo}/pull/{number}#{kind}-{cid}",
            "_repo": f"{owner}/{repo}".lower(),
            "_number": number,
            **fields,
        }
        with self.fake.lock:
            self.fake.data[kind].append(item)
        return item


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not k.startswith("_")}


def install_pr_routes(fake: FakeGitHub) -> PrState:
    """Register the routes on ``fake`` and return the state helper."""
    state = PrState(fake)
    router = APIRouter()

    def pull_or_404(owner: str, repo: str, number: int) -> dict[str, Any]:
        with fake.lock:
            pull = fake.data["pulls"].get((owner.lower(), repo.lower(), number))
        if pull is None:
            raise HTTPException(404, detail="Not Found")
        return pull

    @router.get("/repos/{owner}/{repo}/pulls")
    async def list_pulls(owner: str, repo: str, request: Request) -> Response:
        fake.require_installation(request)
        wanted = request.query_params.get("state", "open")
        head = request.query_params.get("head")
        base = request.query_params.get("base")
        pulls = [
            p
            for p in reversed(state.pulls(owner, repo))
            if (wanted == "all" or p["state"] == wanted)
            and (head is None or p["head"]["label"].lower() == head.lower())
            and (base is None or p["base"]["ref"] == base)
        ]
        return _paged(pulls, request)

    @router.post("/repos/{owner}/{repo}/pulls", status_code=201)
    async def create_pull(owner: str, repo: str, request: Request) -> Any:
        fake.require_installation(request)
        payload = await request.json()
        for required in ("head", "base", "title"):
            if not isinstance(payload.get(required), str) or not payload[required]:
                return _unprocessable("Validation Failed", "pulls/pulls#create-a-pull-request")
        head_owner, _, head_ref = payload["head"].rpartition(":")
        head_owner = head_owner or owner
        label = f"{head_owner}:{head_ref}".lower()
        with fake.lock:
            if any(
                p["state"] == "open"
                and p["head"]["label"].lower() == label
                and p["base"]["ref"] == payload["base"]
                for p in state.pulls(owner, repo)
            ):
                return _unprocessable(
                    f"A pull request already exists for {head_owner}:{head_ref}.",
                    "pulls/pulls#create-a-pull-request",
                )
            number = state.next_pull_number(owner, repo)
            bot = state.bot_user
            pull = state.add_pull(
                owner,
                repo,
                number,
                head_sha=_fake_sha("head", owner, repo, head_owner, head_ref),
                title=payload["title"],
                body=payload.get("body"),
                author=bot["login"],
                author_type="Bot",
                author_association="NONE",
                draft=bool(payload.get("draft", False)),
                head_ref=head_ref,
                head_owner=head_owner,
                base_ref=payload["base"],
                _created=True,
            )
        return JSONResponse(_public(pull), status_code=201)

    @router.get("/repos/{owner}/{repo}/pulls/{number}")
    async def get_pull(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        return _public(pull_or_404(owner, repo, number))

    @router.get("/repos/{owner}/{repo}/issues/{number}")
    async def get_issue(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        """A PR seen as an issue (what PyGithub's ``get_issue``/``as_issue`` read before reacting)."""
        fake.require_installation(request)
        pull = _public(pull_or_404(owner, repo, number))
        keys = (
            "id",
            "node_id",
            "number",
            "title",
            "user",
            "labels",
            "state",
            "locked",
            "assignee",
            "assignees",
        )
        issue = {k: pull[k] for k in keys if k in pull}
        issue.update(
            url=pull["issue_url"],
            html_url=pull["html_url"],
            comments_url=pull["comments_url"],
            body=pull.get("body"),
            comments=len(state.issue_comments(owner, repo, number)),
            created_at=pull.get("created_at"),
            updated_at=pull.get("updated_at"),
            closed_at=pull.get("closed_at"),
            author_association=pull.get("author_association"),
            pull_request={"url": pull["url"], "html_url": pull["html_url"], "diff_url": pull["diff_url"]},
        )
        return issue

    @router.get("/repos/{owner}/{repo}/issues/{number}/comments")
    async def list_issue_comments(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return _paged(state.issue_comments(owner, repo, number), request)

    @router.post("/repos/{owner}/{repo}/issues/{number}/comments", status_code=201)
    async def create_issue_comment(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        payload = await request.json()
        if not isinstance(payload.get("body"), str):
            raise HTTPException(422, detail="Validation Failed")
        return _deliver(state, request, state.add_issue_comment(owner, repo, number, payload["body"]))

    @router.patch("/repos/{owner}/{repo}/issues/comments/{comment_id}")
    async def update_issue_comment(
        owner: str, repo: str, comment_id: int, request: Request
    ) -> dict[str, Any]:
        fake.require_installation(request)
        payload = await request.json()
        with fake.lock:
            for c in fake.data["issue_comments"]:
                if c["id"] == comment_id and c["_repo"] == f"{owner}/{repo}".lower():
                    c["body"] = payload["body"]
                    c["updated_at"] = _now()
                    return _public(c)
        raise HTTPException(404, detail="Not Found")

    @router.get("/repos/{owner}/{repo}/pulls/{number}/reviews")
    async def list_reviews(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return _paged(state.reviews(owner, repo, number), request)

    @router.post("/repos/{owner}/{repo}/pulls/{number}/reviews")
    async def create_review(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        pull = pull_or_404(owner, repo, number)
        payload = await request.json()
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
        review_state = states.get(payload.get("event") or "", "PENDING")
        # A review may carry its inline comments (``comments``); like GitHub, one invalid comment fails the
        # whole review with a 422 and nothing is created.
        comments = payload.get("comments") or []
        files = pull.get("_files")
        for comment in comments:
            if not comment.get("line") or (files is not None and comment.get("path") not in files):
                return _validation_failed({"resource": "PullRequestReviewComment", "code": "invalid"})
        created = state._store(
            "reviews",
            owner,
            repo,
            number,
            {"body": payload.get("body", ""), "state": review_state, "commit_id": pull["head"]["sha"]},
        )
        for comment in comments:
            fields = {k: comment.get(k) for k in ("path", "line", "side", "start_line", "start_side")}
            state.add_review_comment(
                owner,
                repo,
                number,
                comment["body"],
                **fields,
                commit_id=pull["head"]["sha"],
                original_line=comment.get("line"),
                pull_request_review_id=created["id"],
            )
        return _deliver(state, request, created)

    @router.get("/repos/{owner}/{repo}/pulls/{number}/comments")
    async def list_review_comments(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        items = state.review_comments(owner, repo, number)
        if request.query_params.get("direction") == "desc":
            items = list(reversed(items))
        return _paged(items, request)

    @router.post("/repos/{owner}/{repo}/pulls/{number}/comments", status_code=201)
    async def create_review_comment(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        pull = pull_or_404(owner, repo, number)
        payload = await request.json()
        files = pull.get("_files")
        if payload.get("commit_id") != pull["head"]["sha"] or (
            files is not None and payload.get("path") not in files
        ):
            error = {"resource": "PullRequestReviewComment", "code": "invalid", "field": "path"}
            return _validation_failed(error)
        if not payload.get("line"):
            return _validation_failed(
                {"resource": "PullRequestReviewComment", "code": "missing_field", "field": "line"}
            )
        fields = {
            k: payload.get(k) for k in ("path", "line", "side", "start_line", "start_side", "commit_id")
        }
        fields["original_line"] = payload.get("line")
        return _deliver(
            state, request, state.add_review_comment(owner, repo, number, payload["body"], **fields)
        )

    @router.post("/repos/{owner}/{repo}/pulls/{number}/comments/{comment_id}/replies", status_code=201)
    async def reply(owner: str, repo: str, number: int, comment_id: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        pull_or_404(owner, repo, number)
        parent = next((c for c in state.review_comments(owner, repo, number) if c["id"] == comment_id), None)
        if parent is None:
            raise HTTPException(404, detail="Not Found")
        payload = await request.json()
        return _public(
            state.add_review_comment(
                owner,
                repo,
                number,
                payload["body"],
                in_reply_to_id=comment_id,
                path=parent.get("path"),
                line=parent.get("line"),
            )
        )

    # ------------------------------------------------------------------ PR commits, files, reviewers
    @router.get("/repos/{owner}/{repo}/pulls/{number}/commits")
    async def list_commits(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return _paged(pull_or_404(owner, repo, number)["_commits"], request)

    @router.get("/repos/{owner}/{repo}/pulls/{number}/files")
    async def list_files(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return _paged(pull_or_404(owner, repo, number)["_file_details"], request)

    @router.get("/repos/{owner}/{repo}/pulls/{number}/requested_reviewers")
    async def get_requested(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        pull = pull_or_404(owner, repo, number)
        with fake.lock:
            return {"users": list(pull["requested_reviewers"]), "teams": list(pull["requested_teams"])}

    @router.post("/repos/{owner}/{repo}/pulls/{number}/requested_reviewers", status_code=201)
    async def request_reviewers(owner: str, repo: str, number: int, request: Request) -> Any:
        fake.require_installation(request)
        pull = pull_or_404(owner, repo, number)
        payload = await request.json()
        reviewers = [str(r) for r in payload.get("reviewers") or []]
        teams = [str(t) for t in payload.get("team_reviewers") or []]
        entry: dict[str, Any] = {
            "repo": f"{owner}/{repo}".lower(),
            "number": number,
            "reviewers": reviewers,
            "team_reviewers": teams,
        }
        with fake.lock:
            refused = sorted(set(teams) & fake.data["unrequestable_teams"])
            author = pull["user"]["login"].lower()
            if refused:
                entry["status"] = 422
                fake.data["review_requests"].append(entry)
                return _unprocessable(
                    "Reviews may only be requested from collaborators. One or more of the teams you "
                    f"specified is not a collaborator of the {owner}/{repo} repository.",
                    "pulls/review-requests",
                )
            if any(r.lower() == author for r in reviewers):
                entry["status"] = 422
                fake.data["review_requests"].append(entry)
                return _unprocessable(
                    "Review cannot be requested from pull request author.", "pulls/review-requests"
                )
            known_users = {u["login"].lower() for u in pull["requested_reviewers"]}
            known_teams = {t["slug"] for t in pull["requested_teams"]}
            api_url = state._api_url()
            pull["requested_reviewers"] += [
                user_object(r, api_url=api_url)
                for r in dict.fromkeys(reviewers)
                if r.lower() not in known_users
            ]
            pull["requested_teams"] += [
                team_object(t, owner, api_url=api_url) for t in dict.fromkeys(teams) if t not in known_teams
            ]
            entry["status"] = 201
            fake.data["review_requests"].append(entry)
            return _public(pull)

    # ------------------------------------------------------------------ single comments
    @router.get("/repos/{owner}/{repo}/pulls/comments/{comment_id}")
    async def get_review_comment(owner: str, repo: str, comment_id: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        return _public(_or_404(state.review_comment(owner, repo, comment_id)))

    @router.delete("/repos/{owner}/{repo}/pulls/comments/{comment_id}", status_code=204)
    async def delete_review_comment(owner: str, repo: str, comment_id: int, request: Request) -> Response:
        fake.require_installation(request)
        with fake.lock:
            comment = _or_404(state.review_comment(owner, repo, comment_id))
            fake.data["review_comments"].remove(comment)
            fake.data["reactions"][:] = [
                r
                for r in fake.data["reactions"]
                if not (r["_repo"] == comment["_repo"] and r["_target"] == ("review_comment", comment_id))
            ]
        return Response(status_code=204)

    @router.get("/repos/{owner}/{repo}/issues/comments/{comment_id}")
    async def get_issue_comment(owner: str, repo: str, comment_id: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        return _public(_or_404(state.issue_comment(owner, repo, comment_id)))

    # ------------------------------------------------------------------ reactions
    async def react(request: Request, owner: str, repo: str, target: tuple[str, int]) -> Response:
        payload = await request.json()
        content = payload.get("content") if isinstance(payload, dict) else None
        if content not in REACTIONS:
            return _validation_failed({"resource": "Reaction", "code": "invalid", "field": "content"})
        bot = state.bot_user
        with fake.lock:
            existing = next(
                (
                    r
                    for r in state._reactions(owner, repo, target)
                    if r["content"] == content and r["user"]["login"] == bot["login"]
                ),
                None,
            )
            if existing is not None:  # GitHub answers 200 with the reaction already there
                return JSONResponse(_public(existing), status_code=200)
            created = state._react(owner, repo, target, content, bot)
        return JSONResponse(_public(created), status_code=201)

    @router.post("/repos/{owner}/{repo}/issues/{number}/reactions")
    async def create_issue_reaction(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return await react(request, owner, repo, ("issue", number))

    @router.get("/repos/{owner}/{repo}/issues/{number}/reactions")
    async def list_issue_reactions(owner: str, repo: str, number: int, request: Request) -> Response:
        fake.require_installation(request)
        return _paged(_with_content(state.issue_reactions(owner, repo, number), request), request)

    @router.post("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
    async def create_issue_comment_reaction(
        owner: str, repo: str, comment_id: int, request: Request
    ) -> Response:
        fake.require_installation(request)
        return await react(request, owner, repo, ("issue_comment", comment_id))

    @router.get("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
    async def list_issue_comment_reactions(
        owner: str, repo: str, comment_id: int, request: Request
    ) -> Response:
        fake.require_installation(request)
        reactions = state.issue_comment_reactions(owner, repo, comment_id)
        return _paged(_with_content(reactions, request), request)

    @router.post("/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions")
    async def create_comment_reaction(owner: str, repo: str, comment_id: int, request: Request) -> Response:
        fake.require_installation(request)
        _or_404(state.review_comment(owner, repo, comment_id))
        return await react(request, owner, repo, ("review_comment", comment_id))

    @router.get("/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions")
    async def list_comment_reactions(owner: str, repo: str, comment_id: int, request: Request) -> Response:
        fake.require_installation(request)
        _or_404(state.review_comment(owner, repo, comment_id))
        reactions = state.comment_reactions(owner, repo, comment_id)
        return _paged(_with_content(reactions, request), request)

    # ------------------------------------------------------------------ collaborators
    @router.get("/repos/{owner}/{repo}/collaborators/{username}/permission")
    async def collaborator_permission(
        owner: str, repo: str, username: str, request: Request
    ) -> dict[str, Any]:
        fake.require_installation(request)
        with fake.lock:
            role = fake.data["permissions"].get((f"{owner}/{repo}".lower(), username.lower()), "read")
        return {
            "permission": _LEGACY_PERMISSION[role],
            "role_name": role,
            "user": user_object(username, api_url=state._api_url()),
        }

    # ------------------------------------------------------------------ branches
    @router.get("/repos/{owner}/{repo}/branches/{branch:path}")
    async def get_branch(owner: str, repo: str, branch: str, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        with fake.lock:
            protected = (owner.lower(), repo.lower(), branch) in fake.data["protected_branches"]
        return {"name": branch, "protected": protected, "commit": {"sha": _fake_sha(owner, repo, branch)}}

    # ------------------------------------------------------------------ search
    @router.get("/search/issues")
    async def search_issues(request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        q = request.query_params.get("q", "")
        if not q:
            return _unprocessable("Validation Failed", "search/search#search-issues-and-pull-requests")
        author = re.search(r"(?:^|\s)author:(\S+)", q)
        with fake.lock:
            fake.data["searches"].append(q)
            count = fake.data["search_counts"].get(author.group(1).lower(), 0) if author else 0
        return {"total_count": count, "incomplete_results": False, "items": []}

    @router.get("/repos/{owner}/{repo}/actions/runs")
    async def list_runs(owner: str, repo: str, request: Request) -> Response:
        fake.require_installation(request)
        head_sha = request.query_params.get("head_sha")
        status = request.query_params.get("status")
        with fake.lock:
            runs = [
                r
                for r in fake.data["workflow_runs"]
                if r["_repo"] == f"{owner}/{repo}".lower()
                and (head_sha is None or r.get("head_sha") == head_sha)
                and (status is None or r.get("status") == status or r.get("conclusion") == status)
            ]
        page = [_public(r) for r in _page(runs, request)]
        headers = _link_header(len(runs), request)
        return JSONResponse({"total_count": len(runs), "workflow_runs": page}, headers=headers)

    @router.get("/repos/{owner}/{repo}/actions/runs/{run_id}/jobs")
    async def list_jobs(owner: str, repo: str, run_id: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        with fake.lock:
            jobs = fake.data["jobs"].get(run_id)
        if jobs is None:
            raise HTTPException(404, detail="Not Found")
        return {"total_count": len(jobs), "jobs": jobs}

    fake.register(router)
    return state


def _deliver(state: PrState, request: Request, item: dict[str, Any]) -> Any:
    """The created item, unless a lost response was queued for this write (the write still happened)."""
    status = state.take_lost_response(request.method, request.url.path)
    if status is not None:
        return JSONResponse({"message": "Server Error"}, status_code=status)
    return _public(item)


def _or_404(item: dict[str, Any] | None) -> dict[str, Any]:
    if item is None:
        raise HTTPException(404, detail="Not Found")
    return item


def _with_content(reactions: list[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    """The ``content`` query filter of the reaction list endpoints."""
    content = request.query_params.get("content")
    return [r for r in reactions if content is None or r["content"] == content]


def _unprocessable(message: str, doc: str) -> Any:
    return JSONResponse({"message": message, "documentation_url": f"{DOC}/{doc}"}, status_code=422)


def _validation_failed(error: dict[str, Any]) -> Any:
    return JSONResponse(
        {"message": "Validation Failed", "errors": [error], "documentation_url": f"{DOC}/pulls/comments"},
        status_code=422,
    )
