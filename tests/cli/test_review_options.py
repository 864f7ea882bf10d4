"""``kodiai review`` local mode: ``--path`` is the checkout, ``--repo`` is owner/name, errors say what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.cli.review_cmd import PROMPT_RULE
from support.gitrepo import commit_files, git

runner = CliRunner()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "VOYAGE_API_KEY", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LEARNING_MEMORY_URI", str(tmp_path / "absent.lance"))
    root = tmp_path / "widgets"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    git("remote", "add", "origin", "https://github.com/acme/widgets.git", cwd=root)
    commit_files(root, {"app.py": "x = 1\n", ".kodiai.yml": "review:\n  skipPaths: ['docs/**']\n"}, "initial")
    git("checkout", "-q", "-b", "topic", cwd=root)
    commit_files(root, {"app.py": "x = 2\n"}, "fix: bump x")
    return root


def test_repo_names_the_repository_and_path_the_checkout(repo: Path) -> None:
    result = runner.invoke(
        app,
        [
            "review",
            "--path",
            str(repo),
            "--repo",
            "octo/other",
            "--base",
            "main",
            "--head",
            "topic",
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "repository: octo/other" in result.stdout
    assert "You are reviewing pull request #0 in octo/other." in result.stdout


def test_path_defaults_to_the_current_directory(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    result = runner.invoke(app, ["review", "--base", "main", "--head", "topic", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "repository: acme/widgets" in result.stdout


def test_deprecated_repo_name_still_works_with_a_warning(repo: Path) -> None:
    result = runner.invoke(
        app,
        [
            "review",
            "--path",
            str(repo),
            "--repo-name",
            "octo/x",
            "--base",
            "main",
            "--head",
            "topic",
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "repository: octo/x" in result.stdout
    assert "--repo-name is deprecated" in result.stderr
    assert "--repo-name" not in runner.invoke(app, ["review", "--help"]).output


def test_a_path_given_as_repo_is_explained(repo: Path) -> None:
    """The old spelling ``--repo PATH`` fails with a pointer to ``--path``."""
    result = runner.invoke(app, ["review", "--repo", str(repo), "--base", "main", "--dry-run"])
    assert result.exit_code == 1
    assert "--repo must look like owner/name" in result.stderr and "--path" in result.stderr
    assert PROMPT_RULE not in result.stdout


def test_not_a_checkout_says_to_pass_path(tmp_path: Path, repo: Path) -> None:
    result = runner.invoke(
        app, ["review", "--path", str(tmp_path / "missing"), "--base", "main", "--dry-run"]
    )
    assert result.exit_code == 1
    assert "does not exist: pass a git checkout as --path" in result.stderr


def test_head_ref_error_names_head_and_what_to_do(repo: Path) -> None:
    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "nope", "--dry-run"]
    )
    assert result.exit_code == 1
    assert "head ref 'nope' is not a commit" in result.stderr
    assert "as --head" in result.stderr
    assert result.stdout == ""


def test_empty_range_says_so_and_prints_no_prompt(repo: Path) -> None:
    """No changes between base and head: exit 1 with the reason, no prompt (before and after the model
    would have been needed)."""
    for args in (["--base", "topic", "--head", "topic", "--dry-run"], ["--base", "topic", "--head", "main"]):
        result = runner.invoke(app, ["review", "--path", str(repo), *args])
        assert result.exit_code == 1, result.output
        assert "no changes between base" in result.stderr and "nothing to review" in result.stderr
        assert PROMPT_RULE not in result.stdout and result.stdout == ""


def test_every_file_skipped_is_not_a_review(repo: Path) -> None:
    git("checkout", "-q", "-b", "docs-only", "main", cwd=repo)
    commit_files(repo, {"docs/readme.md": "hello\n"}, "docs")
    result = runner.invoke(
        app, ["review", "--path", str(repo), "--base", "main", "--head", "docs-only", "--dry-run"]
    )
    assert result.exit_code == 1
    assert "matches review.skipPaths" in result.stderr
    assert result.stdout == ""


def test_missing_base_and_url_explains_both_modes(repo: Path) -> None:
    result = runner.invoke(app, ["review", "--path", str(repo)])
    assert result.exit_code == 2
    assert "give a pull request URL, or --base" in result.stderr


def test_post_needs_a_url(repo: Path) -> None:
    result = runner.invoke(app, ["review", "--path", str(repo), "--base", "main", "--post"])
    assert result.exit_code == 2
    assert "--post needs a pull request URL" in result.stderr
