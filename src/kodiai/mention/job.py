"""Phase B of a mention (behaviour E3.4–E3.15): the queued job, as a list of named stages.

    workspace → trusted config → config gates → [memory command: forget / remember, then stop]
    → write-intent gates (permission, fork, then the original's) → turn limit → daily spend cap → 👀
    → context + finding → prompt → execute → [write request recorded] → bookkeeping → write-mode publishing | non-write endings

Gated-out requests stop silently (config gates) or with a trusted-code reply (write gates, turn limit),
before any reaction. Context, finding, reaction, telemetry and the cost warning are fail-open; anything
else that raises reaches the catch-all, which posts the classified error reply. The in-flight write key is
released and the workspace removed whatever happens.

Security additions (not in the original): the configuration of a PR mention is the base branch's unless
the PR is a same-repository one by a writer (:mod:`kodiai.config.trust`); write mode needs the commenter's
write access (looked up, fail-closed) and refuses fork PRs unless the base branch opts in; every write-mode
run counts against ``write.minIntervalSeconds``, whatever it published.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from kodiai.config import RepoConfig
from kodiai.config.trust import ConfigSource
from kodiai.execution.config_view import ExecutorConfig
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.github.permissions import access_level
from kodiai.github.rest import GitHubRest
from kodiai.github.workspace import Workspace
from kodiai.handler_kit.checkout import (
    TrustedConfig,
    clone_for_pull_request,
    load_base_only_settings,
    load_pull_request_config,
    load_workspace_config,
)
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import get_logger, redact
from kodiai.mention.context import MentionContextLimits, build_mention_context
from kodiai.mention.deps import MentionDeps
from kodiai.mention.finding import FindingLookup, ReviewFinding, lookup_reply_finding
from kodiai.mention.intent import (
    CONFIG_SKIP_MESSAGES,
    WriteIntent,
    apply_config_gates,
    bot_handles,
    build_write_branch_name,
    build_write_output_key,
    conversation_key,
    is_write_enabled,
    parse_write_intent,
    trigger_comment_url,
    write_rate_limit_key,
)
from kodiai.mention.memory_commands import parse_memory_command
from kodiai.mention.memory_governance import MemoryGovernance
from kodiai.mention.prompt import (
    MentionPromptInput,
    build_custom_instructions,
    build_mention_prompt,
)
from kodiai.mention.publish import WritePublisher, WriteTarget, find_existing_pr
from kodiai.mention.replies import (
    ReplyEndpoint,
    ReplyPurpose,
    ReplyRoute,
    catch_all_error_reply,
    conversation_limit_reply,
    cost_warning_reply,
    deliver_reply,
    execution_error_reply,
    existing_pr_reply,
    no_publish_fallback_reply,
    pr_context_only_reply,
    rate_limited_reply,
    reply_route,
    write_disabled_reply,
    write_in_progress_reply,
)
from kodiai.mention.state import rate_limit_retry_seconds
from kodiai.mention.surface import MentionSurface, with_pull_refs
from kodiai.mention.write.safety import (
    fork_write_refused_reply,
    write_permission_refused_reply,
    write_permission_unknown_reply,
)
from kodiai.review.posted_texts import should_post_cost_warning
from kodiai.spend_cap.gate import SpendTarget, check_spend_cap, record_run_spend
from kodiai.spend_cap.policy import RunKind
from kodiai.storage.telemetry import ExecutionRecord

PR_CLONE_DEPTH = 50
ISSUE_CLONE_DEPTH = 1
PR_LOCAL_BRANCH = "pr-mention"


@dataclass(frozen=True)
class MentionRequest:
    """What Phase A hands to the job."""

    delivery_id: str
    event_name: str
    action: str
    installation_id: int
    surface: MentionSurface

    @property
    def event_type(self) -> str:
        """``<event>.<action>`` (no trailing dot without an action), as the executor and telemetry see it."""
        return f"{self.event_name}.{self.action}" if self.action else self.event_name


@dataclass(frozen=True)
class WritePlan:
    """The write intent of this mention and, in write mode on a PR, its key and deterministic branch."""

    intent: WriteIntent
    enabled: bool
    key: str | None = None
    branch: str | None = None


class MentionJob:
    """One mention. ``outcome`` names how it ended (for logs and tests)."""

    def __init__(self, deps: MentionDeps, request: MentionRequest) -> None:
        self.deps = deps
        self.req = request
        self.surface = request.surface
        self.handles = list(bot_handles(deps.review.app_slug))
        self.log = get_logger(
            "kodiai.mention",
            deliveryId=request.delivery_id,
            installationId=request.installation_id,
            surface=self.surface.surface,
            owner=self.surface.owner,
            repo=self.surface.repo,
            issueNumber=self.surface.issue_number,
            prNumber=self.surface.pr_number,
        )
        self.client = deps.review.installation_client(request.installation_id)
        self.rest = GitHubRest(self.client, self.surface.owner, self.surface.repo)
        self.outcome = "started"
        # The delivery owns its write key: the journal's replay of this delivery after a crash takes the
        # key back at once; any other delivery (or a second worker) still sees it held.
        self._write_token = request.delivery_id
        self._held_key: str | None = None
        self.config_source: ConfigSource | None = None
        self.allowed_domains: tuple[str, ...] = ()

    def skip(self, reason: str, message: str, **fields: Any) -> None:
        self.outcome = f"skipped:{reason}"
        self.log.info(message, gateResult="skipped", skipReason=reason, **fields)

    async def reply(self, body: str, purpose: ReplyPurpose = "reply") -> Any:
        """A trusted-code reply along the surface's route (E3.16)."""
        return await deliver_reply(
            self.rest, reply_route(self.surface, purpose), body, bot_handles=self.handles, log=self.log
        )

    # ------------------------------------------------------------------ the stage list
    async def run(self) -> str:
        workspace: Workspace | None = None
        try:
            self.surface = await self.fill_pull_refs(self.surface)
            workspace = await self.open_workspace()
            config = (await self.load_config(workspace)).config
            question = self.pass_config_gates(config)
            if question is None:
                return self.outcome
            command = parse_memory_command(question)
            if command is not None:
                governance = MemoryGovernance(self.deps.review, self.rest, self.surface, self.reply, self.log)
                self.outcome = await governance.run(command)
                return self.outcome
            plan = self.write_plan(config, question)
            if not await self.pass_write_gates(config, plan):
                return self.outcome
            if not await self.pass_turn_limit(config):
                return self.outcome
            if not await self.pass_spend_cap(config, plan):
                return self.outcome
            self.log.info("Processing mention", writeEnabled=plan.enabled)
            await fail_open(self.log, "eyes-reaction", self.add_eyes, None, "Failed to add eyes reaction")
            prompt = await self.build_prompt(config, plan)
            result = await self.execute(workspace, config, plan, prompt)
            await record_run_spend(self.deps.review, self.spend_target(plan), result.cost_usd, self.log)
            await self.record_write_request(config, plan)
            await self.bookkeeping(config, result)
            if plan.enabled and plan.key is not None and plan.branch is not None:
                self.outcome = await self.publisher(workspace, config, plan).publish()
                return self.outcome
            await self.finish(result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.report_failure(exc)
        finally:
            await self.release_write_key()
            if workspace is not None:
                await asyncio.shield(workspace.cleanup())
        return self.outcome

    # ------------------------------------------------------------------ E3.4 workspace (fail-closed)
    async def fill_pull_refs(self, surface: MentionSurface) -> MentionSurface:
        """``pr_comment`` payloads carry no refs: read them from ``GET pulls/{n}``."""
        if surface.pr_number is None or surface.base_ref:
            return surface
        pull = await self.rest.get(f"/pulls/{surface.pr_number}")
        return with_pull_refs(surface, pull)

    async def open_workspace(self) -> Workspace:
        """PR: clone the base repo at the base ref (fork-safe), check out ``pull/<n>/head`` as
        ``pr-mention``, fetch the base ref. Issue: the default branch at depth 1."""
        s, manager = self.surface, self.deps.review.workspaces
        if s.pr_number is None:
            ref = s.default_branch or "main"
            self.log.info("Creating workspace for mention execution", workspaceStrategy="direct-branch-clone")
            return await manager.create(
                self.req.installation_id, owner=s.owner, repo=s.repo, ref=ref, depth=ISSUE_CLONE_DEPTH
            )
        base = s.base_ref or "main"
        self.log.info(
            "Creating workspace for mention execution", workspaceStrategy="base-clone+pull-ref-fetch"
        )
        return await clone_for_pull_request(
            manager,
            self.req.installation_id,
            owner=s.owner,
            repo=s.repo,
            ref=base,
            depth=PR_CLONE_DEPTH,
            base_ref=base,
            pull_head=(s.pr_number, PR_LOCAL_BRANCH),
        )

    # ------------------------------------------------------------------ trusted configuration
    async def load_config(self, ws: Workspace) -> TrustedConfig:
        """Issue: the default branch's file (the checkout). PR: the head's only for a same-repo PR whose
        author has write access, else the base branch's (:func:`load_pull_request_config`). The web
        domains (``mention.allowedDomains``) always come from the base (or default) branch."""
        s = self.surface
        if s.pr_number is None:
            config = await load_workspace_config(ws, self.log)
            found = (ws.dir / ".kodiai.yml").exists()
            source = ConfigSource(tree="default-branch", found=found, ref=s.default_branch)
            self.log.info("Configuration chosen", gate="trusted-config", configSource=source.label)
            trusted = TrustedConfig(config, source)
        else:
            trusted = await load_pull_request_config(
                ws,
                self.rest,
                owner=s.owner,
                repo=s.repo,
                author=s.pr_author,
                is_fork=not s.is_same_repo_pr,
                base_ref=s.base_ref or "main",
                log=self.log,
            )
        self.config_source = trusted.source
        base = trusted.config
        if trusted.source.tree == "head":
            base = await load_base_only_settings(ws, s.base_ref or "main", self.log)
        self.allowed_domains = tuple(base.mention.allowed_domains or ())
        return trusted

    # ------------------------------------------------------------------ E3.5 config gates (silent)
    def pass_config_gates(self, config: RepoConfig) -> str | None:
        """The question to answer, or None after logging the first failing gate (no reply, no reaction)."""
        gate = apply_config_gates(self.surface, config.mention, self.deps.review.app_slug)
        if gate.skip is not None:
            fields: dict[str, Any] = {}
            if gate.skip == "user-not-allowlisted":
                fields = {"gate": "mention-allowed-users", "author": self.surface.author}
            self.skip(gate.skip, CONFIG_SKIP_MESSAGES[gate.skip], **fields)
            return None
        return gate.question

    # ------------------------------------------------------------------ E3.6 write intent and gates
    def write_plan(self, config: RepoConfig, question: str) -> WritePlan:
        intent = parse_write_intent(question)
        enabled = is_write_enabled(intent, config.write.enabled)
        s = self.surface
        if not (enabled and s.pr_number is not None and intent.keyword is not None):
            return WritePlan(intent, enabled)
        key = build_write_output_key(
            installation_id=self.req.installation_id,
            owner=s.owner,
            repo=s.repo,
            pr_number=s.pr_number,
            comment_id=s.comment_id,
            keyword=intent.keyword,
        )
        branch = build_write_branch_name(pr_number=s.pr_number, comment_id=s.comment_id, write_output_key=key)
        return WritePlan(intent, enabled, key, branch)

    async def pass_write_permission(self) -> bool:
        """The commenter must have write access for write mode to run (fail-closed). An allow-listed bot
        is no exception: it passes only when GitHub says it has write access."""
        s = self.surface
        access = await access_level(self.rest, s.owner, s.repo, s.author)
        if access == "write":
            return True
        if access == "read":
            self.skip("write-permission", "Write request by a user without write access", author=s.author)
            await self.reply(write_permission_refused_reply(s.author))
        else:
            self.skip("write-permission-unknown", "Write permission could not be verified", author=s.author)
            await self.reply(write_permission_unknown_reply())
        return False

    async def pass_write_gates(self, config: RepoConfig, plan: WritePlan) -> bool:
        """Write access, then forks (port additions), then E3.6 gates 1–5 in order; each failing gate
        replies and stops the job."""
        s, state, now = self.surface, self.deps.state, self.deps.review.clock()
        if plan.key is not None and not await self.pass_write_permission():
            return False
        if plan.key is not None and not s.is_same_repo_pr and not config.write.allow_forks:
            self.skip("write-fork", "Write request on a fork PR without write.allowForks", gate="write-fork")
            await self.reply(fork_write_refused_reply())
            return False
        if plan.key is not None and plan.branch is not None:
            existing = await fail_open(
                self.log,
                "write-idempotency",
                lambda: find_existing_pr(self.rest, s.owner, plan.branch or ""),
                None,
                "Failed to look up existing PR for write idempotency; continuing",
            )
            if existing:
                self.evidence("reused-pr", plan, branchName=plan.branch, prUrl=existing)
                self.outcome = "reused-pr"
                await self.reply(existing_pr_reply(existing))
                return False
            key = plan.key
            if not await asyncio.to_thread(state.acquire_or_resume_write, key, self._write_token, now):
                self.skip("write-in-progress", "Write request already in progress", writeOutputKey=key)
                await self.reply(write_in_progress_reply())
                return False
            self._held_key = key
        interval = float(config.write.min_interval_seconds)
        if plan.enabled and interval > 0:
            scope = write_rate_limit_key(self.req.installation_id, s.owner, s.repo)
            last = await asyncio.to_thread(state.last_write_at, scope, now)
            retry = rate_limit_retry_seconds(last, now, interval)
            if retry is not None:
                self.skip("write-rate-limited", "Write request rate-limited", retryAfterSeconds=retry)
                await self.reply(rate_limited_reply(retry))
                return False
        if plan.intent.is_write_intent and s.pr_number is None:
            self.skip("write-no-pr", "Write intent outside a PR context")
            await self.reply(pr_context_only_reply())
            return False
        if plan.intent.is_write_intent and not plan.intent.is_plan_only and not config.write.enabled:
            self.skip("write-disabled", "Write intent with write mode disabled", gate="write-mode")
            await self.reply(write_disabled_reply())
            return False
        return True

    async def release_write_key(self) -> None:
        key, self._held_key = self._held_key, None
        if key is not None:
            state = self.deps.state
            await fail_open(
                self.log,
                "write-lock-release",
                lambda: asyncio.to_thread(state.release_write, key, self._write_token),
                False,
            )

    # ------------------------------------------------------------------ E3.7 turn limit (replies only)
    async def pass_turn_limit(self, config: RepoConfig) -> bool:
        if self.surface.in_reply_to_id is None:
            return True
        limit = config.mention.conversation.max_turns_per_pr
        count = await asyncio.to_thread(
            self.deps.state.turn_count, conversation_key(self.surface), self.deps.review.clock()
        )
        if count < limit:
            return True
        self.skip("turn-limit", "Conversation turn limit reached", turns=count, maxTurnsPerPr=limit)
        await self.reply(conversation_limit_reply(limit))
        return False

    # ------------------------------------------------------------------ daily spend cap (port addition)
    def spend_target(self, plan: WritePlan) -> SpendTarget:
        s = self.surface
        kind: RunKind = "write" if plan.enabled else "mention"
        return SpendTarget(self.req.installation_id, s.full_name, s.issue_number, self.req.delivery_id, kind)

    async def pass_spend_cap(self, config: RepoConfig, plan: WritePlan) -> bool:
        """Refused before the 👀 reaction, with one notice per PR/issue per UTC day
        (:mod:`kodiai.spend_cap.gate`)."""
        cap = config.telemetry.daily_spend_cap_usd
        target = self.spend_target(plan)
        if await check_spend_cap(self.deps.review, self.rest, target, cap, self.log):
            return True
        self.outcome = "skipped:spend-cap"
        return False

    # ------------------------------------------------------------------ E3.8 acknowledgement
    async def add_eyes(self) -> None:
        """Inline → review-comment reaction; review body → none (a review id is no comment id); else the
        issue-comment reaction."""
        s = self.surface
        if s.surface == "pr_review_body":
            return
        kind = "pulls" if s.is_inline else "issues"
        await self.rest.post(f"/{kind}/comments/{s.comment_id}/reactions", {"content": "eyes"})

    # ------------------------------------------------------------------ E3.9–E3.11 context and prompt
    def finding_lookup(self) -> FindingLookup | None:
        store = self.deps.review.knowledge
        return store.get_finding_by_comment_id if store is not None else None

    async def build_prompt(self, config: RepoConfig, plan: WritePlan) -> str:
        lookup = self.finding_lookup()
        limits = MentionContextLimits(max_thread_chars=int(config.mention.conversation.context_budget_chars))
        context = await build_mention_context(
            self.rest, self.surface, finding_lookup=lookup, limits=limits, log=self.log
        )
        finding: ReviewFinding | None = await asyncio.to_thread(
            lookup_reply_finding, self.surface, lookup, self.log
        )
        return build_mention_prompt(
            MentionPromptInput(
                surface=self.surface,
                question=plan.intent.request,
                context=context,
                finding=finding,
                custom_instructions=build_custom_instructions(
                    config.mention.prompt, plan.intent, plan.enabled
                ),
                output_language=config.review.output_language,
            )
        )

    # ------------------------------------------------------------------ E3.12 execution
    async def execute(
        self, ws: Workspace, config: RepoConfig, plan: WritePlan, prompt: str
    ) -> ExecutionResult:
        s = self.surface
        result = await self.deps.review.executor.execute(
            ExecutionContext(
                workspace_dir=ws.dir,
                installation_id=self.req.installation_id,
                owner=s.owner,
                repo=s.repo,
                pr_number=s.pr_number,
                comment_id=s.comment_id if s.is_inline else None,
                delivery_id=self.req.delivery_id,
                bot_handles=self.handles,
                write_mode=plan.enabled,
                event_type=self.req.event_type,
                trigger_body=s.body,
                prompt=prompt,
                issue_number=s.issue_number,
                executor_config=ExecutorConfig.from_repo_config(config),
                allowed_domains=self.allowed_domains,
                may_approve=self.config_source is None or self.config_source.author_trusted,
            )
        )
        self.log.info(
            "Mention execution completed",
            conclusion=result.conclusion,
            published=result.published,
            writeEnabled=plan.enabled,
            costUsd=result.cost_usd,
            numTurns=result.num_turns,
            durationMs=result.duration_ms,
            sessionId=result.session_id,
        )
        return result

    async def record_write_request(self, config: RepoConfig, plan: WritePlan) -> None:
        """Every write-mode run counts against ``write.minIntervalSeconds``, whatever it then publishes
        (a push, a bot PR, a reused PR, a patch, a policy refusal, nothing): the limit bounds how often
        the model may be set to change the repository. The original counted bot PRs only. Fail-open."""
        if not plan.enabled or plan.key is None or float(config.write.min_interval_seconds) <= 0:
            return
        s, state, now = self.surface, self.deps.state, self.deps.review.clock()
        scope = write_rate_limit_key(self.req.installation_id, s.owner, s.repo)
        await fail_open(
            self.log, "write-rate-limit", lambda: asyncio.to_thread(state.record_write, scope, now), None
        )

    # ------------------------------------------------------------------ E3.13 bookkeeping (fail-open)
    async def bookkeeping(self, config: RepoConfig, result: ExecutionResult) -> None:
        s, deps = self.surface, self.deps
        if s.in_reply_to_id is not None and result.conclusion == "success":
            key, now = conversation_key(s), deps.review.clock()
            await fail_open(
                self.log,
                "turn-count",
                lambda: asyncio.to_thread(deps.state.increment_turn, key, now),
                0,
            )
        telemetry = config.telemetry
        store = deps.review.telemetry
        if telemetry.enabled and store is not None:
            record = ExecutionRecord(
                delivery_id=self.req.delivery_id,
                repo=s.full_name,
                pr_number=s.pr_number,
                event_type=self.req.event_type,
                model=result.model or "unknown",
                input_tokens=result.input_tokens or 0,
                output_tokens=result.output_tokens or 0,
                cache_read_tokens=result.cache_read_tokens or 0,
                cache_creation_tokens=result.cache_creation_tokens or 0,
                duration_ms=result.duration_ms or 0,
                cost_usd=result.cost_usd or 0.0,
                conclusion=result.conclusion,
                session_id=result.session_id,
                num_turns=result.num_turns,
                stop_reason=result.stop_reason,
            )
            await fail_open(
                self.log,
                "telemetry",
                lambda: asyncio.to_thread(store.record, record),
                None,
                "Telemetry write failed (fail-open)",
            )
        threshold = float(telemetry.cost_warning_usd)
        if should_post_cost_warning(
            telemetry_enabled=telemetry.enabled, cost_warning_usd=threshold, cost_usd=result.cost_usd
        ):
            body = cost_warning_reply(result.cost_usd or 0.0, threshold)
            top = ReplyRoute(
                endpoints=(ReplyEndpoint(kind="issue_comment", suffix=f"/issues/{s.issue_number}/comments"),),
                on_failure="raise",
            )
            await fail_open(
                self.log,
                "cost-warning",
                lambda: deliver_reply(self.rest, top, body, bot_handles=self.handles, sanitize=False),
                None,
                "Failed to post cost warning",
            )

    # ------------------------------------------------------------------ E3.14 write mode
    def publisher(self, ws: Workspace, config: RepoConfig, plan: WritePlan) -> WritePublisher:
        s = self.surface
        assert plan.key is not None and plan.branch is not None and s.pr_number is not None
        target = WriteTarget(
            owner=s.owner,
            repo=s.repo,
            pr_number=s.pr_number,
            head_ref=s.head_ref,
            base_ref=s.base_ref,
            head_repo_owner=s.head_repo_owner,
            head_repo_name=s.head_repo_name,
            default_branch=s.default_branch,
            keyword=plan.intent.keyword or "apply",
            request=plan.intent.request,
            write_key=plan.key,
            branch=plan.branch,
            delivery_id=self.req.delivery_id,
            installation_id=self.req.installation_id,
        )
        return WritePublisher(
            ws,
            self.rest,
            config.write,
            target,
            reply=self.reply,
            log=self.log,
            evidence=lambda outcome, **fields: self.evidence(outcome, plan, **fields),
        )

    def evidence(self, outcome: str, plan: WritePlan, **fields: Any) -> None:
        s = self.surface
        self.log.info(
            "Evidence bundle",
            evidenceType="write-mode",
            outcome=outcome,
            owner=s.owner,
            repoName=s.repo,
            repo=s.full_name,
            sourcePrNumber=s.pr_number,
            triggerCommentId=s.comment_id,
            triggerCommentUrl=trigger_comment_url(s),
            writeOutputKey=plan.key,
            **fields,
        )

    # ------------------------------------------------------------------ E3.15 non-write endings
    async def finish(self, result: ExecutionResult) -> None:
        self.outcome = "published" if result.published else result.conclusion
        if result.conclusion == "success" and not result.published:
            self.outcome = "fallback-reply"
            await self.reply(no_publish_fallback_reply(), "no_publish_fallback")
        if result.conclusion == "error":
            body = execution_error_reply(
                is_timeout=bool(result.is_timeout),
                error_message_text=result.error_message,
                bot_handles=self.handles,
            )
            self.outcome = "error"
            await self.reply(body, "error")

    async def report_failure(self, exc: Exception) -> None:
        self.log.error("Mention handler failed", err=redact(f"{type(exc).__name__}: {exc}"))
        self.outcome = "error:handler"
        body = catch_all_error_reply(exc, self.handles)
        try:
            await self.reply(body, "catch_all_error")
        except Exception as post_exc:  # a top-level post never throws out of the catch-all
            self.log.error("Failed to post/update error comment", err=redact(str(post_exc)))
