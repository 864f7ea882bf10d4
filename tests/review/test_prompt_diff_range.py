"""``## Reading the code`` names the git range the handler actually diffed (``ReviewPromptContext.diff_range``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kodiai.execution.tools.git_args import DiffArgs, LogArgs
from kodiai.execution.tools.git_page import PAGE_BYTES
from kodiai.review.prompt import ReviewPromptContext, build_review_prompt
from kodiai.review.prompt.instructions import build_reading_code_section, two_dot_range
from support.git_tool_calls import run_git_tool_call

#: The section for base ``main``: the original's ranges, named as ``git`` tool calls (no shell here), and
#: how to read a diff larger than one call's page.
DEFAULT_SECTION = "\n".join(
    [
        "## Reading the code",
        "",
        "Start by reading the changes with the git tools (there is no shell):",
        '- `mcp__git__diff {"revisions": ["origin/main...HEAD"]}`',
        '- `mcp__git__log {"revision": "origin/main..HEAD", "stat": true}`',
        "A git tool answers at most 40,000 bytes per call; a longer answer ends with a note saying how to get "
        "the rest. On a large change, list the files first with "
        '`mcp__git__diff {"revisions": ["origin/main...HEAD"], "stat": true}`, then read the diff one file at '
        'a time by adding `"paths": ["<file>"]`, or continue a cut answer with the `"offset"` its note gives.',
        "Read surrounding code with Read, Grep and Glob whenever a change depends on context outside the diff.",
    ]
)


def make(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "owner": "acme",
        "repo": "repo",
        "pr_number": 3,
        "pr_title": "Tweak",
        "pr_author": "alice",
        "base_branch": "main",
        "head_branch": "feature",
        "changed_files": ["src/a.ts"],
    }
    base.update(overrides)
    return build_review_prompt(base)


def _commands(section: str) -> list[str]:
    return [line[3:-1] for line in section.split("\n") if line.startswith("- `mcp__git__")]


def _stat_call(section: str) -> str:
    """The call the section names to list a large change's files."""
    [call] = re.findall(r"`(mcp__git__diff [^`]+\"stat\": true})`", section)
    return call


def test_without_diff_range_the_section_is_unchanged() -> None:
    assert build_reading_code_section("main") == DEFAULT_SECTION
    assert build_reading_code_section("main", None) == DEFAULT_SECTION
    assert build_reading_code_section("main", "  ") == DEFAULT_SECTION, "a blank range counts as unset"
    assert make() == make(diff_range=None)
    assert DEFAULT_SECTION in make()
    assert ReviewPromptContext.model_fields["diff_range"].default is None


@pytest.mark.parametrize(
    ("diff_range", "diff_cmd", "log_cmd"),
    [
        ("origin/main...HEAD", "origin/main...HEAD", "origin/main..HEAD"),
        ("origin/main..HEAD", "origin/main..HEAD", "origin/main..HEAD"),
        ("1a2b3c...4d5e6f", "1a2b3c...4d5e6f", "1a2b3c..4d5e6f"),
    ],
    ids=["merge-base", "no-merge-base", "local-shas"],
)
def test_diff_range_is_named_in_the_section(diff_range: str, diff_cmd: str, log_cmd: str) -> None:
    diff_cmd = f'mcp__git__diff {{"revisions": ["{diff_cmd}"]}}'
    log_cmd = f'mcp__git__log {{"revision": "{log_cmd}", "stat": true}}'
    section = build_reading_code_section("develop", diff_range)
    assert _commands(section) == [diff_cmd, log_cmd]
    assert "origin/develop" not in section
    prompt = make(base_branch="develop", diff_range=diff_range)
    assert f"- `{diff_cmd}`\n- `{log_cmd}`" in prompt
    assert "origin/develop" not in prompt


def test_two_dot_range() -> None:
    assert two_dot_range("origin/main...HEAD") == "origin/main..HEAD"
    assert two_dot_range("a1...b2") == "a1..b2"
    assert two_dot_range("origin/main..HEAD") == "origin/main..HEAD"
    assert two_dot_range("origin/main...") == "origin/main..", "git reads an empty side as HEAD"
    assert two_dot_range("a1b2c3") == "a1b2c3..HEAD", "a bare revision would make git log list all history"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_named_calls_run_in_a_local_review_workspace(tmp_path: Path) -> None:
    """A local review has no ``origin/<base>``: the default calls fail there, the named range works, through
    the git tools the model really has."""
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "base")
    base = _git(tmp_path, "rev-parse", "HEAD").strip()
    _git(tmp_path, "checkout", "-q", "-b", "feature")
    (tmp_path / "a.txt").write_text("two\n")
    _git(tmp_path, "commit", "-q", "-am", "change a")
    head = _git(tmp_path, "rev-parse", "HEAD").strip()

    default = _commands(build_reading_code_section("main"))
    assert (await run_git_tool_call(tmp_path, default[0]))[0] is True

    diff_call, log_call = _commands(build_reading_code_section("main", f"{base}...{head}"))
    failed, diff = await run_git_tool_call(tmp_path, diff_call)
    assert not failed and "+two" in diff
    failed, log = await run_git_tool_call(tmp_path, log_call)
    assert not failed and "change a" in log
    assert "    base" not in log, "only the PR's own commits are listed"
    failed, stat = await run_git_tool_call(
        tmp_path, _stat_call(build_reading_code_section("main", f"{base}...{head}"))
    )
    assert not failed and stat.startswith(" a.txt | 2 +-")


@pytest.mark.parametrize("diff_range", [None, "origin/main..HEAD", "1a2b3c...4d5e6f"])
def test_the_named_calls_are_valid_git_tool_arguments(diff_range: str | None) -> None:
    """The model has no shell (issue 23): what the section tells it to call must pass the git tools'
    own argument validation, or its first step fails."""

    calls = _commands(build_reading_code_section("main", diff_range))
    (diff_name, diff_json), (log_name, log_json) = (c.split(" ", 1) for c in calls)
    assert (diff_name, log_name) == ("mcp__git__diff", "mcp__git__log")
    DiffArgs.model_validate(json.loads(diff_json))
    LogArgs.model_validate(json.loads(log_json))
    stat_name, stat_json = _stat_call(build_reading_code_section("main", diff_range)).split(" ", 1)
    assert stat_name == "mcp__git__diff" and DiffArgs.model_validate(json.loads(stat_json)).stat


def test_the_page_size_the_section_names_is_the_tools_own() -> None:
    """The model is told how much one call answers: the git tools' real page size."""
    assert f"at most {PAGE_BYTES:,} bytes per call" in build_reading_code_section("main")
