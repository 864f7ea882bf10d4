"""Hostile-diff benchmark: peak RSS and wall time of the review's diff gathering, next to a baseline.

Two pull requests in real git repositories: one adding a single large file (``--size-mib``, default
100) and one adding ``--files`` small files (default 5,000). For each, in a fresh child process per
measurement (peak RSS is per process, and a process's peak never goes down):

- ``streamed``: :func:`kodiai.review.diff_collect.collect_diff` as shipped, then the diff analysis and
  risk scoring of the gather step;
- ``baseline``: the previous approach, measured in the same run: ``git diff --name-only``,
  ``--numstat`` and the whole ``git diff`` read with ``communicate()`` and decoded, then the same
  analysis and scoring.

Each line shows the child's peak RSS growth over its state after imports, its peak RSS and the wall
time of the gathering alone.

    .venv/bin/python benchmarks/hostile_diff.py --size-mib 100 --files 5000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = b"the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnop\n"
MIB = 1024 * 1024
GIT_ENV = ("-c", "user.name=bench", "-c", "user.email=bench@example.com")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_ENV, *args], cwd=cwd, check=True, capture_output=True)


def make_repo(root: Path, kind: str, size: int) -> Path:
    work = root / kind
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("# bench\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    git(work, "checkout", "-q", "-b", "feature")
    if kind == "big":
        block = LINE * (MIB // len(LINE))
        with (work / "big.txt").open("wb") as out:
            for _ in range(size):
                out.write(block)
    else:
        for i in range(size):
            path = work / f"pkg{i % 50}" / f"mod{i % 7}" / f"file_{i}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"VALUE_{i} = {i}\n" * 3)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "head")
    return work


# ------------------------------------------------------------------------------------------- the child
def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(field)


async def _baseline(work: Path) -> tuple[list[str], list[str], str | None, int | None]:
    async def run(*args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=str(work), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        return out.decode("utf-8", "replace")

    changed = [line for line in (await run("diff", "main...HEAD", "--name-only")).split("\n") if line.strip()]
    numstat = [line for line in (await run("diff", "main...HEAD", "--numstat")).split("\n") if line.strip()]
    content = await run("diff", "main...HEAD") if len(changed) <= 200 else None
    return changed, numstat, content, None


async def _streamed(work: Path) -> tuple[list[str], list[str], str | None, int | None]:
    from kodiai.github.workspace import Workspace
    from kodiai.review.diff_collect import collect_diff

    diff = await collect_diff(Workspace(work, base_url="https://github.com", token=""), "main", base_ref=None)
    return diff.changed_files, diff.numstat_lines, diff.diff_content, diff.hunks_count


def child(mode: str, work: Path) -> dict[str, float]:
    # both modes import the whole gather stack before the peak is reset: only the diff work is measured
    import kodiai.review.gather  # noqa: F401
    from kodiai.config import RepoConfig
    from kodiai.review.diff_analysis import analyze_diff, parse_numstat_per_file, warm_up
    from kodiai.review.file_risk import compute_file_risk_scores, triage_files_by_risk

    warm_up()
    Path("/proc/self/clear_refs").write_text("5")  # the peak restarts from the RSS after imports
    before = _status_kib("VmRSS")
    started = time.perf_counter()
    collect = _streamed if mode == "streamed" else _baseline
    changed, numstat, content, hunks = asyncio.run(collect(work))
    analysis = analyze_diff(
        {"changed_files": changed, "numstat_lines": numstat, "diff_content": content, "hunks_count": hunks}
    )
    large = RepoConfig().large_pr
    scores = compute_file_risk_scores(
        changed, parse_numstat_per_file(numstat), analysis.files_by_category, large.risk_weights.model_dump()
    )
    triage_files_by_risk(scores, 50, 30, 20, len(changed))
    seconds = time.perf_counter() - started
    peak = _status_kib("VmHWM")
    return {"growth_mib": (peak - before) / 1024, "peak_mib": peak / 1024, "seconds": seconds}


# ------------------------------------------------------------------------------------------- the parent
def measure(mode: str, work: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(work)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=100)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "REPO"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return
    with tempfile.TemporaryDirectory(prefix="kodiai-bench-") as tmp:
        cases = [
            (f"one {args.size_mib} MiB file", make_repo(Path(tmp), "big", args.size_mib)),
            (f"{args.files:,} files", make_repo(Path(tmp), "many", args.files)),
        ]
        print(f"{'PR':<22} {'approach':<9} {'peak growth':>12} {'peak RSS':>10} {'wall':>8}")
        for label, work in cases:
            for mode in ("baseline", "streamed"):
                r = measure(mode, work)
                print(
                    f"{label:<22} {mode:<9} {r['growth_mib']:>9.1f} MiB {r['peak_mib']:>6.0f} MiB "
                    f"{r['seconds']:>7.2f}s"
                )


if __name__ == "__main__":
    main()
