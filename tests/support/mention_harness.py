"""The mention handler on the review harness's real components.

:class:`MentionHarness` extends :class:`review_harness.ReviewHarness` without changing it: it opens a
:class:`MentionState` on a jobs database file in the test's temp dir, registers the mention handler on
the same router, and builds ``issue_comment`` / ``pull_request_review_comment`` deliveries. The GitHub
routes mentions use beyond the review's (PR listing by ``head=``, PR creation for bot PRs, issue-comment
reactions) are part of :func:`support.fake_github_pr.install_pr_routes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from kodiai.mention.deps import MentionDeps
from kodiai.mention.entry import register as register_mention
from kodiai.mention.state import MentionState
from kodiai.webhook.events import build_event
from kodiai.webhook.router import DispatchOutcome
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.gitrepo import git
from support.review_harness import INSTALLATION, OWNER, REPO, ReviewHarness


class MentionHarness(ReviewHarness):
    """The review harness plus the mention handler and a persisted :class:`MentionState`."""

    def __init__(
        self,
        tmp_path: Path,
        fake: FakeGitHub,
        state: PrState,
        *,
        jobs_db: Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(tmp_path, fake, state, **kwargs)
        self.jobs_db = jobs_db or tmp_path / "jobs.db"
        self.mention_state = MentionState.open(self.jobs_db)
        self.mention_deps = MentionDeps(review=self.deps, state=self.mention_state)
        register_mention(self.router, self.mention_deps)
        self._comment_ids = iter(range(5000, 10_000))

    def close(self) -> None:
        self.mention_state.close()
        super().close()

    # ------------------------------------------------------------------ repository
    def open_pr(self, number: int = 101, **kwargs: Any) -> dict[str, Any]:
        """As the review harness, and same-repo PRs also get ``refs/pull/<n>/head`` (as on GitHub). The
        fake's ``GET pulls/<n>`` names the same author and head branch as the payload."""
        pull = super().open_pr(number, **kwargs)
        branch = kwargs.get("branch", "feature")
        if not kwargs.get("fork"):
            git("push", "-q", "origin", f"{branch}:refs/pull/{number}/head", cwd=self.repo.work)
        self.state.add_pull(
            OWNER,
            REPO,
            number,
            head_sha=pull["head"]["sha"],
            head_ref=branch,
            head_owner="forker" if kwargs.get("fork") else None,
            author=kwargs.get("author", "alice"),
            files=None,
        )
        return pull

    def grant(self, login: str, role: str = "write") -> None:
        """``login``'s role on ``acme/repo`` (everyone else reads)."""
        self.state.set_permission(OWNER, REPO, login, role)

    def bare_log(self, ref: str, count: int = 5) -> list[str]:
        """Commit messages of ``ref`` in the bare repository, newest first."""
        out = git("log", f"-{count}", "--format=%B%x1e", ref, cwd=self.repo.path)
        return [m.strip() for m in out.split("\x1e") if m.strip()]

    def bare_refs(self) -> list[str]:
        return git("for-each-ref", "--format=%(refname)", cwd=self.repo.path).split()

    def bot_pulls(self) -> list[dict[str, Any]]:
        """The PRs the app opened (``POST …/pulls``), in order."""
        return self.state.created_pulls(OWNER, REPO)

    def comment_reactions(self) -> list[dict[str, Any]]:
        """Reactions on issue comments (the trigger of an ``issue_comment`` mention), in order."""
        return self.state.issue_comment_reactions(OWNER, REPO)

    # ------------------------------------------------------------------ deliveries
    def _repository(self) -> dict[str, Any]:
        return {
            "id": 1,
            "name": REPO,
            "full_name": f"{OWNER}/{REPO}",
            "owner": {"login": OWNER, "type": "Organization"},
            "private": False,
            "default_branch": "main",
        }

    def _comment(self, body: str, author: str, comment_id: int | None, **extra: Any) -> dict[str, Any]:
        return {
            "id": comment_id if comment_id is not None else next(self._comment_ids),
            "body": body,
            "user": {"login": author, "type": "Bot" if author.endswith("[bot]") else "User"},
            "created_at": "2030-01-01T00:00:00Z",
            "updated_at": "2030-01-01T00:00:00Z",
            **extra,
        }

    def issue_comment_payload(
        self,
        body: str,
        *,
        number: int = 101,
        on_pr: bool = True,
        author: str = "alice",
        comment_id: int | None = None,
    ) -> dict[str, Any]:
        issue: dict[str, Any] = {"number": number, "title": "Thing", "body": "", "user": {"login": "alice"}}
        if on_pr:
            issue["pull_request"] = {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{number}"}
        return {
            "action": "created",
            "issue": issue,
            "comment": self._comment(body, author, comment_id),
            "repository": self._repository(),
            "installation": {"id": INSTALLATION},
            "sender": {"login": author, "type": "Bot" if author.endswith("[bot]") else "User"},
        }

    def review_comment_payload(
        self,
        pull: dict[str, Any],
        body: str,
        *,
        author: str = "alice",
        comment_id: int | None = None,
        in_reply_to: int | None = None,
        path: str = "src/index.ts",
        line: int = 1,
    ) -> dict[str, Any]:
        extra: dict[str, Any] = {"path": path, "line": line, "diff_hunk": "@@ -1 +1 @@\n-a\n+b"}
        if in_reply_to is not None:
            extra["in_reply_to_id"] = in_reply_to
        return {
            "action": "created",
            "pull_request": pull,
            "comment": self._comment(body, author, comment_id, **extra),
            "repository": self._repository(),
            "installation": {"id": INSTALLATION},
            "sender": {"login": author, "type": "User"},
        }

    async def deliver_event(
        self, event_name: str, payload: dict[str, Any], *, delivery: str | None = None
    ) -> DispatchOutcome:
        event = build_event(delivery or f"mention-{next(self._comment_ids)}", event_name, payload)
        with structlog.testing.capture_logs() as captured:
            outcome = await self.router.dispatch(event)
        self.logs.extend(captured)
        return outcome

    async def mention(self, body: str, *, delivery: str | None = None, **kwargs: Any) -> DispatchOutcome:
        """An ``issue_comment.created`` (on PR #101 unless ``on_pr=False``)."""
        return await self.deliver_event(
            "issue_comment", self.issue_comment_payload(body, **kwargs), delivery=delivery
        )

    async def inline_mention(
        self, pull: dict[str, Any], body: str, *, delivery: str | None = None, **kwargs: Any
    ) -> DispatchOutcome:
        return await self.deliver_event(
            "pull_request_review_comment",
            self.review_comment_payload(pull, body, **kwargs),
            delivery=delivery,
        )

    def write_on_execute(self, files: dict[str, str]) -> None:
        """Make every model run "edit" ``files`` in its workspace (the scripted CLI cannot run Edit)."""

        def probe(workspace: Path) -> None:
            for name, text in files.items():
                target = Path(workspace) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

        self.executor.probe = probe
