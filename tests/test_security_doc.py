"""docs/security.md names, for each boundary, the code that enforces it and the tests that show it holding:
every file and test it names must exist, so the threat model cannot silently point at nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "security.md"


def referenced_tests() -> list[tuple[str, str | None]]:
    """``(test file, test name or None)`` for every ``tests/…py[::name]`` in the doc; a bare ``::name``
    continues the file named before it in the same cell."""
    found: list[tuple[str, str | None]] = []
    for cell in re.findall(r"\|([^|\n]*tests/[^|\n]*)", DOC.read_text()):
        current: str | None = None
        for match in re.finditer(r"`(tests/[\w/*]+\.py)?(?:::(\w+))?`", cell):
            path, name = match.groups()
            if path:
                current = path
            if current is not None and (path or name):
                found.append((current, name))
    return found


def test_every_named_test_exists() -> None:
    refs = referenced_tests()
    assert len(refs) > 40
    missing = []
    for path, name in refs:
        files = sorted(ROOT.glob(path))
        if not files:
            missing.append(path)
        elif name is not None and not any(
            re.search(rf"^(async )?def {name}\(", f.read_text(), re.M) for f in files
        ):
            missing.append(f"{path}::{name}")
    assert missing == []


def test_every_named_module_exists() -> None:
    modules = set(re.findall(r"`((?:[a-z_]+/)*[a-z_*]+\.py)`", DOC.read_text()))
    modules = {m for m in modules if not m.startswith("tests/")}
    assert len(modules) > 15
    src = ROOT / "src" / "kodiai"
    assert sorted(m for m in modules if not list(src.glob(m))) == []
