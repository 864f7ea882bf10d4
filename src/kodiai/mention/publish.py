"""Write-mode publishing (behaviour E3.14): trusted code turns the model's workspace edits into a
commit, never the model.

Same-repo PRs get the commit on their head branch, guarded by the write-output marker in the head's
recent commit messages (checked before and, after a failed push, again). A failed same-repo push goes
through a bot branch and a bot PR. Every path ends the job with one reply.

Deliberate differences:

- (the E3.14.3d caveat decided in the user's favour) when the same-repo commit was made and only its push
  failed, that commit is pushed to the bot branch and the bot PR opened for it, instead of the original's
  misleading "no changes" refusal;
- (security) a head that is the default branch or a protected branch, or whose protection cannot be read,
  is never pushed to: the change goes to a bot branch and a bot PR *against that head*;
- (security) a fork PR (or one whose head repository is gone) is never pushed anywhere: its content is
  not this repository's. With ``write.allowForks`` (from the base branch) the change is replied as a
  patch, after the same write policy; without it the job refused the request before the model ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from kodiai.config.models import WriteConfig
from kodiai.github.branch_names import validate_branch_name
from kodiai.github.rest import RestApi
from kodiai.github.workspace import Workspace
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import Logger, redact
from kodiai.mention.intent import source_pr_url
from kodiai.mention.replies import (
    already_applied_reply,
    existing_pr_reply,
    no_changes_reply,
    opened_pr_reply,
    updated_pr_reply,
    write_refusal_reply,
)
from kodiai.mention.write.messages import (
    build_bot_pr_body,
    build_bot_pr_title,
    build_commit_message,
    has_write_output_marker,
    is_branch_conflict_error,
    policy_refusal,
)
from kodiai.mention.write.policy import WritePolicy, WritePolicyError
from kodiai.mention.write.safety import (
    DirectPushBlock,
    bot_pr_instead_reply,
    fork_patch_reply,
    fork_write_refused_reply,
)
from kodiai.mention.write.staged import commit_and_push, enforce_write_policy, stage_all

#: Commits of the PR head scanned for this request's marker.
MARKER_SCAN_DEPTH = 50
_MESSAGE_END = "\x1e"


class Evidence(Protocol):
    def __call__(self, outcome: str, **fields: Any) -> None: ...


async def find_existing_pr(rest: RestApi, owner: str, branch: str) -> str | None:
    """The URL of a PR (any state) whose head is ``<owner>:<branch>``, or None (E3.6 gate 1)."""
    pulls = await rest.get("/pulls", state="all", head=f"{owner}:{branch}", per_page=5)
    if isinstance(pulls, list) and pulls and isinstance(pulls[0], dict):
        url = pulls[0].get("html_url")
        return url if isinstance(url, str) and url else None
    return None


@dataclass(frozen=True)
class WriteTarget:
    """Where the edits of one write request go, and what identifies them."""

    owner: str
    repo: str
    pr_number: int
    head_ref: str | None
    base_ref: str | None
    head_repo_owner: str | None
    head_repo_name: str | None
    default_branch: str | None
    keyword: str
    request: str
    write_key: str
    branch: str
    delivery_id: str
    installation_id: int

    @property
    def same_repo(self) -> bool:
        """The head branch lives in the base repository (not a fork, not deleted) and is named."""

        def norm(value: str | None) -> str:
            return (value or "").strip().lower()

        return (
            bool(norm(self.head_ref))
            and norm(self.head_repo_owner) == norm(self.owner)
            and norm(self.head_repo_name) == norm(self.repo)
        )

    @property
    def source_url(self) -> str:
        return source_pr_url(self.owner, self.repo, self.pr_number)

    @property
    def commit_message(self) -> str:
        return build_commit_message(
            pr_number=self.pr_number, write_key=self.write_key, delivery_id=self.delivery_id
        )


class WritePublisher:
    """One write request's publishing; :meth:`publish` returns the outcome name."""

    def __init__(
        self,
        ws: Workspace,
        rest: RestApi,
        write: WriteConfig,
        target: WriteTarget,
        *,
        reply: Callable[[str], Awaitable[Any]],
        log: Logger,
        evidence: Evidence,
    ) -> None:
        self.ws = ws
        self.rest = rest
        self.write = write
        self.policy = WritePolicy.from_config(write)
        self.target = target
        self.reply = reply
        self.log = log
        self.evidence = evidence

    async def refuse(self, error: WritePolicyError) -> str:
        self.log.info("Write request refused by policy", code=error.code, rule=error.rule, path=error.path)
        await self.reply(write_refusal_reply(policy_refusal(error), tuple(self.write.allow_paths)))
        return f"refused:{error.code}"

    async def publish(self) -> str:
        if not (await self.ws.git("status", "--porcelain")).strip():
            await self.reply(no_changes_reply())
            return "no-changes"
        if not self.target.same_repo:
            return await self.publish_patch()
        block = await self.direct_push_block()
        if block is not None:
            self.log.info(
                "Not pushing to the PR head directly; opening a bot PR against it",
                gate="write-protected-branch",
                headRef=self.target.head_ref,
                reason=block,
            )
            return await self.publish_bot_pr(base=self.target.head_ref, block=block)
        return await self.publish_same_repo()

    # ------------------------------------------------------------------ forks: a patch, never a push
    async def publish_patch(self) -> str:
        """Fork PR with ``write.allowForks``: stage, apply the write policy, reply with the staged diff."""
        if not self.write.allow_forks:  # the job's gate refused this before the model ran
            await self.reply(fork_write_refused_reply())
            return "refused:fork"
        try:
            await stage_all(self.ws)
            await enforce_write_policy(self.ws, self.policy)
        except WritePolicyError as error:
            return await self.refuse(error)
        patch = await self.ws.git(
            "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary"
        )
        self.evidence("patch-reply", patchChars=len(patch))
        await self.reply(fork_patch_reply(patch))
        return "patch-reply"

    # ------------------------------------------------------------------ protected heads
    async def direct_push_block(self) -> DirectPushBlock | None:
        """Why the head must not be pushed to directly: the default branch, a protected branch, or a
        protection that could not be read (fail-closed); None when a direct push is fine."""
        head = self.target.head_ref or ""
        try:
            default = self.target.default_branch
            if not default:
                repository = await self.rest.get("")
                default = repository.get("default_branch") if isinstance(repository, dict) else None
            if not isinstance(default, str) or not default:
                return "unverified"
            if head == default:
                return "default-branch"
            branch = await self.rest.get(f"/branches/{quote(head, safe='/')}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.log.warning("Branch protection lookup failed; not pushing directly", err=redact(str(exc)))
            return "unverified"
        protected = branch.get("protected") if isinstance(branch, dict) else None
        if protected is False:
            return None
        return "protected" if protected is True else "unverified"

    # ------------------------------------------------------------------ same-repo (E3.14.3)
    async def head_has_marker(self) -> bool:
        """Fetch the PR head and look for this request's marker in its last 50 commit messages; a
        lookup failure counts as "not found" (logged)."""
        head = self.target.head_ref or ""

        async def scan() -> bool:
            validate_branch_name(head)
            ref = f"refs/remotes/origin/{head}"
            await self.ws.git("fetch", "--quiet", f"--depth={MARKER_SCAN_DEPTH}", "origin", f"{head}:{ref}")
            out = await self.ws.git("log", f"-{MARKER_SCAN_DEPTH}", f"--format=%B{_MESSAGE_END}", ref)
            return has_write_output_marker(out.split(_MESSAGE_END), self.target.write_key)

        return await fail_open(
            self.log, "write-idempotency", scan, False, "Failed to check PR head for write output marker"
        )

    async def already_applied(self) -> str:
        self.evidence("skipped-idempotent", headRef=self.target.head_ref)
        await self.reply(already_applied_reply(self.target.source_url))
        return "skipped-idempotent"

    async def publish_same_repo(self) -> str:
        target = self.target
        head = target.head_ref or ""
        if await self.head_has_marker():
            return await self.already_applied()
        before = await self.ws.head_sha()
        try:
            await self.ws.git("checkout", "--quiet", "-B", "pr-head", f"refs/remotes/origin/{head}")
            before = await self.ws.head_sha()
            pushed = await commit_and_push(
                self.ws, remote_ref=head, message=target.commit_message, policy=self.policy
            )
        except WritePolicyError as error:
            return await self.refuse(error)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if await self.head_has_marker():
                return await self.already_applied()
            self.log.warning(
                "Failed to push to PR head branch; falling back to bot PR", err=redact(str(error))
            )
            committed = await self.made_commit(before)
            if committed is None:
                return await self.publish_bot_pr()
            try:
                await self.ws.push_head(target.branch)
            except asyncio.CancelledError:
                raise
            except Exception:
                raise error from None
            return await self.open_bot_pr(committed)
        self.evidence("updated-pr-branch", headRef=head, commitSha=pushed.head_sha)
        await fail_open(
            self.log,
            "write-reply",
            lambda: self.reply(updated_pr_reply(target.source_url)),
            None,
            "Failed to post updated-PR reply",
        )
        return "updated-pr-branch"

    async def made_commit(self, before: str) -> str | None:
        """The sha of this request's commit when it was made before the failure (HEAD moved and carries
        the marker), else None."""
        try:
            head = await self.ws.head_sha()
            if head == before:
                return None
            message = await self.ws.git("log", "-1", "--format=%B", head)
        except asyncio.CancelledError:
            raise
        except Exception:
            return None
        return head if has_write_output_marker([message], self.target.write_key) else None

    # ------------------------------------------------------------------ bot PR (E3.14.4)
    async def publish_bot_pr(self, *, base: str | None = None, block: DirectPushBlock | None = None) -> str:
        """Commit the edits on the deterministic bot branch and open a PR into ``base`` (default: the
        PR's base branch)."""
        target = self.target
        try:
            pushed = await commit_and_push(
                self.ws,
                remote_ref=target.branch,
                message=target.commit_message,
                policy=self.policy,
                new_branch=target.branch,
            )
        except WritePolicyError as error:
            return await self.refuse(error)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not is_branch_conflict_error(error):
                raise
            existing = await find_existing_pr(self.rest, target.owner, target.branch)
            if existing is None:
                raise
            self.evidence("reused-pr", branchName=target.branch, prUrl=existing)
            await self.reply(existing_pr_reply(existing))
            return "reused-pr"
        return await self.open_bot_pr(pushed.head_sha, base=base, block=block)

    async def open_bot_pr(
        self, commit_sha: str, *, base: str | None = None, block: DirectPushBlock | None = None
    ) -> str:
        target = self.target
        created = await self.rest.post(
            "/pulls",
            {
                "title": build_bot_pr_title(target.pr_number),
                "head": target.branch,
                "base": base or target.base_ref or "main",
                "body": build_bot_pr_body(
                    keyword=target.keyword,
                    request=target.request,
                    pr_number=target.pr_number,
                    delivery_id=target.delivery_id,
                    commit_sha=commit_sha,
                ),
            },
        )
        url = str(created.get("html_url") or "") if isinstance(created, dict) else ""
        head = target.head_ref or ""
        await self.reply(opened_pr_reply(url) if block is None else bot_pr_instead_reply(url, head, block))
        self.evidence("created-pr", branchName=target.branch, prUrl=url, commitSha=commit_sha)
        return "created-pr"
