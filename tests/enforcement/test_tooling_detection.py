"""detect_repo_tooling on real directories: behaviour R4.31 (TD-01…14)."""

from __future__ import annotations

from pathlib import Path

from kodiai.enforcement.tooling import FORMATTER_CONFIGS, LINTER_CONFIGS, detect_repo_tooling


def make(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).write_text("x\n", encoding="utf-8")
    return root


def test_4_31_td_01_empty_workspace(tmp_path: Path) -> None:
    """R4.31 TD-01."""
    t = detect_repo_tooling(tmp_path)
    assert (t.formatters, t.linters) == ({}, {})


def test_4_31_td_02_prettierrc(tmp_path: Path) -> None:
    """R4.31 TD-02."""
    t = detect_repo_tooling(make(tmp_path, ".prettierrc"))
    assert t.formatters == {"JavaScript": [".prettierrc"], "TypeScript": [".prettierrc"]}


def test_4_31_td_03_clang_format(tmp_path: Path) -> None:
    """R4.31 TD-03."""
    t = detect_repo_tooling(make(tmp_path, ".clang-format"))
    assert t.formatters == {"C++": [".clang-format"], "C": [".clang-format"]}


def test_4_31_td_04_black(tmp_path: Path) -> None:
    """R4.31 TD-04."""
    assert detect_repo_tooling(make(tmp_path, ".black.toml")).formatters == {"Python": [".black.toml"]}


def test_4_31_td_05_eslintrc_json(tmp_path: Path) -> None:
    """R4.31 TD-05."""
    t = detect_repo_tooling(make(tmp_path, ".eslintrc.json"))
    assert t.linters == {"JavaScript": [".eslintrc.json"], "TypeScript": [".eslintrc.json"]}


def test_4_31_td_06_flat_eslint_config(tmp_path: Path) -> None:
    """R4.31 TD-06."""
    t = detect_repo_tooling(make(tmp_path, "eslint.config.js"))
    assert t.linters == {"JavaScript": ["eslint.config.js"], "TypeScript": ["eslint.config.js"]}


def test_4_31_td_07_golangci(tmp_path: Path) -> None:
    """R4.31 TD-07."""
    assert detect_repo_tooling(make(tmp_path, ".golangci.yml")).linters == {"Go": [".golangci.yml"]}


def test_4_31_td_08_go_mod_is_gofmt(tmp_path: Path) -> None:
    """R4.31 TD-08."""
    assert detect_repo_tooling(make(tmp_path, "go.mod")).formatters == {"Go": ["go.mod (gofmt built-in)"]}


def test_4_31_td_09_go_mod_replaces_editorconfig_entry(tmp_path: Path) -> None:
    """R4.31 TD-09."""
    t = detect_repo_tooling(make(tmp_path, "go.mod", ".editorconfig"))
    assert t.formatters["Go"] == ["go.mod (gofmt built-in)"]
    assert t.formatters["Java"] == [".editorconfig"]


def test_4_31_td_10_several_configs_for_one_language(tmp_path: Path) -> None:
    """R4.31 TD-10."""
    t = detect_repo_tooling(make(tmp_path, ".prettierrc", ".editorconfig"))
    assert t.formatters["TypeScript"] == [".prettierrc", ".editorconfig"]


def test_4_31_td_11_formatters_and_linters_together(tmp_path: Path) -> None:
    """R4.31 TD-11."""
    t = detect_repo_tooling(make(tmp_path, "rustfmt.toml", "clippy.toml", "pyproject.toml"))
    assert t.formatters == {"Python": ["pyproject.toml"], "Rust": ["rustfmt.toml"]}
    assert t.linters == {"Python": ["pyproject.toml"], "Rust": ["clippy.toml"]}


def test_4_31_td_12_nonexistent_workspace(tmp_path: Path) -> None:
    """R4.31 TD-12."""
    t = detect_repo_tooling(tmp_path / "missing")
    assert (t.formatters, t.linters) == ({}, {})


def test_4_31_td_13_formatter_languages() -> None:
    """R4.31 TD-13."""
    assert set(FORMATTER_CONFIGS) == {"JavaScript", "TypeScript", "Python", "C++", "C", "Go", "Rust", "Java"}


def test_4_31_td_14_linter_languages() -> None:
    """R4.31 TD-14."""
    assert set(LINTER_CONFIGS) == {"JavaScript", "TypeScript", "Python", "Go", "Rust"}


def test_root_files_only_and_directories_ignored(tmp_path: Path) -> None:
    """R2.28: root-level files only; a config in a subdirectory, or a directory named like one, is ignored."""
    (tmp_path / "sub").mkdir()
    make(tmp_path / "sub", ".prettierrc")
    (tmp_path / ".clang-format").mkdir()
    t = detect_repo_tooling(tmp_path)
    assert (t.formatters, t.linters) == ({}, {})


def test_a_file_path_instead_of_a_directory_gives_empty_maps(tmp_path: Path) -> None:
    path = make(tmp_path, "plain.txt") / "plain.txt"
    assert detect_repo_tooling(path).formatters == {}
