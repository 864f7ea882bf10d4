"""Pull-request endpoints for the fake GitHub server (issue comments, reviews, review comments, CI).

Register with ``install_pr_routes(fake)`` (or ``fake.register(install_pr_routes)``) and seed state with
:class:`PrState`. Every route needs a minted installation token, like the real API. List endpoints
paginate with ``per_page``/``page``; PR review comments honour ``direction=desc`` (issue comments
ignore sort/direction and come back oldest first, as on GitHub).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from support.fake_github import FakeGitHub

DOC = "https://docs.github.com/rest"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _page(items: list[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    per_page = int(request.query_params.get("per_page", "30"))
    page = int(request.query_params.get("page", "1"))
    return items[(page - 1) * per_page : page * per_page]


class PrState:
    """Typed access to the PR part of ``fake.data``."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        fake.data.setdefault("pulls", {})
        fake.data.setdefault("issue_comments", [])
        fake.data.setdefault("review_comments", [])
        fake.data.setdefault("reviews", [])
        fake.data.setdefault("workflow_runs", [])
        fake.data.setdefault("jobs", {})
        fake.data.setdefault("lost_responses", [])

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
        files: list[str] | None = None,
    ) -> dict[str, Any]:
        pull = {
            "number": number,
            "state": "open",
            "head": {"sha": head_sha, "ref": "feature"},
            "base": {"sha": "base000", "ref": "main"},
            "_files": files,
        }
        with self.fake.lock:
            self.fake.data["pulls"][(owner.lower(), repo.lower(), number)] = pull
        return pull

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
        item = {
            "id": cid,
            "created_at": _now(),
            "updated_at": _now(),
            "user": {"login": "kodiai[bot]", "type": "Bot"},
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

    @router.get("/repos/{owner}/{repo}/pulls/{number}")
    async def get_pull(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        return _public(pull_or_404(owner, repo, number))

    @router.get("/repos/{owner}/{repo}/issues/{number}/comments")
    async def list_issue_comments(
        owner: str, repo: str, number: int, request: Request
    ) -> list[dict[str, Any]]:
        fake.require_installation(request)
        return [_public(c) for c in _page(state.issue_comments(owner, repo, number), request)]

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
    async def list_reviews(owner: str, repo: str, number: int, request: Request) -> list[dict[str, Any]]:
        fake.require_installation(request)
        return [_public(r) for r in _page(state.reviews(owner, repo, number), request)]

    @router.post("/repos/{owner}/{repo}/pulls/{number}/reviews")
    async def create_review(owner: str, repo: str, number: int, request: Request) -> dict[str, Any]:
        fake.require_installation(request)
        pull = pull_or_404(owner, repo, number)
        payload = await request.json()
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
        review_state = states.get(payload.get("event") or "", "PENDING")
        created = state._store(
            "reviews",
            owner,
            repo,
            number,
            {"body": payload.get("body", ""), "state": review_state, "commit_id": pull["head"]["sha"]},
        )
        return _deliver(state, request, created)

    @router.get("/repos/{owner}/{repo}/pulls/{number}/comments")
    async def list_review_comments(
        owner: str, repo: str, number: int, request: Request
    ) -> list[dict[str, Any]]:
        fake.require_installation(request)
        items = state.review_comments(owner, repo, number)
        if request.query_params.get("direction") == "desc":
            items = list(reversed(items))
        return [_public(c) for c in _page(items, request)]

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

    @router.get("/repos/{owner}/{repo}/actions/runs")
    async def list_runs(owner: str, repo: str, request: Request) -> dict[str, Any]:
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
        page = _page(runs, request)
        return {"total_count": len(runs), "workflow_runs": [_public(r) for r in page]}

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


def _validation_failed(error: dict[str, Any]) -> Any:
    return JSONResponse(
        {"message": "Validation Failed", "errors": [error], "documentation_url": f"{DOC}/pulls/comments"},
        status_code=422,
    )
