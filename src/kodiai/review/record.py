"""Record: telemetry, knowledge and learned memory of a run (behaviour R1 steps 32.7, 47–50).

All fail-open: a review that reached GitHub is never undone because a database write failed. The
learned-memory write closes the learning loop inside the product: the next PR of the same repo
retrieves these findings. Unlike the original's fire-and-forget promise it is awaited (in a worker
thread), so the lane's next job already sees it.

Issue 23: only a PR author with write permission (looked up on GitHub, fail-closed) teaches the memory
directly. Another author's findings are held back in the knowledge DB (``pending_memories``), where no
retrieval sees them, until a writer confirms them (:mod:`kodiai.feedback.trust`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping

from kodiai.config import RepoConfig
from kodiai.config.snapshot import config_snapshot
from kodiai.execution.types import ExecutionResult
from kodiai.github.permissions import AccessLevel, access_level
from kodiai.github.rest import RestApi
from kodiai.handler_kit.deps import LearnedMemory
from kodiai.handler_kit.fail_open import fail_open
from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.setup import finding_memory_text
from kodiai.learning.telemetry import quality_row
from kodiai.learning.types import LearningMemoryRecord
from kodiai.log import Logger
from kodiai.review.postprocess import ProcessedReview
from kodiai.review.pull_request import PullRequestFacts
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import (
    FindingRecord,
    GlobalPatternRecord,
    PendingMemoryRecord,
    ReviewRecord,
    SuppressionLogEntry,
    confidence_band,
)
from kodiai.storage.telemetry import ExecutionRecord, TelemetryStore

COMMENT_SURFACE = "pull_request_review_comment"


def run_conclusion(result: ExecutionResult) -> str:
    """``executions.conclusion``: ``timeout_partial`` / ``timeout`` on timeouts, else the run's."""
    if result.is_timeout:
        return "timeout_partial" if result.published else "timeout"
    return result.conclusion


async def record_retrieval(
    telemetry: TelemetryStore | None,
    outcome: RetrievalOutcome,
    *,
    enabled: bool,
    facts: PullRequestFacts,
    delivery_id: str,
    event_name: str,
    log: Logger,
    feedback_counts: Mapping[str, int] | None = None,
) -> None:
    """Step 32.7: one ``retrieval_quality`` row (event type is the bare event name, as the original),
    with the results' feedback counts when the retrieval read them."""
    if not enabled or telemetry is None:
        return
    row = quality_row(
        outcome, delivery_id=delivery_id, repo=facts.full_name, pr_number=facts.number, event_type=event_name
    ).model_copy(update=dict(feedback_counts or {}))
    await fail_open(
        log,
        "retrieval-telemetry",
        lambda: asyncio.to_thread(telemetry.record_retrieval_quality, row),
        None,
        "Retrieval quality telemetry write failed (fail-open)",
    )


async def record_execution(
    telemetry: TelemetryStore | None,
    result: ExecutionResult,
    *,
    facts: PullRequestFacts,
    delivery_id: str,
    action: str,
    log: Logger,
) -> None:
    """Step 47: one ``executions`` row per executed run (when ``telemetry.enabled``)."""
    if telemetry is None:
        return
    record = ExecutionRecord(
        delivery_id=delivery_id,
        repo=facts.full_name,
        pr_number=facts.number,
        event_type=f"pull_request.{action}",
        model=result.model or "unknown",
        input_tokens=result.input_tokens or 0,
        output_tokens=result.output_tokens or 0,
        cache_read_tokens=result.cache_read_tokens or 0,
        cache_creation_tokens=result.cache_creation_tokens or 0,
        duration_ms=result.duration_ms or 0,
        cost_usd=result.cost_usd or 0.0,
        conclusion=run_conclusion(result),
        session_id=result.session_id,
        num_turns=result.num_turns,
        stop_reason=result.stop_reason,
    )
    await fail_open(
        log,
        "telemetry",
        lambda: asyncio.to_thread(telemetry.record, record),
        None,
        "Telemetry write failed (fail-open)",
    )


def _write_knowledge(
    store: KnowledgeStore,
    config: RepoConfig,
    result: ExecutionResult,
    processed: ProcessedReview,
    *,
    facts: PullRequestFacts,
    delivery_id: str,
    files_analyzed: int,
    lines_changed: int | float,
    review_output_key: str,
    log: Logger,
) -> int:
    counts = processed.counts
    review_id = store.record_review(
        ReviewRecord(
            repo=facts.full_name,
            pr_number=facts.number,
            head_sha=facts.head_sha,
            delivery_id=delivery_id,
            files_analyzed=files_analyzed,
            lines_changed=int(lines_changed),
            findings_critical=counts.critical,
            findings_major=counts.major,
            findings_medium=counts.medium,
            findings_minor=counts.minor,
            findings_total=len(processed.findings),
            suppressions_applied=processed.suppressions_applied,
            config_snapshot=config_snapshot(config),
            duration_ms=result.duration_ms,
            model=config.model,
            conclusion=result.conclusion,
        )
    )
    store.record_findings(
        [
            FindingRecord(
                review_id=review_id,
                comment_id=f.comment_id,
                comment_surface=COMMENT_SURFACE,
                review_output_key=review_output_key,
                file_path=f.file_path,
                start_line=f.start_line,
                end_line=f.end_line,
                severity=f.severity,
                category=f.category,
                confidence=int(f.confidence),
                title=f.title,
                suppressed=f.suppressed,
                suppression_pattern=f.suppression_pattern,
            )
            for f in processed.findings
        ]
    )
    store.record_suppression_log(
        [
            SuppressionLogEntry(review_id=review_id, pattern=pattern, matched_count=count)
            for pattern, count in processed.suppression_match_counts.items()
        ]
    )
    if config.knowledge.share_global:
        aggregates = Counter(
            (f.severity, f.category, confidence_band(f.confidence), f.fingerprint) for f in processed.findings
        )
        for (severity, category, band, fingerprint), count in aggregates.items():
            try:
                store.record_global_pattern(
                    GlobalPatternRecord(
                        severity=severity,
                        category=category,
                        confidence_band=band,
                        pattern_fingerprint=fingerprint,
                        count=count,
                    )
                )
            except Exception as exc:
                log.warning("Global pattern write failed (fail-open)", err=str(exc))
    return review_id


async def record_knowledge(
    store: KnowledgeStore | None,
    config: RepoConfig,
    result: ExecutionResult,
    processed: ProcessedReview,
    *,
    facts: PullRequestFacts,
    delivery_id: str,
    files_analyzed: int,
    lines_changed: int | float,
    review_output_key: str,
    log: Logger,
) -> int | None:
    """Step 48: the ``reviews`` row, its findings, the suppression log and global patterns."""
    if store is None:
        return None
    return await fail_open(
        log,
        "knowledge-store",
        lambda: asyncio.to_thread(
            _write_knowledge,
            store,
            config,
            result,
            processed,
            facts=facts,
            delivery_id=delivery_id,
            files_analyzed=files_analyzed,
            lines_changed=lines_changed,
            review_output_key=review_output_key,
            log=log,
        ),
        None,
        "Knowledge store write failed (fail-open)",
    )


def _write_memories(
    memory: LearnedMemory, facts: PullRequestFacts, processed: ProcessedReview, review_id: int | None
) -> tuple[int, int]:
    embeddings = memory.embeddings
    texts = [finding_memory_text(f.severity, f.category, f.title, f.file_path) for f in processed.findings]
    vectors = embeddings.generate_many(texts, "document")
    records: list[LearningMemoryRecord] = []
    kept = []
    for finding, vector in zip(processed.findings, vectors, strict=True):
        if vector is None:
            continue
        records.append(
            LearningMemoryRecord(
                repo=facts.full_name,
                owner=facts.owner,
                finding_id=finding.comment_id,
                review_id=review_id or 0,
                source_repo=facts.full_name,
                finding_text=finding.title,
                severity=finding.severity,
                category=finding.category,
                file_path=finding.file_path,
                outcome="suppressed" if finding.suppressed else "accepted",
                embedding_model=embeddings.model,
                embedding_dim=embeddings.dimensions,
                stale=False,
            )
        )
        kept.append(vector)
    failed = len(processed.findings) - len(records)
    if records:
        memory.store.write_memories(records, kept)
    return len(records), failed


def pending_records(
    facts: PullRequestFacts, processed: ProcessedReview, review_id: int | None, access: AccessLevel
) -> list[PendingMemoryRecord]:
    """The held-back form of each finding: what the memory row will be once a writer confirms it."""
    return [
        PendingMemoryRecord(
            repo=facts.full_name,
            owner=facts.owner,
            pr_number=facts.number,
            review_id=review_id,
            comment_id=f.comment_id,
            finding_text=f.title,
            severity=f.severity,
            category=f.category,
            file_path=f.file_path,
            outcome="suppressed" if f.suppressed else "accepted",
            author=facts.author or "unknown",
            author_access=access,
        )
        for f in processed.findings
    ]


async def hold_back(
    knowledge: KnowledgeStore | None,
    facts: PullRequestFacts,
    processed: ProcessedReview,
    review_id: int | None,
    access: AccessLevel,
    log: Logger,
) -> int:
    """Store an untrusted author's findings as pending; without a knowledge DB they are not kept at all."""
    if knowledge is None:
        log.info(
            "Learning memories not written: PR author lacks write permission and no knowledge store holds them",
            gate="learning-memory-write",
            authorAccess=access,
        )
        return 0
    rows = pending_records(facts, processed, review_id, access)
    held = await fail_open(
        log,
        "learning-memory-hold",
        lambda: asyncio.to_thread(knowledge.record_pending_memories, rows),
        0,
        "Holding back learning memories failed (fail-open: none written)",
    )
    log.info(
        "Learning memories held back until a writer confirms them",
        gate="learning-memory-write",
        authorAccess=access,
        held=held,
    )
    return held


async def record_memories(
    memory: LearnedMemory | None,
    facts: PullRequestFacts,
    processed: ProcessedReview,
    review_id: int | None,
    log: Logger,
    *,
    knowledge: KnowledgeStore | None,
    rest: RestApi,
) -> int:
    """Step 50: one learned memory per processed finding (outcome ``suppressed`` or ``accepted``) when the
    PR's author has write permission; otherwise the findings are held back (:func:`hold_back`). Returns
    the memories written."""
    if memory is None or not processed.findings:
        return 0
    access = await access_level(rest, facts.owner, facts.repo, facts.author)
    if access != "write":
        await hold_back(knowledge, facts, processed, review_id, access, log)
        return 0
    written, failed = await fail_open(
        log,
        "learning-memory-write",
        lambda: asyncio.to_thread(_write_memories, memory, facts, processed, review_id),
        (0, len(processed.findings)),
        "Learning memory write failed (fail-open)",
    )
    if written or failed:
        log.info("Learning memories written", gate="learning-memory-write", written=written, failed=failed)
    return written
