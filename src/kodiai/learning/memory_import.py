"""What `kodiai memory import` reads: one JSON object per line, as a memory record or as a finding of the
labelled eval corpora, turned into a record and the text to embed. Pure: no store, no embedder.

Record format (camelCase or snake_case): ``repo`` (owner/name), ``findingId`` (the finding's review-comment
id; null allowed), ``reviewId``, ``findingText``, ``severity``, ``category``, ``filePath``, ``outcome``;
optional ``owner`` and ``sourceRepo`` (derived from ``repo``), ``createdAt`` (kept as given) and ``text``
(what is embedded; default: ``[severity] [category]``, the finding text and ``File: path`` on three lines).

``severity``, ``category`` and ``outcome`` take the values the server itself stores (:data:`ALLOWED`);
anything else is an error naming the closest allowed value. An unknown outcome used to land in the store
and then counted under no outcome in ``memory stats`` and never matched a retrieval filter.

Corpus format (the eval sets' ``corpus.jsonl``): ``id`` (a string), ``repo``, ``finding_text``,
``file_path``, ``category``, optional ``severity`` (null allowed), ``created_at``; other keys are ignored.
Each becomes an ``accepted`` memory whose finding id is a stable number derived from ``id`` (so a second
import of the same corpus skips what is already there), embedded as the eval harness embeds it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any, get_args

from pydantic import ValidationError

from kodiai.findings import Category, Severity
from kodiai.learning.memory_schema import InvalidNameError, validate_repo
from kodiai.learning.setup import finding_memory_text
from kodiai.learning.types import LearningMemoryRecord, MemoryOutcome

CORPUS_KEYS = frozenset({"id", "finding_text", "file_path"})
#: Stored for corpus findings without a severity (the record needs one; the embedded text omits it).
UNKNOWN_SEVERITY = "unknown"

#: The values of the enumerated fields: what the review handler writes (its four severities and five
#: categories, the feedback outcomes), plus ``unknown``, the severity a corpus line without one is stored
#: with (so an exported store imports again).
ALLOWED: dict[str, tuple[str, ...]] = {
    "severity": (*get_args(Severity), UNKNOWN_SEVERITY),
    "category": get_args(Category),
    "outcome": get_args(MemoryOutcome),
}
#: Words other tools (and the model's own category words) use, and the value of ours they mean.
_SYNONYMS: dict[str, dict[str, str]] = {
    "severity": {
        "blocker": "critical",
        "high": "major",
        "error": "major",
        "moderate": "medium",
        "warning": "medium",
        "low": "minor",
        "info": "minor",
        "nit": "minor",
    },
    "category": {
        "bug": "correctness",
        "error-handling": "correctness",
        "concurrency": "performance",
        "resource-management": "performance",
        "perf": "performance",
        "docs": "documentation",
    },
    "outcome": {"thumbs-up": "thumbs_up", "thumbs-down": "thumbs_down"},
}


class ImportLineError(ValueError):
    """A line that cannot be imported; the message names each bad field."""


def corpus_finding_id(corpus_id: str) -> int:
    """A stable positive 63-bit id for a corpus finding's string id."""
    return int.from_bytes(hashlib.sha256(corpus_id.encode()).digest()[:8], "big") >> 1


def closest_allowed(field: str, value: str) -> str | None:
    """The allowed value a wrong one most likely meant: same word in another case, a known synonym, or
    the nearest spelling (``secrity`` → ``security``); None when nothing is close."""
    allowed = ALLOWED[field]
    lowered = value.strip().lower()
    if lowered in allowed:
        return lowered
    if lowered in _SYNONYMS[field]:
        return _SYNONYMS[field][lowered]
    close = difflib.get_close_matches(lowered, allowed, n=1, cutoff=0.6)
    return close[0] if close else None


def enum_errors(fields: dict[str, Any]) -> list[str]:
    """One message per enumerated field whose (string) value is not allowed; other types are left to the
    model's own errors."""
    errors = []
    for field, allowed in ALLOWED.items():
        value = fields.get(field)
        if not isinstance(value, str) or value in allowed:
            continue
        hint = closest_allowed(field, value)
        suggestion = f"; did you mean '{hint}'?" if hint else ""
        errors.append(f"'{field}': {json.dumps(value)} is not one of {', '.join(allowed)}{suggestion}")
    return errors


def _field_errors(exc: ValidationError) -> list[str]:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "record"
        parts.append(f"'{where}': {error['msg']}")
    return parts


def _from_corpus(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    missing = [k for k in ("repo", "category") if not isinstance(data.get(k), str) or not data.get(k)]
    bad = [k for k in ("id", "finding_text", "file_path") if not isinstance(data.get(k), str)]
    if missing or bad:
        raise ImportLineError(
            "; ".join([*(f"'{k}': missing" for k in missing), *(f"'{k}': must be a string" for k in bad)])
        )
    severity = data.get("severity")
    head = f"[{severity}] [{data['category']}]" if severity else f"[{data['category']}]"
    text = f"{head}\n{data['finding_text']}\nFile: {data['file_path']}"
    fields = {
        "repo": data["repo"],
        "owner": data.get("owner") or str(data["repo"]).split("/")[0],
        "finding_id": corpus_finding_id(data["id"]),
        "review_id": None,
        "source_repo": data["repo"],
        "finding_text": data["finding_text"],
        "severity": severity or UNKNOWN_SEVERITY,
        "category": data["category"],
        "file_path": data["file_path"],
        "outcome": "accepted",
        "created_at": data.get("created_at"),
    }
    return fields, text


def parse_import_line(
    line: str, *, embedding_model: str, embedding_dim: int
) -> tuple[LearningMemoryRecord, str]:
    """The record and the text to embed for one line; :class:`ImportLineError` names what is wrong."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ImportLineError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ImportLineError("expected a JSON object")
    text: object
    if data.keys() >= CORPUS_KEYS and "findingId" not in data and "finding_id" not in data:
        fields, text = _from_corpus(data)
    else:
        fields = dict(data)
        text = fields.pop("text", None)
        if "owner" not in fields and isinstance(fields.get("repo"), str):
            fields["owner"] = fields["repo"].split("/")[0]
        if "source_repo" not in fields and "sourceRepo" not in fields and "repo" in fields:
            fields["source_repo"] = fields["repo"]
    for key in ("embeddingModel", "embeddingDim"):
        fields.pop(key, None)
    fields.update(embedding_model=embedding_model, embedding_dim=embedding_dim)
    problems = enum_errors(fields)
    try:
        record = LearningMemoryRecord.model_validate(fields)
        validate_repo(record.repo)
    except ValidationError as exc:
        raise ImportLineError("; ".join([*_field_errors(exc), *problems])) from None
    except InvalidNameError as exc:
        raise ImportLineError("; ".join([f"'repo': {exc}", *problems])) from None
    if problems:
        raise ImportLineError("; ".join(problems))
    if text is None:
        text = finding_memory_text(record.severity, record.category, record.finding_text, record.file_path)
    if not isinstance(text, str) or not text.strip():
        raise ImportLineError("'text': must be a non-empty string")
    return record, text
