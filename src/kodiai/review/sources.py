"""Where a review's gather stage reads what the workspace cannot tell it, and the webhook's sources:
commits, the author's tier, dependency advisories (behaviour R1 steps 15, 18, 22) and the knowledge
store's prior findings (step 31). A local review has its own (``handlers/review/local.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from github import Github
from kodiai.github.pulls import PullRequestApi
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory, UsageAnalyzer
from kodiai.handler_kit.usage_scan import analyze_package_usage
from kodiai.log import Logger
from kodiai.review.author import classify_author
from kodiai.review.dep_bumps.enrichment_fetch import DepEnricher, dep_enricher
from kodiai.review.pull_request import PullRequestFacts
from kodiai.storage.feedback_tally import FeedbackTally
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import PriorFinding

CommitSource = Callable[[int], Awaitable[list[tuple[str, str]]]]
#: ``(repo, finding_id)`` pairs → the human thumbs feedback sync kept for each (absent: none).
FeedbackLookup = Callable[[Sequence[tuple[str, int]]], dict[tuple[str, int], FeedbackTally]]


@dataclass(frozen=True)
class GatherSources:
    """Where gather reads what the workspace cannot tell it."""

    commits: CommitSource | None
    """``(sha, message)`` of the PR's commits (None: none available, e.g. a local review reads git)."""
    author_tier: Callable[[], Awaitable[str]] | None = None
    enrich_dep_bump: DepEnricher | None = None
    knowledge_prior_findings: Callable[[str], list[PriorFinding]] | None = None
    """Unsuppressed findings of the review at a head SHA (knowledge store present)."""
    last_reviewed_head_sha: str | None = None
    """The newest completed run's head SHA, read *before* this run's claim (the Q2 fix)."""
    incremental_enabled: bool = False
    memory: LearnedMemory | None = None
    feedback: FeedbackLookup | None = None
    """The knowledge store's reaction tallies; without one, the memory's own 👍/👎 rows stand in."""
    re_review_scope: Callable[[], frozenset[int] | None] | None = None
    """The PR's earlier review ids when Kodiai reviewed it before (None: a first review); runs in the
    retrieval worker thread. Without a knowledge store every review is a first review."""
    usage_analyzer: UsageAnalyzer = analyze_package_usage
    now: datetime | None = None


#: Associations whose tier depends on how many PRs the author has merged (step 18).
COUNTED_ASSOCIATIONS = frozenset({"NONE", "MANNEQUIN", "COLLABORATOR", "CONTRIBUTOR"})


async def author_tier(store: KnowledgeStore, pr: PullRequestApi, facts: PullRequestFacts, log: Logger) -> str:
    """Step 18: the 24-hour cache, else the merged-PR search for outside associations, then classify."""
    try:
        cached = await asyncio.to_thread(store.get_author_cache, facts.full_name, facts.author)
    except Exception as exc:
        log.warning("Author cache read failed (fail-open)", err=str(exc))
        cached = None
    if cached is not None:
        return cached.tier
    association = (facts.author_association or "NONE").upper()
    count: int | None = None
    if association in COUNTED_ASSOCIATIONS:
        try:
            count = await pr.merged_pr_count(facts.owner, facts.repo, facts.author)
        except Exception as exc:
            log.warning("Author PR-count search failed (fail-open)", err=str(exc))
    tier = classify_author(association, count)
    try:
        await asyncio.to_thread(
            lambda: store.upsert_author_cache(
                repo=facts.full_name,
                author_login=facts.author,
                tier=tier.tier,
                author_association=tier.author_association,
                pr_count=count,
            )
        )
    except Exception as exc:
        log.warning("Author cache write failed (fail-open)", err=str(exc))
    return tier.tier


def webhook_sources(
    deps: HandlerDeps,
    pr: PullRequestApi,
    client: Github,
    facts: PullRequestFacts,
    last_reviewed_head_sha: str | None,
    log: Logger,
) -> GatherSources:
    store = deps.knowledge
    return GatherSources(
        commits=pr.commits,
        author_tier=(lambda: author_tier(store, pr, facts, log)) if store is not None else None,
        enrich_dep_bump=dep_enricher(client, deps.registry, log),
        knowledge_prior_findings=(
            (lambda head: store.get_prior_review_findings(facts.full_name, facts.number, head_sha=head))
            if store is not None
            else None
        ),
        last_reviewed_head_sha=last_reviewed_head_sha,
        incremental_enabled=store is not None,
        memory=deps.memory,
        feedback=store.feedback_tallies if store is not None else None,
        re_review_scope=(
            (lambda: store.re_review_scope(facts.full_name, facts.number)) if store is not None else None
        ),
        usage_analyzer=deps.usage_analyzer,
        now=deps.clock(),
    )
