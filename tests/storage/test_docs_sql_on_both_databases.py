"""Every SQL example in README.md and docs/*.md that targets the telemetry or knowledge database runs
unchanged on SQLite and on PostgreSQL (``DATABASE_URL``), on the same rows, with the same answer.

Both databases are filled through the stores (the rows a server writes), with the same timestamps, so an
example's answer can be compared row for row. Each example names its database (``-- db: telemetry``, or
the default file name on its first line or just before the block; tests/test_docs_stand_alone.py enforces
that).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import sqlparse

from support.postgres import empty_all_tables
from support.seed_stores import open_target, seed_knowledge, seed_telemetry

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMES = re.compile(r"kodiai-(telemetry|knowledge|jobs)\.db|^-- db: (telemetry|knowledge|jobs)\b")


def _examples() -> list[tuple[str, str, str]]:
    """``(id, database, statement)`` for each statement of each ```sql block naming telemetry or knowledge."""
    out: list[tuple[str, str, str]] = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "```sql":
                continue
            end = lines.index("```", i + 1)
            block = "\n".join(lines[i + 1 : end])
            named = [m for near in [*lines[max(0, i - 2) : i], lines[i + 1]] for m in NAMES.finditer(near)]
            database = next((m.group(1) or m.group(2) for m in named), None)
            if database not in ("telemetry", "knowledge"):
                continue
            for n, statement in enumerate(
                s for s in sqlparse.split(block) if sqlparse.format(s, strip_comments=True).strip()
            ):
                out.append(
                    (f"{page.relative_to(ROOT)}:{i + 1}#{n + 1}", database, statement.strip().rstrip(";"))
                )
    return out


EXAMPLES = _examples()


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory, _postgres_migrated: str
) -> Iterator[dict[str, dict[str, str]]]:
    """The same rows in SQLite files and in the session's PostgreSQL database (emptied before and after)."""
    tmp = tmp_path_factory.mktemp("docs-sql")
    empty_all_tables(_postgres_migrated)
    targets = {
        "sqlite": {
            "telemetry": str(tmp / "kodiai-telemetry.db"),
            "knowledge": str(tmp / "kodiai-knowledge.db"),
        },
        "postgres": {"telemetry": _postgres_migrated, "knowledge": _postgres_migrated},
    }
    for backend in targets.values():
        seed_telemetry(backend["telemetry"])
        seed_knowledge(backend["knowledge"])
    try:
        yield targets
    finally:
        empty_all_tables(_postgres_migrated)


def _run(target: str, name: str, sql: str) -> list[tuple[Any, ...]]:
    db = open_target(target, name)
    try:
        return db.fetch_all(sql)
    finally:
        db.close()


def _normal(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """SQLite's view of a row: booleans are 1/0, a date is its text, floats compared to 6 places."""

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, date):
            return v.isoformat()
        if isinstance(v, float):
            return round(v, 6)
        return v

    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)


def test_the_docs_have_examples_for_both_databases() -> None:
    databases = {db for _, db, _ in EXAMPLES}
    assert databases == {"telemetry", "knowledge"}
    assert len(EXAMPLES) >= 15
    assert any(p.startswith("README.md") for p, _, _ in EXAMPLES)


@pytest.mark.parametrize(("where", "database", "sql"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_gives_the_same_answer_on_sqlite_and_postgres(
    seeded: dict[str, dict[str, str]], where: str, database: str, sql: str
) -> None:
    on_sqlite = _run(seeded["sqlite"][database], database, sql)
    on_postgres = _run(seeded["postgres"][database], database, sql)
    assert on_sqlite and on_postgres, f"{where}: the seeded rows must give the example something to show"
    if "_yoyo_migration" in sql:  # bookkeeping: when each id was applied differs, and one PG database has all
        return
    assert _normal(on_postgres) == _normal(on_sqlite), where
