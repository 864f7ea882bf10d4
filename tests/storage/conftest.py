"""Storage fixtures: real SQLite files in a tmp dir, copies of the original's fixture databases, and
``db_backend`` (every parametrised storage test runs on SQLite and on a real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.fixture_paths import copy_fixture_db
from support.db_backends import db_backend  # noqa: F401  (the fixture)


@pytest.fixture
def fixture_telemetry_db(tmp_path: Path) -> Path:
    """A writable copy of the original's Phase 56 telemetry DB (25 executions + 25 retrieval rows)."""
    return copy_fixture_db("telemetry", tmp_path)


@pytest.fixture
def fixture_knowledge_db(tmp_path: Path) -> Path:
    """A writable copy of the original's Phase 56 knowledge DB."""
    return copy_fixture_db("knowledge", tmp_path)
