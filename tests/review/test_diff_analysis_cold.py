"""The 50 ms diff-analysis budget measures matching, not glob compilation.

A fresh process has compiled none of the ~40 picomatch globs; compiling them takes about as long as the
whole budget. These tests run ``analyze_diff`` in fresh interpreters, with the real clock and the default
budget, and require the result a warm process gives. They also check, deterministically, that no glob is
compiled after the budget clock has started, and that the budget still truncates genuinely long work.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from kodiai.review.diff_analysis import TRUNCATION_SIGNAL, DiffAnalysisInput, analyze_diff, warm_up

FRESH_PROCESSES = 3

SMALL_PR: dict[str, Any] = {
    "changed_files": ["src/auth/login.ts", "package.json"],
    "numstat_lines": ["5\t2\tsrc/auth/login.ts", "3\t1\tpackage.json"],
    "diff_content": "@@ -1,2 +1,4 @@\n+try {\n+  verify(token)\n+} catch (e) {}\n",
}


def _fifty_file_pr() -> dict[str, Any]:
    """50 files over every category and path-risk group, a few with ``.``/``..`` segments."""
    names = [
        "src/auth.ts",
        "src/session/store.py",
        "config/secrets.yml",
        "keys/server.pem",
        "package.json",
        "go.mod",
        "Dockerfile",
        ".github/workflows/ci.yml",
        "db/001_migration.sql",
        "db/schema.prisma",
        "docs/guide.md",
        "README.md",
        "src/__tests__/a.test.ts",
        "tests/test_api.py",
        "./src/./odd.ts",
        "src/../src/up.go",
    ]
    files = names + [
        f"src/pkg{i % 7}/module_{i}.{('ts', 'py', 'go', 'rs')[i % 4]}" for i in range(50 - len(names))
    ]
    return {
        "changed_files": files,
        "numstat_lines": [f"{i + 1}\t{i % 3}\t{path}" for i, path in enumerate(files)],
        "diff_content": "".join(f"@@ -{i} +{i} @@\n+const h = hash(x{i})\n" for i in range(50)),
        "file_categories": {"docs": ["**/*.guide"], "infra": ["deploy/**"]},
    }


_RUN_FRESH = textwrap.dedent(
    """
    import json, sys
    from kodiai.review.diff_analysis import analyze_diff
    print(json.dumps(analyze_diff(json.load(sys.stdin)).model_dump()))
    """
)


def _run_fresh(script: str, data: dict[str, Any]) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _warm(data: dict[str, Any]) -> dict[str, Any]:
    analyze_diff(data)
    return analyze_diff(DiffAnalysisInput.model_validate(data)).model_dump()


@pytest.mark.parametrize("data", [SMALL_PR, _fifty_file_pr()], ids=["2-files", "50-files"])
def test_cold_process_gives_the_warm_result(data: dict[str, Any]) -> None:
    warm = _warm(data)
    assert TRUNCATION_SIGNAL not in warm["risk_signals"]
    assert warm["risk_signals"], "the inputs are chosen to raise signals"
    for _ in range(FRESH_PROCESSES):
        cold = _run_fresh(_RUN_FRESH, data)
        assert TRUNCATION_SIGNAL not in cold["risk_signals"]
        assert cold == warm


_COMPILE_ORDER = textwrap.dedent(
    """
    import json, sys, time
    import kodiai.review.diff_analysis as da

    events = []
    real_compile = da.compile_glob_set

    def recording_compile(patterns):
        events.append("compile")
        return real_compile(patterns)

    def clock():
        events.append("clock")
        return time.monotonic() * 1000.0

    da.compile_glob_set = recording_compile
    da.analyze_diff(json.load(sys.stdin), clock=clock)
    print(json.dumps(events))
    """
)


@pytest.mark.parametrize("data", [SMALL_PR, _fifty_file_pr()], ids=["built-in-globs", "with-user-categories"])
def test_no_glob_is_compiled_after_the_budget_clock_starts(data: dict[str, Any]) -> None:
    events = _run_fresh(_COMPILE_ORDER, data)
    assert "compile" in events, "a fresh process compiles the globs"
    assert "clock" in events
    first_tick = events.index("clock")
    assert "compile" not in events[first_tick:], events


def test_warm_up_is_idempotent_and_leaves_results_unchanged() -> None:
    before = analyze_diff(SMALL_PR).model_dump()
    warm_up()
    warm_up()
    assert analyze_diff(SMALL_PR).model_dump() == before


def test_budget_still_truncates_long_matching_work() -> None:
    """Compiling outside the budget does not loosen it: a clock that advances 1 ms per reading (two readings
    a file) runs out 25 files into a 200-file PR, with the default 50 ms budget."""
    ticks = iter(range(10_000))
    files = [f"src/m{i}/f{i}.ts" for i in range(200)]
    result = analyze_diff(
        DiffAnalysisInput(changed_files=files, numstat_lines=[], diff_content="+try {} catch (e) {}\n"),
        clock=lambda: float(next(ticks)),
    )
    assert result.risk_signals == [TRUNCATION_SIGNAL]
    categorised = sum(len(v) for v in result.files_by_category.values())
    assert 0 < categorised < 200
    assert result.metrics.total_files == 200
