"""Parse a finding's severity, category and title from an inline comment body (behaviour R2.31)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from kodiai.compat.js import JS_S, js_trim
from kodiai.findings import Category, ExtractedFinding, Severity

UNTITLED = "Untitled finding"
_MARKER_RE = re.compile(r"<!--\s*kodiai:review-output-key:[\s\S]*?-->")
_YAML_BLOCK_RE = re.compile(r"^```yaml[^\n]*\n([\s\S]*?)\n?```")
_TAGGED_RE = re.compile(rf"^\[(critical|major|medium|minor)\]{JS_S}*(.*)$", re.IGNORECASE | re.ASCII)
_BOLD_RE = re.compile(r"^\*\*(.+)\*\*$")
_SEVERITIES: tuple[Severity, ...] = ("critical", "major", "medium", "minor")
_CATEGORY_MAP: dict[str, Category] = {
    "security": "security",
    "correctness": "correctness",
    "error-handling": "correctness",
    "performance": "performance",
    "resource-management": "performance",
    "concurrency": "performance",
    "style": "style",
    "documentation": "documentation",
}


class FindingMetadata(BaseModel):
    """What the handler needs from one comment; ``severity`` None means the comment is not a finding."""

    severity: Severity | None
    category: Category
    title: str


def normalize_severity(value: str | None) -> Severity | None:
    """``critical|major|medium|minor`` (case-insensitive, trimmed), otherwise None."""
    if value is None:
        return None
    lowered = js_trim(value).lower()
    for severity in _SEVERITIES:
        if lowered == severity:
            return severity
    return None


def normalize_category(value: str | None) -> Category:
    """Map the model's category words onto the five categories; anything else is ``correctness``."""
    if value is None:
        return "correctness"
    return _CATEGORY_MAP.get(js_trim(value).lower(), "correctness")


def strip_review_markers(body: str) -> str:
    """Remove every review-output marker and trim."""
    return js_trim(_MARKER_RE.sub("", body))


def _parse_yaml_fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        fields[js_trim(key).lower()] = js_trim(value)
    return fields


def _title_from(line: str) -> str:
    bold = _BOLD_RE.match(line)
    title = js_trim(bold.group(1)) if bold else line
    return title or UNTITLED


def parse_finding_metadata(body: str) -> FindingMetadata:
    """Parse an enhanced-mode yaml comment or a standard ``[SEVERITY] title`` comment."""
    text = strip_review_markers(body)
    block = _YAML_BLOCK_RE.match(text)
    if block is not None:
        fields = _parse_yaml_fields(block.group(1))
        rest = text[block.end() :]
        title = UNTITLED
        for line in rest.split("\n"):
            stripped = js_trim(line)
            if stripped:
                title = _title_from(stripped)
                break
        return FindingMetadata(
            severity=normalize_severity(fields.get("severity")),
            category=normalize_category(fields.get("category")),
            title=title,
        )
    first = next((js_trim(line) for line in text.split("\n") if js_trim(line)), "")
    tagged = _TAGGED_RE.match(first)
    if tagged is not None:
        return FindingMetadata(
            severity=normalize_severity(tagged.group(1)),
            category="correctness",
            title=js_trim(tagged.group(2)) or UNTITLED,
        )
    return FindingMetadata(severity=None, category="correctness", title=UNTITLED)


def _field(comment: object, name: str) -> object:
    if isinstance(comment, Mapping):
        return comment.get(name)
    return getattr(comment, name, None)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def extract_findings(comments: Iterable[object], marker: str) -> list[ExtractedFinding]:
    """Findings from PR review comments (REST dicts or objects with ``id, path, body, start_line, line``).

    Only comments with an integer id, a string path and a string body containing ``marker`` count;
    comments whose parsed severity is None are dropped. ``start_line``/``line`` are kept when numeric.
    """
    findings: list[ExtractedFinding] = []
    for comment in comments:
        comment_id = _int_or_none(_field(comment, "id"))
        path, body = _field(comment, "path"), _field(comment, "body")
        if comment_id is None or not isinstance(path, str) or not isinstance(body, str):
            continue
        if marker not in body:
            continue
        meta = parse_finding_metadata(body)
        if meta.severity is None:
            continue
        findings.append(
            ExtractedFinding(
                comment_id=comment_id,
                file_path=path,
                title=meta.title,
                severity=meta.severity,
                category=meta.category,
                start_line=_int_or_none(_field(comment, "start_line")),
                end_line=_int_or_none(_field(comment, "line")),
            )
        )
    return findings
