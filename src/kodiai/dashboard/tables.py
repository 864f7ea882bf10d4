"""A page's tables: what the templates render and what CSV/JSON export writes, from the same values."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Table:
    """``name``: the export's file name (``overview-by-repo``); ``rows``: one tuple per row, in ``columns``
    order (numbers stay numbers, so the export keeps full precision and the template formats them)."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def to_csv(table: Table) -> str:
    """RFC 4180 CSV with a header row; a cell starting with ``= + - @`` is prefixed with ``'`` so that a
    spreadsheet never runs a repository's text (a finding title) as a formula."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def to_json(table: Table) -> str:
    return json.dumps({"table": table.name, "columns": list(table.columns), "rows": table.as_dicts()})


def find(tables: Sequence[Table], name: str) -> Table | None:
    return next((t for t in tables if t.name == name), None)
