"""Labelled retrieval data in the format of ``shared/eval-dev`` (``corpus.jsonl`` + ``queries.jsonl``).

Each corpus line is a past finding (a memory); each query line is a PR with its retrieval query text and
its labels: ``relevant_ids`` (grade 2) and ``graded`` (id → grade, 1 or 2). Track B lives under
``<dir>/rereview/``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
REREVIEW_DIR = "rereview"
REREVIEW_TRACK = "rereview"

_M = TypeVar("_M", bound=BaseModel)


class DataError(ValueError):
    """The data directory or one of its lines is unusable (the message names the file and line)."""


def _parse_time(value: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class FindingSource(BaseModel):
    """Where a finding came from; ``pr`` is the PR whose branch it was made on (track B), if any."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    pr: int | None = None


class EvalFinding(BaseModel):
    """One past finding: becomes one learned memory."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    repo: str
    owner: str
    finding_text: str
    file_path: str
    category: str
    severity: str | None = None
    created_at: datetime
    source: FindingSource | None = None

    @field_validator("created_at", mode="before")
    @classmethod
    def _check_time(cls, value: object) -> object:
        return _parse_time(value) if isinstance(value, str) else value

    def memory_text(self) -> str:
        """The embedded text of behaviour R1 step 50; the ``[severity]`` tag is left out when there is none."""
        head = f"[{self.severity}] [{self.category}]" if self.severity else f"[{self.category}]"
        return f"{head}\n{self.finding_text}\nFile: {self.file_path}"


class EvalQuery(BaseModel):
    """One PR: the retrieval query as the review builds it, and its relevance labels."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    repo: str
    owner: str
    created_at: datetime
    query_text: str
    pr_number: int | None = None
    languages: list[str] = Field(default_factory=list)
    relevant_ids: list[str] = Field(default_factory=list)
    graded: dict[str, int] = Field(default_factory=dict)
    file_paths: list[str] = Field(default_factory=list)
    """The PR's changed files (as its retrieval query lists them); the second stage's file evidence."""

    @field_validator("created_at", mode="before")
    @classmethod
    def _check_time(cls, value: object) -> object:
        return _parse_time(value) if isinstance(value, str) else value

    def grades(self) -> dict[str, int]:
        """id → grade; every ``relevant_ids`` entry is grade 2 even if ``graded`` misses it."""
        out = {k: int(v) for k, v in self.graded.items() if int(v) > 0}
        for rid in self.relevant_ids:
            out[rid] = 2
        return out


class EvalDataset(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    findings: list[EvalFinding]
    queries: list[EvalQuery]

    @property
    def rereview(self) -> bool:
        """Track B: every query is a re-review of its PR (the same-PR scope applies)."""
        return self.name == REREVIEW_TRACK

    @property
    def scoped(self) -> bool:
        """Whether the re-review scope can run: track B with every query's ``pr_number`` (without it the
        data cannot say which memories the PR's own earlier reviews wrote)."""
        return self.rereview and all(q.pr_number is not None for q in self.queries)


def _read_jsonl(path: Path, model: type[_M]) -> list[_M]:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    out: list[_M] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                out.append(model.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError, ValueError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise DataError(f"{path}:{number}: {first}") from exc
    return out


def load_dataset(data_dir: str | Path, *, rereview: bool = False) -> EvalDataset:
    """Read and check one track. Duplicate finding ids are an error (labels would be ambiguous)."""
    root = Path(data_dir)
    if rereview:
        root = root / REREVIEW_DIR
    if not root.is_dir():
        raise DataError(f"{root}: not a directory")
    findings = _read_jsonl(root / CORPUS_FILE, EvalFinding)
    queries = _read_jsonl(root / QUERIES_FILE, EvalQuery)
    seen: set[str] = set()
    for finding in findings:
        if finding.id in seen:
            raise DataError(f"{root / CORPUS_FILE}: duplicate finding id {finding.id!r}")
        seen.add(finding.id)
    if not queries:
        raise DataError(f"{root / QUERIES_FILE}: no queries")
    name = REREVIEW_TRACK if rereview else "past-fixes"
    return EvalDataset(name=name, findings=findings, queries=queries)
