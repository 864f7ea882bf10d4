"""What `kodiai memory import` reads: one JSON object per line, as a memory record or as a finding of the
labelled eval corpora, turned into a record and the text to embed. Pure: no store, no embedder.

Record format (camelCase or snake_case): ``repo`` (owner/name), ``findingId`` (the finding's review-comment
id; null allowed), ``reviewId``, ``findingText``, ``severity``, ``category``, ``filePath``, ``outcome``
(accepted, suppressed, thumbs_up, thumbs_down); optional ``owner`` and ``sourceRepo`` (derived from
``repo``), ``createdAt`` (kept as given) and ``text`` (what is embedded; default: ``[severity] [category]``,
the finding text and ``File: path`` on three lines).

Corpus format (the eval sets' ``corpus.jsonl``): ``id`` (a string), ``repo``, ``finding_text``,
``file_path``, ``category``, optional ``severity`` (null allowed), ``created_at``; other keys are ignored.
Each becomes an ``accepted`` memory whose finding id is a stable number derived from ``id`` (so a second
import of the same corpus skips what is already there), embedded as the eval harness embeds it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from kodiai.learning.memory_schema import InvalidNameError, validate_repo
from kodiai.learning.setup import finding_memory_text
from kodiai.learning.types import LearningMemoryRecord

CORPUS_KEYS = frozenset({"id", "finding_text", "file_path"})
#: Stored for corpus findings without a severity (the record needs one; the embedded text omits it).
UNKNOWN_SEVERITY = "unknown"


class ImportLineError(ValueError):
    """A line that cannot be imported; the message names each bad field."""


def corpus_finding_id(corpus_id: str) -> int:
    """A stable positive 63-bit id for a corpus finding's string id."""
    return int.from_bytes(hashlib.sha256(corpus_id.encode()).digest()[:8], "big") >> 1


def _field_errors(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "record"
        parts.append(f"'{where}': {error['msg']}")
    return "; ".join(parts)


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
    try:
        record = LearningMemoryRecord.model_validate(fields)
        validate_repo(record.repo)
    except ValidationError as exc:
        raise ImportLineError(_field_errors(exc)) from None
    except InvalidNameError as exc:
        raise ImportLineError(f"'repo': {exc}") from None
    if text is None:
        text = finding_memory_text(record.severity, record.category, record.finding_text, record.file_path)
    if not isinstance(text, str) or not text.strip():
        raise ImportLineError("'text': must be a non-empty string")
    return record, text
