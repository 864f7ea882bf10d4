"""The text embedded to search learned memory for a PR (behaviour R2.21)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kodiai.compat.js import utf16_slice

MAX_BODY_CHARS = 200
MAX_LANGUAGES = 5
MAX_RISK_SIGNALS = 3
MAX_FILE_PATHS = 15
MAX_QUERY_CHARS = 800


class RetrievalQuerySignals(BaseModel):
    """The PR signals the query is built from."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    pr_title: str
    pr_body: str | None = None
    conventional_type: str | None = None
    detected_languages: list[str] = Field(default_factory=list)
    risk_signals: list[str] = Field(default_factory=list)
    author_tier: str | None = None
    top_file_paths: list[str] = Field(default_factory=list)


def build_retrieval_query(signals: RetrievalQuerySignals | dict[str, object]) -> str:
    """Title, body excerpt, ``[type]``, languages, risks, author tier and paths, newline-joined, ≤ 800 chars."""
    s = (
        signals
        if isinstance(signals, RetrievalQuerySignals)
        else RetrievalQuerySignals.model_validate(signals)
    )
    parts = [s.pr_title]
    if s.pr_body:
        parts.append(utf16_slice(s.pr_body, 0, MAX_BODY_CHARS))
    if s.conventional_type:
        parts.append(f"[{s.conventional_type}]")
    if s.detected_languages:
        parts.append(f"Languages: {', '.join(s.detected_languages[:MAX_LANGUAGES])}")
    if s.risk_signals:
        parts.append(f"Risk: {', '.join(s.risk_signals[:MAX_RISK_SIGNALS])}")
    if s.author_tier:
        parts.append(f"Author: {s.author_tier}")
    parts.extend(s.top_file_paths[:MAX_FILE_PATHS])
    return utf16_slice("\n".join(parts), 0, MAX_QUERY_CHARS)
