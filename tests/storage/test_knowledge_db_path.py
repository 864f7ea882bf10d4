"""Knowledge DB path resolution (behaviour P1.1 KNOWLEDGE_DB_PATH, checklist P8.4)."""

from __future__ import annotations

from pathlib import Path

from kodiai.storage.db_path import resolve_knowledge_db_path


def test_8_4_01_env_wins_over_default_and_resolves_against_cwd(tmp_path: Path) -> None:
    """P8.4 #1: the env path wins over the default and is resolved against the CWD (source env)."""
    path, source = resolve_knowledge_db_path(None, {"KNOWLEDGE_DB_PATH": "  custom/k.db "}, cwd=tmp_path)
    assert (path, source) == (str(tmp_path / "custom" / "k.db"), "env")


def test_8_4_02_explicit_argument_wins_over_env(tmp_path: Path) -> None:
    """P8.4 #2: an explicit argument wins over the env (source arg)."""
    path, source = resolve_knowledge_db_path("./cli.db", {"KNOWLEDGE_DB_PATH": "/env/k.db"}, cwd=tmp_path)
    assert (path, source) == (str(tmp_path / "cli.db"), "arg")


def test_8_4_03_default_is_cwd_joined_with_data_path(tmp_path: Path) -> None:
    """P8.4 #3: the default is the CWD joined with ./data/kodiai-knowledge.db (source default); blank env = unset."""
    expected = (str(tmp_path / "data" / "kodiai-knowledge.db"), "default")
    assert resolve_knowledge_db_path(None, {}, cwd=tmp_path) == expected
    assert resolve_knowledge_db_path("  ", {"KNOWLEDGE_DB_PATH": "   "}, cwd=tmp_path) == expected


def test_8_4_04_absolute_env_path_is_independent_of_cwd(tmp_path: Path) -> None:
    """P8.4 #4: an absolute env path gives the same result whatever the CWD."""
    env = {"KNOWLEDGE_DB_PATH": str(tmp_path / "abs.db")}
    a = resolve_knowledge_db_path(None, env, cwd=tmp_path / "x")
    b = resolve_knowledge_db_path(None, env, cwd="/")
    assert a == b == (str(tmp_path / "abs.db"), "env")
