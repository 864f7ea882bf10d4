"""One ``retrieval_quality`` row per retrieval (behaviour R1 step 32.7), fail-open and idempotent per delivery.

The sink is anything with ``record_retrieval_quality(record)`` (``kodiai.storage.telemetry.TelemetryStore``
in production), so this package does not depend on the storage layer. Uniqueness per delivery id is
the table's (partial UNIQUE index, INSERT OR IGNORE).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.log import get_logger

_log = get_logger("kodiai.learning.telemetry")


class RetrievalQualitySink(Protocol):
    def record_retrieval_quality(self, record: Any) -> object: ...


class RetrievalQualityRow(BaseModel):
    """A ``retrieval_quality`` row: the original's columns, then the additive confidence, feedback and
    channel columns (``migrations/telemetry/01xx_*.sql``), which stay NULL when their signal is off."""

    model_config = ConfigDict(frozen=True)

    delivery_id: str | None
    repo: str
    pr_number: int | None
    event_type: str
    top_k: int
    distance_threshold: float
    result_count: int
    avg_distance: float | None
    language_match_ratio: float | None
    threshold_method: str
    candidate_count: int | None = None
    ambiguity_cluster_size: int | None = None
    confidence_high: int | None = None
    confidence_medium: int | None = None
    confidence_low: int | None = None
    feedback_positive: int | None = None
    feedback_negative: int | None = None
    feedback_rejected: int | None = None
    """Results carrying human 👍 / 👎, and those net-negative (``0101_retrieval_feedback.sql``); None when
    the caller had no feedback source."""
    channels: str | None = None
    """``vector`` or ``vector+lexical``: the channels that fed the pool (``0102_retrieval_channels.sql``)."""
    second_stage: str | None = None
    """The learned ranker: ``used`` / ``skipped:<rule>`` (``0104_retrieval_stages.sql``; None when off)."""
    abstain_reason: str | None = None
    """Why a stage kept nothing, or the abstain stage's probability when it kept (None when off)."""


def quality_row(
    outcome: RetrievalOutcome, *, delivery_id: str | None, repo: str, pr_number: int | None, event_type: str
) -> RetrievalQualityRow:
    """The row for one retrieval. ``event_type`` is the bare event name (``pull_request``), as the original."""
    q = outcome.quality
    return RetrievalQualityRow(
        delivery_id=delivery_id,
        repo=repo,
        pr_number=pr_number,
        event_type=event_type,
        top_k=q.top_k,
        distance_threshold=q.distance_threshold,
        result_count=q.result_count,
        avg_distance=q.avg_distance,
        language_match_ratio=q.language_match_ratio,
        threshold_method=q.threshold_method,
        candidate_count=q.candidate_count,
        ambiguity_cluster_size=q.ambiguity_cluster_size,
        confidence_high=q.confidence_high,
        confidence_medium=q.confidence_medium,
        confidence_low=q.confidence_low,
        channels=q.channels,
        second_stage=q.second_stage,
        abstain_reason=q.abstain_reason,
    )


def record_retrieval_quality(
    sink: RetrievalQualitySink | None,
    outcome: RetrievalOutcome,
    *,
    enabled: bool,
    delivery_id: str | None,
    repo: str,
    pr_number: int | None,
    event_type: str,
) -> bool:
    """Write the row when telemetry is enabled; a failure is a warning, never an error. True if attempted ok."""
    if not enabled or sink is None:
        return False
    try:
        sink.record_retrieval_quality(
            quality_row(
                outcome, delivery_id=delivery_id, repo=repo, pr_number=pr_number, event_type=event_type
            )
        )
    except Exception as exc:
        _log.warning(
            "Retrieval quality telemetry write failed (fail-open)",
            delivery_id=delivery_id,
            repo=repo,
            error=f"{type(exc).__name__}: {exc}",
        )
        return False
    return True
