"""Every command's help: fast, light (no heavy module imported), ``-h`` as ``--help``, flags without a type.

Every command's help runs in one fresh interpreter, one after the other, as a user's shell would start
it: no heavy module may be imported by any of them (checked after each one, so a failure names the
command that imported it), and the whole sequence, interpreter start included, must take under 3 s of
CPU. That bounds each help alone: one help in a fresh process costs the same start and a subset of the
same imports. (A process per command measured the same thing 31 times over, ~1 CPU-s each.) The timing
assertion is on CPU time (user + system): on a 2-core machine shared with other jobs, wall time measures
the machine's load, not the command; both are printed. The heavy-module check does not depend on timing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import COMMANDS, EXTRA_COMMANDS, GROUPS, SUMMARIES, app, package_version

HEAVY = (
    "lancedb",
    "pyarrow",
    "faiss",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "torch",
    "sentence_transformers",
    "claude_agent_sdk",
    "mcp",
    "github",
    "uvicorn",
    "kodiai.server.app",
    "kodiai.server.runtime",
    "kodiai.review.job",
    "kodiai.mention.job",
    "kodiai.learning.memory_store",
)

PROBE = """
import contextlib, io, json, resource, sys, time
start = time.perf_counter()
from kodiai.cli.main import main
results = []
for args in {paths!r}:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            main(args)
        except SystemExit as exit:
            code = exit.code or 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    heavy = sorted(m for m in {heavy!r} if m in sys.modules)
    results.append({{"args": args, "code": code, "output": out.getvalue(), "heavy": heavy,
                     "cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - start}})
print("PROBE=" + json.dumps(results))
"""

runner = CliRunner()


def _subcommands() -> list[list[str]]:
    """Every command path of the CLI, read from the loaded app."""
    import typer.main

    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]
    for name in [*COMMANDS, *GROUPS]:
        command = root.commands[name].load()  # type: ignore[attr-defined]
        paths.append([name])
        paths.extend([name, sub] for sub in getattr(command, "commands", {}))
    return paths


ALL = [[], *[[n] for n in COMMANDS], *[[g] for g in GROUPS]]


def _probe(paths: list[list[str]]) -> list[dict[str, Any]]:
    """Run each of ``paths`` in turn in one fresh interpreter; per path: exit code, output, the heavy
    modules loaded so far, and the process's CPU and wall time so far."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(paths=paths, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("PROBE="))
    results: list[dict[str, Any]] = json.loads(line.removeprefix("PROBE="))
    return results


def test_importing_the_cli_app_imports_no_heavy_module() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import typer.main; from kodiai.cli.main import app; typer.main.get_command(app); "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_help_is_fast_and_imports_no_heavy_module() -> None:
    paths = _subcommands()
    results = _probe([[*path, "--help"] for path in paths])
    assert len(results) == len(paths)
    cpu_before = 0.0
    for path, data in zip(paths, results, strict=True):
        name = " ".join(["kodiai", *path])
        print(f"{name} --help: cpu {data['cpu'] - cpu_before:.2f}s (process so far {data['cpu']:.2f}s)")
        cpu_before = data["cpu"]
        assert data["code"] == 0, name
        assert f"Usage: {name}" in data["output"], (name, data["output"])
        assert data["heavy"] == [], f"heavy modules imported by {name} --help: {data['heavy']}"
    print(f"all {len(paths)}: cpu {results[-1]['cpu']:.2f}s, wall {results[-1]['wall']:.2f}s")
    assert results[-1]["cpu"] < 3.0


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "kodiai")
def test_dash_h_is_help_everywhere(path: list[str]) -> None:
    long = runner.invoke(app, [*path, "--help"])
    short = runner.invoke(app, [*path, "-h"])
    assert long.exit_code == 0 and short.exit_code == 0
    assert short.output == long.output
    assert "-h" in long.output


def test_leaf_commands_accept_dash_h() -> None:
    for path in (["db", "status"], ["memory", "search"], ["config", "validate"], ["review"]):
        result = runner.invoke(app, [*path, "-h"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: kodiai " + " ".join(path) in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"kodiai {package_version()}"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", package_version())


def test_flags_show_no_value_type_and_reject_a_value() -> None:
    """A flag takes no value: its help shows none (typer 0.29's rich help printed ``<bool>``)."""
    for path in _subcommands():
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
    review = runner.invoke(app, ["review", "--help"], terminal_width=200)
    assert re.search(r"--dry-run\s+Print the prompt", review.output)
    rejected = runner.invoke(app, ["review", "--dry-run", "true", "--base", "main"])
    assert rejected.exit_code != 0


def test_summaries_match_each_command_s_own_help() -> None:
    """The root and group listings come from SUMMARIES without importing: they must not drift."""
    import typer.main

    root = typer.main.get_command(app)
    for name in [*COMMANDS, *GROUPS]:
        command = root.commands[name].load()  # type: ignore[attr-defined]
        assert SUMMARIES[name] == (command.help or "").strip().splitlines()[0], name
    for (group, name), _ in EXTRA_COMMANDS.items():
        extra = root.commands[group].load().commands[name].load()  # type: ignore[attr-defined]
        assert SUMMARIES[f"{group} {name}"] == (extra.help or "").strip().splitlines()[0]
