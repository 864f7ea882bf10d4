"""`kodiai config validate` exit statuses (issue 24): 0 valid, 1 unusable (or --strict advisories),
2 no such path, 3 a guarded setting failed closed, 4 a section reset to its defaults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("text", "plain", "strict"),
    [
        pytest.param("review:\n  maxComments: 5\n", 0, 0, id="valid"),
        pytest.param("review:\n  maxComment: 5\n", 0, 1, id="unknown-key"),
        pytest.param("mention:\n  allowedUsers: []\n", 0, 1, id="advisory"),
        pytest.param("review:\n  enabled: [oops\n", 1, 1, id="syntax-error"),
        pytest.param("- review\n", 1, 1, id="not-a-mapping"),
        pytest.param("mention:\n  allowedUsers: alice\n", 3, 3, id="failed-closed"),
        pytest.param("mention:\n  allowedUsers: alice\nmaxTurns: 0\n", 3, 3, id="failed-closed-and-reset"),
        pytest.param("maxTurns: 0\n", 4, 4, id="section-reset"),
    ],
)
def test_exit_status(tmp_path: Path, text: str, plain: int, strict: int) -> None:
    (tmp_path / ".kodiai.yml").write_text(text)
    assert runner.invoke(app, ["config", "validate", str(tmp_path)]).exit_code == plain
    assert runner.invoke(app, ["config", "validate", "--strict", str(tmp_path)]).exit_code == strict


def test_missing_path_exits_2(tmp_path: Path) -> None:
    assert runner.invoke(app, ["config", "validate", str(tmp_path / "nope")]).exit_code == 2


def test_failed_closed_output_names_the_setting_and_its_safe_value(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text("mention:\n  allowedUser: [alice]\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 3
    out = result.stdout
    assert "Failed closed: mention.allowedUsers: nobody may mention the bot" in out
    assert "taken as a misspelling of `mention.allowedUsers`" in out
    assert "1 guarded setting(s) failed closed" in out and "OK: no warnings" not in out
    payload = json.loads(runner.invoke(app, ["config", "validate", "--json", str(tmp_path)]).stdout)
    assert payload["exit_status"] == 3
    assert payload["failed_closed"] == ["mention.allowedUsers: nobody may mention the bot"]
    assert payload["warnings"][0]["failed_closed"] == payload["failed_closed"]


def test_real_process_exits_3_for_a_broken_allow_list(tmp_path: Path) -> None:
    """The status a CI step sees, from the installed entry point's module."""
    (tmp_path / ".kodiai.yml").write_text("mention:\n  allowedUsers: alice\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kodiai.cli.main", "config", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "nobody may mention the bot" in proc.stdout


def test_help_lists_the_exit_statuses() -> None:
    result = runner.invoke(app, ["config", "validate", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.split())
    for status in (
        "0 valid",
        "1 unusable file",
        "2 PATH does not exist",
        "3 a guarded setting",
        "4 a section",
    ):
        assert status in text, status
