"""behaviour R4.24 (usage analyzer, UA-01…UA-05), X-38 and the grep-output traps.

The scan runs the real ``git grep`` against a temporary repository; only the slow-runner case uses an
injected runner (the budget must trip without a really slow disk).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from kodiai.handler_kit.usage import UsageEvidence, build_search_terms, parse_git_grep_output
from kodiai.handler_kit.usage_scan import (
    GrepResult,
    analyze_package_usage,
    build_grep_command,
    with_time_budget,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.ts").write_text("import _ from 'lodash';\nconst x = foo.bar();\nconst y = 1;\n")
    (tmp_path / "src" / "other.ts").write_text("export const z = SomeType;\n")
    (tmp_path / "README.md").write_text("nothing here\n")
    git("add", ".")
    git("commit", "-qm", "init")
    return tmp_path


def test_ua_01_build_search_terms() -> None:
    terms = build_search_terms(
        "lodash",
        [
            "BREAKING: `foo.bar()` removed; use `foo.baz()` instead.",
            "Call sites: foo.bar() and foo.baz()",
            "Also `SomeType`.",
        ],
    )
    assert terms == ["lodash", "foo.bar()", "foo.baz()", "SomeType"]


def test_ua_02_parse_git_grep_output() -> None:
    assert parse_git_grep_output("src/a.ts:12:  const x = foo.bar();\nsrc/b.ts:3:y\n") == [
        UsageEvidence(file_path="src/a.ts", line=12, snippet="const x = foo.bar();"),
        UsageEvidence(file_path="src/b.ts", line=3, snippet="y"),
    ]


async def test_ua_03_with_time_budget_returns_none_when_too_slow() -> None:
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    assert await with_time_budget(slow(), 10) is None
    assert await with_time_budget(asyncio.sleep(0, result="ok"), 1000) == "ok"


async def test_ua_04_nonexistent_workspace(tmp_path: Path) -> None:
    result = await analyze_package_usage(str(tmp_path / "missing"), "lodash", [])
    assert result.evidence == [] and result.timed_out is False and "lodash" in result.search_terms


async def test_ua_05_slow_grep_times_out() -> None:
    started = asyncio.Event()

    async def slow_runner(argv: Sequence[str]) -> GrepResult:
        started.set()
        await asyncio.Event().wait()  # never finishes; the budget must cancel it
        raise AssertionError("unreachable")

    result = await analyze_package_usage("/nowhere", "react", [], time_budget_ms=20, runner=slow_runner)
    assert started.is_set()
    assert result.timed_out is True and result.evidence == [] and "react" in result.search_terms


async def test_real_git_grep_finds_the_package_and_breaking_apis(repo: Path) -> None:
    result = await analyze_package_usage(
        str(repo), "lodash", ["`foo.bar()` was removed", "`SomeType` renamed"]
    )
    assert result.timed_out is False
    assert result.search_terms == ["lodash", "foo.bar()", "SomeType"]
    found = {(e.file_path, e.line) for e in result.evidence}
    assert found == {("src/app.ts", 1), ("src/app.ts", 2), ("src/other.ts", 1)}


async def test_no_match_is_an_empty_result_not_an_error(repo: Path) -> None:
    result = await analyze_package_usage(str(repo), "left-pad", [])
    assert result.evidence == [] and result.timed_out is False


async def test_evidence_is_capped_at_twenty(repo: Path) -> None:
    lines = "".join(f"use lodash {i}\n" for i in range(30))
    for n in range(3):
        (repo / f"many{n}.txt").write_text(lines)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    result = await analyze_package_usage(str(repo), "lodash", [])
    assert len(result.evidence) == 20


async def test_a_raising_runner_fails_open() -> None:
    async def broken(argv: Sequence[str]) -> GrepResult:
        raise OSError("git missing")

    result = await analyze_package_usage("/x", "react", [], runner=broken)
    assert result.evidence == [] and result.timed_out is False and result.search_terms == ["react"]


def test_x_38_pattern_joins_unescaped_terms_with_bre_alternation() -> None:
    """R4.37 X-38: terms are joined with ``\\|`` and not escaped (``.`` and ``(`` keep their BRE meaning)."""
    assert build_grep_command("/w", ["lodash", "foo.bar()"]) == [
        "git",
        "-C",
        "/w",
        "grep",
        "-rn",
        "--max-count=20",
        "-e",
        "lodash\\|foo.bar()",
        "--",
    ]


def test_trap_grep_lines_ending_in_cr_are_dropped() -> None:
    """JS ``.`` stops at ``\\r`` and ``$`` is the end of the line string: CRLF output lines never match."""
    assert parse_git_grep_output("a.ts:1:x\r\nb.ts:2:y\n") == [
        UsageEvidence(file_path="b.ts", line=2, snippet="y")
    ]


def test_trap_grep_line_numbers_use_parse_int_and_paths_are_not_trimmed() -> None:
    assert parse_git_grep_output("  a.ts:0012:\ufeffx\ufeff\nC:\\p:1:x\na.ts:٤:x") == [
        UsageEvidence(file_path="  a.ts", line=12, snippet="x")
    ]


def test_trap_search_terms_use_ascii_word_boundaries_and_js_trim() -> None:
    """``fooé.bar()`` yields nothing in JS (ASCII ``\\w``); terms are JS-trimmed, empty ones dropped."""
    assert build_search_terms("serde", ["fooé.bar() accent", "` `", "`\ufeffbom`", "$x.y() jquery"]) == [
        "serde",
        "bom",
        "x.y()",
    ]
