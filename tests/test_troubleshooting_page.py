"""docs/troubleshooting.md is a registry: every "look for" entry on it is reproduced by a test.

The tests that reproduce the symptoms (``tests/**/test_troubleshooting_*.py``) read their expectations with
``look_for("<entry id>")``. This module finds those calls without running them (the ids are string
literals) and fails when an entry has none, so a symptom cannot be added to the page untested; when a test
names an entry the page does not have; and when an entry is not in a form the tests can check, or quotes a
log line an operator would not see at the default log level.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kodiai.log import level_from_env
from kodiai.settings import Settings
from support.troubleshooting_page import PAGE, VISIBLE_LEVELS, entries, parse

ROOT = Path(__file__).resolve().parent
TEST_MODULES = sorted(p for p in ROOT.rglob("test_troubleshooting_*.py"))


def covered() -> dict[str, list[str]]:
    """Entry id → the test modules that call ``look_for`` with it."""
    found: dict[str, list[str]] = {}
    for module in TEST_MODULES:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        constants = {  # module-level names bound to a string (prefixes such as REVIEW = "…/")
            t.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "look_for" and node.args:
                entry_id = literal(node.args[0], constants)
                assert entry_id is not None, f"{module.name}:{node.lineno}: look_for needs a literal id"
                found.setdefault(entry_id, []).append(module.relative_to(ROOT).as_posix())
    return found


def literal(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A string literal, a module constant, or ``CONSTANT + "literal"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, constants), literal(node.right, constants)
        return None if left is None or right is None else left + right
    return None


def test_the_tests_are_where_this_registry_looks() -> None:
    assert {p.relative_to(ROOT).as_posix() for p in TEST_MODULES} >= {
        "server/test_troubleshooting_http.py",
        "review/test_troubleshooting_skips.py",
        "review/test_troubleshooting_model.py",
    }


def test_every_entry_is_reproduced_by_a_test() -> None:
    missing = sorted(set(entries()) - set(covered()))
    assert not missing, f"Look-for entries of {PAGE.name} that no test reproduces: {missing}"


def test_every_entry_a_test_reads_is_on_the_page() -> None:
    unknown = {k: v for k, v in covered().items() if k not in entries()}
    assert not unknown, f"tests read entries {PAGE.name} does not have: {unknown}"


def test_quoted_log_lines_are_visible_at_the_default_level() -> None:
    for entry in entries().values():
        for item in entry.items:
            if item.kind == "log":
                assert item.parsed()["level"] in VISIBLE_LEVELS, (entry.id, item.text)


def test_the_parser_refuses_a_look_for_it_cannot_check() -> None:
    with pytest.raises(ValueError, match="needs a kind"):
        parse("## A symptom\n\n- **Look for:** `Some message`\n")
    with pytest.raises(ValueError, match="msg and level"):
        parse('## A symptom\n\n- **Look for:** log `{"msg":"Some message"}`\n')
    with pytest.raises(ValueError, match="duplicate"):
        parse("## A\n\n**Look for:** comment `x`\n\n## A\n\n**Look for:** comment `y`\n")
    table = "## Skips\n\n| reason | Look for |\n|---|---|\n| `a` | comment `x` |\n"
    assert list(parse(table)) == ["skips/a"]


def test_log_levels_named_on_the_page_are_accepted() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("### Turn on debug logs", 1)[1].split("###", 1)[0]
    names = re.findall(r"`(trace|debug|info|warn|error|fatal|silent)`", section)
    assert {"trace", "debug", "info", "warn", "error", "fatal", "silent"} <= set(names)
    for name in names:
        level_from_env(name)
    assert Settings.model_fields["log_level"].default == "info"  # the default the page quotes lines at
