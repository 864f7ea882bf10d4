"""`kodiai telemetry` reports read PostgreSQL when ``DATABASE_URL`` is set, and print the same report there as
on the SQLite files over the same rows; ``--db`` on the command line still names a file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from support.postgres import empty_all_tables
from support.seed_stores import NOW, seed_knowledge, seed_telemetry

WEEK_AGO = (NOW - timedelta(days=7)).strftime("%Y-%m-%d")  # absolute: both runs filter on the same cut
REPORTS = [
    ["usage", "--json"],
    ["usage", "--json", "--since", WEEK_AGO, "--repo", "acme/api"],
    ["retrieval", "--json"],
    ["retrieval", "--json", "--by", "week", "--since", WEEK_AGO],
    ["stats", "--json", "--repo", "acme/api"],
    ["stats", "--json", "--repo", "acme/api", "--since", WEEK_AGO],
    ["trends", "--json", "--repo", "acme/api", "--days", "7"],
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, _postgres_migrated: str) -> Iterator[tuple[Path, str]]:
    tmp = tmp_path_factory.mktemp("reports")
    empty_all_tables(_postgres_migrated)
    for target in (str(tmp / "kodiai-telemetry.db"), _postgres_migrated):
        seed_telemetry(target)
    for target in (str(tmp / "kodiai-knowledge.db"), _postgres_migrated):
        seed_knowledge(target)
    try:
        yield tmp, _postgres_migrated
    finally:
        empty_all_tables(_postgres_migrated)


def _report(args: list[str], env: dict[str, str]) -> object:
    result = CliRunner().invoke(app, ["telemetry", *args], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    if isinstance(report, dict):
        report.pop("generated", None)  # when the report ran
    return _rounded(report)


def _rounded(value: object) -> object:
    """Averages summed in another order differ in the last bits (0.33 vs 0.32999999999999996)."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.mark.parametrize("args", REPORTS, ids=lambda a: " ".join(a))
def test_report_is_the_same_on_postgres(seeded: tuple[Path, str], args: list[str]) -> None:
    tmp, url = seeded
    on_sqlite = _report(
        args,
        {
            "DATABASE_URL": "",
            "TELEMETRY_DB_PATH": str(tmp / "kodiai-telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "kodiai-knowledge.db"),
        },
    )
    on_postgres = _report(args, {"DATABASE_URL": url, "TELEMETRY_DB_PATH": "", "KNOWLEDGE_DB_PATH": ""})
    assert on_postgres == on_sqlite
    assert on_sqlite not in ({}, [], None)


def test_db_on_the_command_line_wins_over_database_url(seeded: tuple[Path, str], tmp_path: Path) -> None:
    _, url = seeded
    result = CliRunner().invoke(
        app, ["telemetry", "usage", "--json", "--db", str(tmp_path / "none.db")], env={"DATABASE_URL": url}
    )
    assert result.exit_code == 1 and "Database not found" in result.output


def test_a_postgres_database_without_the_tables_is_a_clear_error(empty_postgres_url: str) -> None:
    result = CliRunner().invoke(app, ["telemetry", "usage"], env={"DATABASE_URL": empty_postgres_url})
    assert result.exit_code == 1
    assert (
        "No telemetry tables in postgresql://127.0.0.1:" in result.output
        and "kodiai_test" not in result.output
    )
