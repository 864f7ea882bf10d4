"""The "Keyword parsing" bullet of the review prompt's context section (behaviour R2.8)."""

from __future__ import annotations

from typing import Any

from kodiai.review.pr_intent import BracketTag, ParsedPRIntent

__all__ = ["NO_KEYWORDS_LINE", "build_keyword_parsing_section"]

NO_KEYWORDS_LINE = "- Keyword parsing: No keywords detected"


def _where(source: str, commit_sha: str | None) -> str:
    # A commit source without a sha renders as JS string interpolation of ``undefined``.
    if source != "commit":
        return source
    return f"commit {commit_sha if commit_sha is not None else 'undefined'}"


def _tag_location(tag: BracketTag) -> str:
    return f"[{tag.tag.upper()}] in {_where(tag.source, tag.commit_sha)}"


def build_keyword_parsing_section(intent: ParsedPRIntent | dict[str, Any]) -> str:
    """Summarise the parsed intent as a Markdown bullet list (tags uppercased the JS way)."""
    data = intent if isinstance(intent, ParsedPRIntent) else ParsedPRIntent.model_validate(intent)
    if (
        not data.recognized
        and not data.unrecognized
        and data.conventional_type is None
        and not data.breaking_change_detected
    ):
        return NO_KEYWORDS_LINE
    lines = ["- Keyword parsing:"]
    recognized = [t for t in data.bracket_tags if t.recognized]
    if recognized:
        lines.append("  - recognized: " + ", ".join(_tag_location(t) for t in recognized))
    if data.unrecognized:
        lines.append("  - focus hints: " + ", ".join(f"[{tag.upper()}]" for tag in data.unrecognized))
    if data.conventional_type is not None:
        suffix = " (breaking)" if data.conventional_type.is_breaking else ""
        lines.append(f"  - conventional type: {data.conventional_type.type}{suffix}")
    for source in data.breaking_change_sources:
        lines.append(f"  - breaking change in {_where(source.source, source.commit_sha)}")
    return "\n".join(lines)
