"""The console entry point imports only the command group it runs; the full CLI stays whole."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import COMMANDS, GROUPS, app

PROBE = """
import sys
from kodiai.cli.main import main
try:
    main({args!r})
except SystemExit as exit:
    code = exit.code
heavy = sorted(m for m in ("lancedb", "torch", "sentence_transformers", "numpy", "pyarrow") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [["config", "schema"], ["db", "--help"], ["telemetry", "--help"], ["memory", "--help"], ["review", "-h"]],
)
def test_light_commands_do_not_import_the_vector_or_model_stack(args: list[str]) -> None:
    proc = _run(args)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY=\n" in proc.stdout


def test_a_command_runs_under_its_name() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"])
    assert result.exit_code == 0 and "Start the webhook server" in result.output


def test_memory_group_carries_calibrate() -> None:
    result = CliRunner().invoke(app, ["memory", "--help"])
    assert result.exit_code == 0 and "calibrate" in result.output
    result = CliRunner().invoke(app, ["memory", "calibrate", "--help"])
    assert result.exit_code == 0 and "--data" in result.output


def test_an_unknown_command_suggests_the_closest() -> None:
    result = CliRunner().invoke(app, ["reveiw"])
    assert result.exit_code == 2 and "review" in result.output


def test_full_help_lists_every_command_and_group() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in [*COMMANDS, *GROUPS]:
        assert name in result.output
