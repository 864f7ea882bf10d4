"""Phase B of the review: the queued job (behaviour R1 steps 8–54), as a list of named stages.

    claim run → workspace + config → gates → daily spend cap → gather → plan → execute → post-process
    → publish + record

Gather, publish and record do I/O; plan and post-process are pure (``kodiai.review.plan``,
``kodiai.review.postprocess``). A fail-open step goes through :func:`fail_open`; anything else that
raises reaches the outer catch, which posts the classified error comment (step 54). The workspace is
removed whatever happens.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from kodiai.config import RepoConfig
from kodiai.config.trust import ConfigSource
from kodiai.enforcement.apply import apply_enforcement
from kodiai.execution.config_view import ExecutorConfig
from kodiai.execution.error_comments import post_or_update_error_comment
from kodiai.execution.errors import classify_error, format_error_comment
from kodiai.execution.output_key import build_review_output_marker
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.feedback.adjuster import FeedbackSuppressionResult, evaluate_feedback_suppressions
from kodiai.findings import EnforcedFinding
from kodiai.github.models import ReviewComment
from kodiai.github.pulls import PullRequestApi, bodies
from kodiai.github.rest import GitHubRest
from kodiai.github.workspace import Workspace
from kodiai.handler_kit.checkout import TrustedConfig, clone_for_pull_request, load_pull_request_config
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.handler_kit.fail_open import fail_open
from kodiai.log import get_logger, redact
from kodiai.review import publish, record
from kodiai.review.gather import Gathered, gather, plan_input
from kodiai.review.metadata import extract_findings
from kodiai.review.plan import ReviewPlan, plan_review
from kodiai.review.posted_texts import (
    build_no_review_acknowledgement,
    no_review_ack_marker,
    title_requests_no_review,
)
from kodiai.review.postprocess import ProcessedReview, process_findings
from kodiai.review.pull_request import PullRequestFacts
from kodiai.review.rereview_team import request_rereview_team_best_effort
from kodiai.review.resolved_findings import record_resolved_findings
from kodiai.review.retrieval_hits import record_retrieval_hits
from kodiai.review.sources import GatherSources, webhook_sources
from kodiai.review.trigger import ClonePlan
from kodiai.spend_cap.gate import SpendTarget, check_spend_cap, record_run_spend
from kodiai.text.sanitizer import sanitize_outgoing_mentions

CLONE_DEPTH = 50
PR_REVIEW_BRANCH = "pr-review"
TRIGGERS = {
    "opened": "on_opened",
    "ready_for_review": "on_ready_for_review",
    "review_requested": "on_review_requested",
    "synchronize": "on_synchronize",
}


@dataclass(frozen=True)
class ReviewRequest:
    """What Phase A hands to the job."""

    delivery_id: str
    event_name: str
    action: str
    installation_id: int
    facts: PullRequestFacts
    clone: ClonePlan
    review_output_key: str


@dataclass(frozen=True)
class RunClaim:
    proceed: bool
    run_key: str | None
    last_reviewed_head_sha: str | None
    resumed: bool = False
    """This delivery's own run, left unfinished by a crash (the job journal replays the delivery)."""


#: What the gates decide: review, stop, or finish a resumed run from the output it already published.
Verdict = Literal["review", "stop", "finish-published"]


class ReviewJob:
    """One review run. ``outcome`` names how it ended (exported as the ``kodiai_reviews`` metric)."""

    def __init__(self, deps: HandlerDeps, request: ReviewRequest) -> None:
        self.deps = deps
        self.req = request
        facts = request.facts
        self.log = get_logger(
            "kodiai.handlers.review",
            deliveryId=request.delivery_id,
            installationId=request.installation_id,
            action=request.action,
            prNumber=facts.number,
            owner=facts.owner,
            repo=facts.repo,
        )
        self.client = deps.installation_client(request.installation_id)
        rest = GitHubRest(self.client, facts.owner, facts.repo)
        self.pr = PullRequestApi(rest, facts.number)
        self.handles = deps.bot_handles
        self.outcome = "started"
        self.config_source: ConfigSource | None = None
        self.executor_config: ExecutorConfig | None = None

    @property
    def may_approve(self) -> bool:
        """Whether the bot's verdict may be an approval: only on a PR whose author may push."""
        return self.config_source is None or self.config_source.author_trusted

    def skip(self, reason: str, message: str, **fields: Any) -> None:
        self.outcome = f"skipped:{reason}"
        self.log.info(message, gateResult="skipped", skipReason=reason, **fields)

    # ------------------------------------------------------------------ the stage list
    async def run(self) -> str:
        workspace: Workspace | None = None
        try:
            claim = await self.claim_run()
            if not claim.proceed:
                return self.outcome
            workspace = await self.open_workspace()
            config = (await self.load_config(workspace)).config
            verdict = await self.pass_gates(config, claim)
            if verdict == "stop":
                return self.outcome
            if verdict == "review" and not await self.pass_spend_cap(config, claim):
                return self.outcome
            gathered = await gather(
                self.req.facts,
                config,
                workspace,
                self.sources(claim),
                self.log,
                base=f"origin/{self.req.facts.base_ref}",
                base_ref=self.req.facts.base_ref,
            )
            await self.record_retrieval(config, gathered)
            if not gathered.changed_files:
                self.skip("skip-paths", "All changed files matched skipPaths, skipping review")
                return self.outcome
            plan = self.plan(config, gathered)
            if verdict == "review":
                result = await self.execute(workspace, plan)
                await record_run_spend(self.deps, self.spend_target(), result.cost_usd, self.log)
            else:
                result = interrupted_run_result()
            processed, feedback = await self.post_process(workspace, config, gathered, plan, result)
            await self.finish(
                config, gathered, plan, result, processed, feedback, claim, executed=verdict == "review"
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.report_failure(exc)
        finally:
            if workspace is not None:
                await asyncio.shield(workspace.cleanup())
        return self.outcome

    # ------------------------------------------------------------------ step 8: run state
    async def claim_run(self) -> RunClaim:
        """Read the last completed run *before* claiming this one (Q2), then claim. An existing run for
        the same SHAs stops the job, except for an explicit re-request (Q3) or the replay of this same
        delivery after a crash."""
        store = self.deps.knowledge
        if store is None:
            return RunClaim(True, None, None)
        facts = self.req.facts
        last = await fail_open(
            self.log,
            "run-state-idempotency",
            lambda: asyncio.to_thread(store.get_last_reviewed_head_sha, facts.full_name, facts.number),
            None,
        )
        claim = await fail_open(
            self.log,
            "run-state-idempotency",
            lambda: asyncio.to_thread(
                lambda: store.check_and_claim_run(
                    repo=facts.full_name,
                    pr_number=facts.number,
                    base_sha=facts.base_sha,
                    head_sha=facts.head_sha,
                    delivery_id=self.req.delivery_id,
                    action=self.req.action,
                )
            ),
            None,
        )
        if claim is None:
            return RunClaim(True, None, last)
        if claim.should_process:
            self.log.info(
                "Run claimed", gate="run-state-idempotency", reason=claim.reason, runKey=claim.run_key
            )
            return RunClaim(True, claim.run_key, last)
        existing = await asyncio.to_thread(store.run_delivery, claim.run_key)
        if existing is not None and existing[0] == self.req.delivery_id and existing[1] != "completed":
            self.log.info("Resuming the unfinished run of this delivery", gate="run-state-idempotency")
            return RunClaim(True, claim.run_key, last, resumed=True)
        if self.req.action == "review_requested":
            self.log.info("Explicit re-request of an already reviewed head", gate="run-state-idempotency")
            return RunClaim(True, claim.run_key, last)
        self.skip("duplicate", "Run already exists for this base/head pair", gate="run-state-idempotency")
        return RunClaim(False, claim.run_key, last)

    # ------------------------------------------------------------------ steps 9–10 (fail-closed)
    async def open_workspace(self) -> Workspace:
        clone, facts = self.req.clone, self.req.facts
        return await clone_for_pull_request(
            self.deps.workspaces,
            self.req.installation_id,
            owner=clone.owner,
            repo=clone.repo,
            ref=clone.ref,
            depth=CLONE_DEPTH,
            base_ref=facts.base_ref,
            pull_head=(facts.number, PR_REVIEW_BRANCH) if clone.use_pr_ref else None,
        )

    async def load_config(self, ws: Workspace) -> TrustedConfig:
        """The trusted ``.kodiai.yml``: the head's for a same-repo PR by a writer, else the base branch's.
        The executor gets the same choice, so it never re-reads the checkout's file."""
        clone, facts = self.req.clone, self.req.facts
        trusted = await load_pull_request_config(
            ws,
            self.pr.rest,
            owner=facts.owner,
            repo=facts.repo,
            author=facts.author,
            is_fork=clone.is_fork or clone.is_deleted_fork,
            base_ref=facts.base_ref,
            log=self.log,
        )
        self.config_source = trusted.source
        self.executor_config = ExecutorConfig.from_repo_config(trusted.config)
        return trusted

    # ------------------------------------------------------------------ steps 11–17
    async def pass_gates(self, config: RepoConfig, claim: RunClaim) -> Verdict:
        review, action, facts = config.review, self.req.action, self.req.facts
        if (
            review.request_ui_rereview_team_on_open
            and review.ui_rereview_team
            and action in ("opened", "ready_for_review")
        ):
            await asyncio.to_thread(
                request_rereview_team_best_effort,
                self.pr.requested_teams(),
                review.ui_rereview_team,
                self.deps.app_slug,
                self.log,
            )
        if not review.enabled:
            self.skip("review-disabled", "Review disabled in config", gate="review-enabled")
            return "stop"
        if not getattr(review.triggers, TRIGGERS.get(action, ""), False):
            self.skip("trigger-disabled", "Review trigger disabled for this action", gate="review-trigger")
            return "stop"
        if title_requests_no_review(facts.title):
            await self.acknowledge_no_review()
            return "stop"
        marker = build_review_output_marker(self.req.review_output_key)
        location = await self.pr.find_marker(marker)
        if location is not None and claim.resumed:
            self.log.info(
                "Finishing the interrupted run from the output it already published",
                gate="review-output-idempotency",
                existingLocation=location,
                reviewOutputKey=self.req.review_output_key,
            )
            return "finish-published"
        if location is not None:
            self.skip(
                "already-published",
                "Skipping review execution because output already published for key",
                gate="review-output-idempotency",
                existingLocation=location,
                reviewOutputKey=self.req.review_output_key,
            )
            return "stop"
        if action == "review_requested":
            await fail_open(self.log, "eyes-reaction", lambda: self.pr.add_reaction("eyes"), None)
        if facts.author in review.skip_authors:
            self.skip("skip-author", "PR author is in review.skipAuthors", gate="skip-authors")
            return "stop"
        return "review"

    def spend_target(self) -> SpendTarget:
        facts = self.req.facts
        return SpendTarget(
            self.req.installation_id, facts.full_name, facts.number, self.req.delivery_id, "review"
        )

    async def pass_spend_cap(self, config: RepoConfig, claim: RunClaim) -> bool:
        """The daily spend cap (:mod:`kodiai.spend_cap.gate`), after every other gate: a PR that would
        not be reviewed anyway gets no spend cap notice. A refused run gives its claim back, so any
        trigger for the same head after the reset reviews it."""
        cap = config.telemetry.daily_spend_cap_usd
        if await check_spend_cap(self.deps, self.pr.rest, self.spend_target(), cap, self.log):
            return True
        self.outcome = "skipped:spend-cap"
        store, key = self.deps.knowledge, claim.run_key
        if store is not None and key is not None:
            delivery = self.req.delivery_id
            await fail_open(
                self.log,
                "run-state-release",
                lambda: asyncio.to_thread(store.release_run, key, delivery),
                None,
            )
        return False

    async def acknowledge_no_review(self) -> None:
        """``[no-review]`` (Q8 fixed): acknowledged only for an event that would have reviewed, once per
        head SHA."""
        self.skip("keyword-skip", "Review skipped per [no-review] in PR title", gate="keyword-skip")
        head = self.req.facts.head_sha

        async def post() -> None:
            comments = await self.pr.issue_comments()
            if any(isinstance(b, str) and no_review_ack_marker(head) in b for b in bodies(comments)):
                return
            body = sanitize_outgoing_mentions(build_no_review_acknowledgement(head), self.handles)
            await self.pr.create_issue_comment(body)

        await fail_open(self.log, "keyword-skip", post, None, "Failed to post [no-review] acknowledgement")

    # ------------------------------------------------------------------ gather helpers
    def sources(self, claim: RunClaim) -> GatherSources:
        return webhook_sources(
            self.deps, self.pr, self.client, self.req.facts, claim.last_reviewed_head_sha, self.log
        )

    async def record_retrieval(self, config: RepoConfig, gathered: Gathered) -> None:
        outcome = gathered.retrieval.outcome
        if outcome is None:
            return
        self.deps.metrics.retrieval_threshold_method.labels(outcome.threshold.method).inc()
        await record.record_retrieval(
            self.deps.telemetry,
            outcome,
            enabled=config.telemetry.enabled,
            facts=self.req.facts,
            delivery_id=self.req.delivery_id,
            event_name=self.req.event_name,
            log=self.log,
            feedback_counts=(
                gathered.retrieval.feedback_counts() if gathered.retrieval.feedback is not None else None
            ),
        )
        await record_retrieval_hits(
            self.deps.knowledge,
            outcome,
            enabled=config.telemetry.enabled,
            delivery_id=self.req.delivery_id,
            repo=self.req.facts.full_name,
            pr_number=self.req.facts.number,
            log=self.log,
        )

    # ------------------------------------------------------------------ steps 33–36
    def plan(self, config: RepoConfig, gathered: Gathered) -> ReviewPlan:
        plan = plan_review(plan_input(self.req.facts, config, gathered))
        self.log.info(
            "Review profile selected",
            gate="review-profile-selection",
            profile=plan.profile.selected_profile,
            source=plan.profile.source,
            riskLevel=plan.timeout.risk_level,
            dynamicTimeoutSeconds=plan.timeout.dynamic_timeout_seconds,
        )
        return plan

    # ------------------------------------------------------------------ step 37
    async def execute(self, ws: Workspace, plan: ReviewPlan) -> ExecutionResult:
        facts = self.req.facts
        return await self.deps.executor.execute(
            ExecutionContext(
                workspace_dir=ws.dir,
                installation_id=self.req.installation_id,
                owner=facts.owner,
                repo=facts.repo,
                pr_number=facts.number,
                event_type=f"pull_request.{self.req.action}",
                trigger_body=plan.prompt,
                prompt=plan.prompt,
                review_output_key=self.req.review_output_key,
                delivery_id=self.req.delivery_id,
                dynamic_timeout_seconds=plan.dynamic_timeout_seconds,
                bot_handles=self.handles,
                issue_number=facts.number,
                executor_config=self.executor_config,
                may_approve=self.may_approve,
            )
        )

    # ------------------------------------------------------------------ steps 38–43
    async def post_process(
        self, ws: Workspace, config: RepoConfig, gathered: Gathered, plan: ReviewPlan, result: ExecutionResult
    ) -> tuple[ProcessedReview, FeedbackSuppressionResult]:
        facts = self.req.facts
        enforced: list[EnforcedFinding] = []
        if result.conclusion == "success":
            marker = build_review_output_marker(self.req.review_output_key)
            none: list[ReviewComment] = []
            comments = await fail_open(self.log, "finding-extraction", self.pr.review_comments_page, none)
            extracted = extract_findings(comments, marker)
            if extracted:
                analysis = gathered.analysis
                enforced = await asyncio.to_thread(
                    apply_enforcement,
                    extracted,
                    ws.dir,
                    analysis.files_by_category,
                    analysis.files_by_language,
                    config.language_rules,
                    self.req.delivery_id,
                )
        store = self.deps.knowledge
        feedback = await asyncio.to_thread(
            evaluate_feedback_suppressions,
            store,
            facts.full_name,
            config.feedback.auto_suppress,
            self.req.delivery_id,
        )
        tiers = [*plan.tiered.full, *plan.tiered.abbreviated, *plan.tiered.mention_only]
        processed = process_findings(
            enforced,
            config=config,
            max_comments=plan.scope.max_comments,
            abbreviated_paths=plan.abbreviated_paths,
            feedback=feedback,
            prior_context=plan.prior_context,
            file_risk={f.file_path: f.score for f in tiers},
            prior_findings=gathered.prior_findings,
        )
        if processed.delta is not None:
            self.log.info(
                "Delta classification",
                gate="review-details-output",
                deltaNew=processed.delta.new,
                deltaResolved=processed.delta.resolved,
                deltaStillOpen=processed.delta.still_open,
            )
        return processed, feedback

    # ------------------------------------------------------------------ steps 44–53
    async def finish(
        self,
        config: RepoConfig,
        gathered: Gathered,
        plan: ReviewPlan,
        result: ExecutionResult,
        processed: ProcessedReview,
        feedback: FeedbackSuppressionResult,
        claim: RunClaim,
        *,
        executed: bool = True,
    ) -> None:
        """Steps 44–53. ``executed`` is false for an interrupted run finished from its published output:
        there is no execution to record, cost to warn about or error to report, and nothing is approved."""
        deps, facts, key, log = self.deps, self.req.facts, self.req.review_output_key, self.log
        success = result.conclusion == "success"
        if success and processed.filtered_comment_ids:
            await publish.delete_filtered_comments(self.pr, processed, log)
        if success:
            details = publish.review_details(
                key=key,
                plan=plan,
                analysis=gathered.analysis,
                intent=gathered.intent,
                author_tier=gathered.author_tier,
                processed=processed,
                feedback_patterns=feedback.suppressed_pattern_count,
                completed_at=deps.clock(),
            )
            if self.config_source is not None:
                details = details.model_copy(update={"config_source": self.config_source.describe()})
            await publish.publish_review_details(
                self.pr, details, published=result.published, handles=self.handles, log=log
            )
        telemetry = config.telemetry
        if telemetry.enabled and executed:
            await record.record_execution(
                deps.telemetry,
                result,
                facts=facts,
                delivery_id=self.req.delivery_id,
                action=self.req.action,
                log=log,
            )
        await publish.post_cost_warning(
            self.pr,
            result,
            enabled=telemetry.enabled,
            threshold=telemetry.cost_warning_usd,
            handles=self.handles,
            log=log,
        )
        review_id = await record.record_knowledge(
            deps.knowledge,
            config,
            result,
            processed,
            facts=facts,
            delivery_id=self.req.delivery_id,
            files_analyzed=gathered.analysis.metrics.total_files,
            lines_changed=gathered.lines_changed,
            review_output_key=key,
            log=log,
        )
        incremental = gathered.incremental
        prior_head = incremental.last_reviewed_head_sha if incremental and gathered.prior_findings else None
        await record_resolved_findings(
            deps.knowledge,
            facts,
            prior_head_sha=prior_head,
            changed_files=incremental.changed_files_since_last_review if incremental else [],
            current=processed.findings,
            review_id=review_id,
            succeeded=success,
            log=log,
        )
        if deps.knowledge is not None and claim.run_key is not None:
            store, run_key = deps.knowledge, claim.run_key
            await fail_open(
                log, "run-state-complete", lambda: asyncio.to_thread(store.complete_run, run_key), None
            )
        await record.record_memories(
            deps.memory, facts, processed, review_id, log, knowledge=deps.knowledge, rest=self.pr.rest
        )
        if success and result.published:
            log.info("Evidence bundle", outcome="published-output", reviewOutputKey=key)
        self.outcome = ("published" if result.published else result.conclusion) if executed else "resumed"
        if result.conclusion == "error":
            category = await publish.post_run_error(self.pr, result, plan, handles=self.handles, log=log)
            self.outcome = f"error:{category}"
        if config.review.auto_approve and success:
            merge_confidence = gathered.dep_bump.merge_confidence if gathered.dep_bump else None
            if await publish.auto_approve(
                self.pr,
                key,
                published=result.published,
                merge_confidence=merge_confidence,
                handles=self.handles,
                log=log,
                may_approve=self.may_approve,
            ):
                self.outcome = "approved" if self.may_approve else "comment-review"

    # ------------------------------------------------------------------ step 54
    async def report_failure(self, exc: Exception) -> None:
        message = redact(str(exc)) or "An unexpected error occurred"
        self.log.error("Review handler failed", err=redact(f"{type(exc).__name__}: {exc}"))
        category = classify_error(exc, False)
        self.outcome = f"error:{category}"
        body = format_error_comment(category, message)
        await post_or_update_error_comment(
            self.pr.rest,
            issue_number=self.req.facts.number,
            body=body,
            bot_handles=self.handles,
            log=self.log,
        )


def interrupted_run_result() -> ExecutionResult:
    """The run a crash interrupted after it had published: post-processing reads its findings back from
    GitHub; nothing else about the run (cost, turns, model) is known."""
    return ExecutionResult(conclusion="success", published=True)
