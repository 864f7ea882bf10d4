"""The layers of docs/architecture.md hold: no upward import, no circle, a sans-I/O webhook package.

The contracts are import-linter's, in ``pyproject.toml`` (``[tool.importlinter]``); this runs them with the
venv's ``lint-imports`` (imports inside functions count too) and checks that no package escapes them by
being in no layer.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "kodiai"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), "import-linter is a dev dependency: pip install -e '.[dev]'"
    run = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BROKEN" not in run.stdout


def test_every_package_is_in_a_layer() -> None:
    """A new top-level package or module must be placed in the layers, or it could import anything."""
    (layers,) = (c["layers"] for c in _contracts() if c["type"] == "layers")
    assert isinstance(layers, list)
    placed = {name.strip() for layer in layers for name in str(layer).split("|")}
    present = {
        f"kodiai.{p.stem if p.is_file() else p.name}"
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.is_file() and p.suffix == ".py" and p.stem not in {"__init__", "__main__"})
    }
    assert sorted(present - placed) == []
    assert sorted(placed - present) == []
