"""The server side of tests/review/test_hostile_diffs.py, run in a child process of its own.

Peak RSS (``VmHWM``) is a property of a whole process, so the review stack (handler, stores, the fake
GitHub, the scripted model) runs here, away from pytest's own memory, and the repository content is
written to disk in blocks, never held in Python. A warm-up review comes first: the first review of a
process imports and initialises lazily (the agent SDK, the stores), and that one-off cost is not what
is being measured. Then each hostile PR is reviewed: the peak is reset to the current RSS first, so the
growth reported is the review's own, with what was posted, as JSON in ``<tmp>/result.json``.

    python tests/review/hostile_diff_child.py <tmp> many:5000 big:100

"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.fake_github import FakeGitHub
from support.fake_github_pr import install_pr_routes
from support.review_harness import INSTALLATION, OWNER, REPO, ReviewHarness

LINE = b"the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnop\n"
MIB = 1024 * 1024


def status_kib(field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak since start or the last reset) of this process, kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    """Start a new peak from the current RSS (Linux ≥ 4.0: ``5`` in ``clear_refs``); without it the
    peak of an earlier review would hide this one's."""
    Path("/proc/self/clear_refs").write_text("5")


def write_big_file(path: Path, size_mib: int) -> int:
    """``size_mib`` MiB of repeated text lines, written a block at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = LINE * (MIB // len(LINE))
    written = 0
    with path.open("wb") as out:
        while written + len(block) <= size_mib * MIB:
            out.write(block)
            written += len(block)
        out.write(LINE[: size_mib * MIB - written])
    return size_mib * MIB


def open_pr(h: ReviewHarness, number: int, branch: str, head: dict[str, str] | None = None) -> dict[str, Any]:
    """A PR on a base commit of its own (the harness commits the base tree each time)."""
    base = {"README.md": f"# repo {number}\n", "src/index.ts": "export const a = 1;\n"}
    return h.open_pr(number=number, branch=branch, base_files=base, head_files=head)


async def review(h: ReviewHarness, pull: dict[str, Any]) -> dict[str, Any]:
    """Deliver ``pull`` and measure the peak RSS growth across its review."""
    reset_peak()
    before = status_kib("VmRSS")
    started = time.monotonic()
    outcome = await h.deliver(pull)
    seconds = time.monotonic() - started
    after = status_kib("VmHWM")
    number = pull["number"]
    return {
        "succeeded": outcome.succeeded,
        "rss_before_kib": before,
        "hwm_after_kib": after,
        "growth_kib": after - before,
        "seconds": round(seconds, 2),
        "prompt": h.prompts[-1] if h.prompts else "",
        "comments": [c["body"] for c in h.issue_comments(number)],
    }


def hostile_pr(h: ReviewHarness, number: int, scenario: str, size: int) -> dict[str, Any]:
    """``big``: a PR adding one ``size`` MiB file; ``many``: a PR adding ``size`` small files."""
    if scenario == "many":
        files = {f"pkg{i % 50}/mod{i % 7}/file_{i}.py": f"VALUE_{i} = {i}\n" * 3 for i in range(size)}
        return open_pr(h, number, f"many-{number}", files)
    branch = f"big-{number}"
    pull = open_pr(h, number, branch)
    write_big_file(h.repo.work / "data" / "big.txt", size)
    sha = h.repo.commit({"src/index.ts": "export const a = 3;\n"}, "add data", branch=branch)
    h.state.add_pull(OWNER, REPO, number, head_sha=sha)
    return {**pull, "head": {**pull["head"], "sha": sha}}


async def main(tmp: Path, scenarios: list[tuple[str, int]]) -> dict[str, Any]:
    with FakeGitHub() as fake:
        state = install_pr_routes(fake)
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        h = ReviewHarness(tmp, fake, state)
        try:
            warm = await review(h, open_pr(h, 1, "warm"))
            result: dict[str, Any] = {"warm": {k: warm[k] for k in ("succeeded", "growth_kib")}}
            for number, (scenario, size) in enumerate(scenarios, start=2):
                started = time.monotonic()
                pull = hostile_pr(h, number, scenario, size)
                result[scenario] = {"setup_seconds": round(time.monotonic() - started, 2)}
                result[scenario].update(await review(h, pull))
            return result
        finally:
            h.close()


if __name__ == "__main__":
    directory = Path(sys.argv[1])
    wanted = [(name, int(size)) for name, _, size in (arg.partition(":") for arg in sys.argv[2:])]
    outcome = asyncio.run(main(directory, wanted))
    (directory / "result.json").write_text(json.dumps(outcome, default=str))
