"""The console entry point imports only the command group it runs; the full CLI stays whole."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import COMMANDS, GROUPS, build_app

PROBE = """
import sys
from kodiai.cli.main import main
try:
    main({args!r})
except SystemExit as exit:
    code = exit.code
heavy = sorted(m for m in ("lancedb", "torch", "sentence_transformers") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("args", [["config", "schema"], ["db", "--help"], ["telemetry", "--help"]])
def test_light_commands_do_not_import_the_vector_or_model_stack(args: list[str]) -> None:
    proc = _run(args)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY=\n" in proc.stdout


def test_a_single_group_is_still_a_group_not_a_collapsed_command() -> None:
    """With one command registered, typer would run it without its name; the root callback prevents that."""
    result = CliRunner().invoke(build_app("serve"), ["serve", "--help"])
    assert result.exit_code == 0 and "Start the webhook server" in result.output


def test_memory_group_carries_calibrate_whichever_way_it_is_built() -> None:
    for cli in (build_app("memory"), build_app()):
        result = CliRunner().invoke(cli, ["memory", "--help"])
        assert result.exit_code == 0 and "calibrate" in result.output


def test_full_help_lists_every_command_and_group() -> None:
    result = CliRunner().invoke(build_app(), ["--help"])
    assert result.exit_code == 0
    for name in [*COMMANDS, *GROUPS]:
        assert name in result.output
