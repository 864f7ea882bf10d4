"""Recency weighting: older memories drift away, severe ones only so far (behaviour R2.23)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.learning.types import RerankedResult

_MS_PER_DAY = 86_400_000
# Severities outside ``floor_severities`` get half the floor (0.15 with the defaults), as in the original.
OTHER_SEVERITY_FLOOR_SHARE = 0.5


class RecencyConfig(BaseModel):
    """Exponential decay with a half-life, floored for the listed severities; the defaults are the original's."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    half_life_days: float = 90
    floor_multiplier: float = 0.3
    floor_severities: list[str] = Field(default_factory=lambda: ["critical", "major"])


DEFAULT_RECENCY_CONFIG = RecencyConfig()


def parse_created_at(value: str | None) -> datetime | None:
    """Parse a memory's ``created_at``: ISO 8601 (``Z`` or an offset) or SQLite ``YYYY-MM-DD HH:MM:SS`` (UTC).

    A value without a zone is UTC, which is what SQLite's ``datetime('now')`` writes. Unparseable → None.
    """
    if not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def recency_multiplier(
    created_at: str | None, severity: str, now: datetime, config: RecencyConfig = DEFAULT_RECENCY_CONFIG
) -> float:
    """``2 - m`` where ``m = max(exp(-ln2/half_life * age_days), floor)``; missing/unparseable date → age 0.

    ``floor`` is ``floor_multiplier`` for the listed severities (case-insensitive) and half of it otherwise.
    """
    created = parse_created_at(created_at)
    age_days = 0.0
    if created is not None:
        # The original works in whole milliseconds (JS Date).
        delta_ms = math.floor((now - created).total_seconds() * 1000 + 0.5)
        age_days = max(0.0, delta_ms / _MS_PER_DAY)
    decay = math.log(2) / config.half_life_days
    weight = math.exp(-decay * age_days)
    floor = config.floor_multiplier
    if severity.lower() not in config.floor_severities:
        floor *= OTHER_SEVERITY_FLOOR_SHARE
    weight = max(weight, floor)
    return 2 - weight


def apply_recency_weighting(
    results: Sequence[RerankedResult],
    now: datetime | None = None,
    config: RecencyConfig | dict[str, object] | None = None,
) -> list[RerankedResult]:
    """New list with ``adjusted_distance *= (2 - m)``, re-sorted ascending (stable); input untouched."""
    cfg = config if isinstance(config, RecencyConfig) else RecencyConfig.model_validate(config or {})
    at = now if now is not None else datetime.now(UTC)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    weighted = [
        r.model_copy(
            update={
                "adjusted_distance": r.adjusted_distance
                * recency_multiplier(r.record.created_at, r.record.severity, at, cfg)
            }
        )
        for r in results
    ]
    weighted.sort(key=lambda r: r.adjusted_distance)
    return weighted
