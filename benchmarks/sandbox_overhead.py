"""What the agent sandbox costs per run: a one-turn session of the real bundled Claude Code CLI against the
fake Anthropic API (``tests/support/fake_anthropic.py``), through the real ``ClaudeAgentExecutor``, with
the bubblewrap sandbox on and off (``AGENT_SANDBOX=off`` still uses the per-run launcher, HOME and env
allow-list, so the difference is bwrap: its probe and the namespace and mount set-up).

Runs alternate (on, off, on, …) after one unmeasured warm-up of each, so page cache and CPU contention
hit both alike. Figures: median, p90 and min of ``execute()`` wall time per mode, and the median
difference. Also the probe alone (``bwrap … true`` with a run's argv), which every sandboxed run pays
before the CLI starts.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/sandbox_overhead.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pydantic import SecretStr  # noqa: E402

from kodiai.execution.executor import ClaudeAgentExecutor  # noqa: E402
from kodiai.execution.options import ModelCredentials  # noqa: E402
from kodiai.execution.sandbox import AgentSandbox, RunLayout, bwrap_argv  # noqa: E402
from kodiai.execution.sandbox_run import bundled_cli, make_layout, remove_tree, sandbox_spec  # noqa: E402
from kodiai.execution.types import ExecutionContext  # noqa: E402
from kodiai.log import configure_logging  # noqa: E402
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, Text  # noqa: E402
from support.gitrepo import commit_files, git  # noqa: E402


def workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    git("init", "-q", "-b", "main", cwd=ws)
    commit_files(ws, {"app.py": "x = 1\n"}, "initial")
    return ws


async def one_run(executor: ClaudeAgentExecutor, context: ExecutionContext) -> float:
    started = time.perf_counter()
    result = await executor.execute(context)
    elapsed = time.perf_counter() - started
    if result.conclusion != "success":
        raise SystemExit(f"run failed: {result.error_message}")
    return elapsed


def probe_seconds(ws: Path, runs: int) -> list[float]:
    cli = bundled_cli()
    assert cli is not None
    sandbox = AgentSandbox()
    times = []
    for _ in range(runs):
        layout: RunLayout = make_layout(sandbox)
        try:
            argv = bwrap_argv(sandbox_spec(sandbox, layout, ws, write_mode=False, cli=cli, files=[]))
            started = time.perf_counter()
            subprocess.run([*argv, "true"], env={"PATH": "/usr/bin:/bin"}, check=True)
            times.append(time.perf_counter() - started)
        finally:
            remove_tree(layout.run_dir)
    return times


def describe(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (
        f"{label:<12} median {statistics.median(times) * 1000:7.0f} ms   p90 {p90 * 1000:7.0f} ms   "
        f"min {ordered[0] * 1000:7.0f} ms   (n={len(times)})"
    )


async def main(runs: int) -> None:
    configure_logging("error")
    os.environ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    os.environ["CLAUDE_CODE_MAX_RETRIES"] = "0"
    with tempfile.TemporaryDirectory(prefix="kodiai-bench-") as tmp, FakeAnthropic() as model:
        model.script = lambda _request: Text("Looks good.")
        ws = workspace(Path(tmp))
        credentials = ModelCredentials(
            anthropic_api_key=SecretStr(FAKE_API_KEY), endpoint={"ANTHROPIC_BASE_URL": SecretStr(model.url)}
        )
        executors = {
            "sandbox on": ClaudeAgentExecutor(installation_client=None, credentials=credentials),
            "sandbox off": ClaudeAgentExecutor(
                installation_client=None, credentials=credentials, sandbox=AgentSandbox(enabled=False)
            ),
        }
        context = ExecutionContext(
            workspace_dir=ws, installation_id=1, owner="acme", repo="widgets",
            event_type="pull_request.opened", pr_number=1, prompt="Say hello.",
        )  # fmt: skip
        for executor in executors.values():
            await one_run(executor, context)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in executors}
        for _ in range(runs):
            for name, executor in executors.items():
                times[name].append(await one_run(executor, context))
        print(f"one-turn session, real CLI {bundled_cli()}, {os.cpu_count()} CPUs")
        for name, measured in times.items():
            print(describe(name, measured))
        overhead = statistics.median(times["sandbox on"]) - statistics.median(times["sandbox off"])
        print(f"overhead     median difference {overhead * 1000:+.0f} ms per run")
        print(describe("probe alone", probe_seconds(ws, runs)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    asyncio.run(main(parser.parse_args().runs))
