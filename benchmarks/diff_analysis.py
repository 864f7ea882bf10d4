"""Diff-analysis benchmark: ``analyze_diff`` on a 200-file PR against its 50 ms budget, with a baseline.

``analyze_diff`` matches every file against ~30 picomatch globs (categories, then path risk groups).
The original (JS picomatch) stays far inside the 50 ms budget; the port must too, or it would truncate
analyses the original completes. This prints, measured in the same run:

- ``analyze_diff`` as shipped (pattern lists compiled into one regex, dot-segment lookaheads dropped for
  paths without ``.``/``..`` segments);
- the baseline: the same classification with one ``glob_match`` call per pattern (exact picomatch regexes).

    .venv/bin/python benchmarks/diff_analysis.py --files 200 --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import time

from kodiai.compat.glob import glob_match
from kodiai.review.diff_analysis import (
    CATEGORY_ORDER,
    DEFAULT_FILE_CATEGORIES,
    PATH_RISK_SIGNALS,
    DiffAnalysisInput,
    analyze_diff,
)

EXTENSIONS = ["ts", "py", "go", "md", "json", "yml", "tsx", "rs"]


def _files(n: int) -> list[str]:
    return [f"src/module{i % 17}/sub{i % 5}/file_{i}.{EXTENSIONS[i % len(EXTENSIONS)]}" for i in range(n)]


def _baseline(files: list[str]) -> int:
    hits = 0
    for path in files:
        for name in CATEGORY_ORDER:
            if any(glob_match(p, path) for p in DEFAULT_FILE_CATEGORIES[name]):
                hits += 1
                break
    for group, _ in PATH_RISK_SIGNALS:
        hits += any(glob_match(p, path) for path in files for p in group)
    return hits


def _median_ms(fn: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    files = _files(args.files)
    data = DiffAnalysisInput(
        changed_files=files,
        numstat_lines=[f"3\t1\t{f}" for f in files],
        diff_content="@@ -1 +1 @@\n+try {\n+} catch (e) {}\n" * 200,
    )
    unlimited = float("inf")
    analyze_diff(data, time_budget_ms=unlimited)  # compile and cache the globs once
    _baseline(files)
    shipped = _median_ms(lambda: analyze_diff(data, time_budget_ms=unlimited), args.rounds)
    baseline = _median_ms(lambda: _baseline(files), args.rounds)
    print(f"files: {len(files)}, rounds: {args.rounds} (median wall time)")
    print(f"analyze_diff (shipped, whole analysis): {shipped:8.2f} ms   budget 50 ms")
    print(f"baseline (glob-by-glob, globs only):    {baseline:8.2f} ms")
    print(f"speed-up on the glob work:              {baseline / shipped:8.1f}x")


if __name__ == "__main__":
    main()
