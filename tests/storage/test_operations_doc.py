"""Every ```sql example in docs/operations.md runs against an upgraded copy of the original's database."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from kodiai.storage.migrations import apply_migrations
from storage.fixture_paths import copy_fixture_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def _db_of(block: str) -> str:
    """Each example starts with ``-- db: telemetry`` or ``-- db: knowledge``."""
    match = re.match(r"-- db: (telemetry|knowledge)\n", block)
    assert match, f"example lacks a '-- db:' first line: {block[:60]!r}"
    return match.group(1)


def test_doc_has_sql_examples_for_both_databases() -> None:
    dbs = [_db_of(b) for b in BLOCKS]
    assert len(dbs) >= 8
    assert {"telemetry", "knowledge"} <= set(dbs)
    assert any("threshold_method" in b and "GROUP BY threshold_method" in b for b in BLOCKS)


@pytest.mark.parametrize("sql", BLOCKS, ids=[f"example{i + 1}" for i in range(len(BLOCKS))])
def test_sql_example_runs_on_upgraded_fixture(tmp_path: Path, sql: str) -> None:
    name = _db_of(sql)
    path = copy_fixture_db(name, tmp_path)
    apply_migrations(path, name)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cur = conn.execute(sql)
        assert cur.description is not None
        rows = cur.fetchall()
    finally:
        conn.close()
    if name == "telemetry" and "-30 days" not in sql and "-7 days" not in sql:
        assert rows, "the fixture has 25 + 25 telemetry rows: the example must find some"
