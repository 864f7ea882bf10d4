"""Issue 15 item 5: parsing a large but legitimate `.kodiai.yml` (seconds of pure Python) never stalls the
event loop — through the executor (which loads the config a second time, behaviour E1.3 step 2) and
through the handlers' shared workspace step.

A ticker task sleeps 10 ms in a loop while the config loads; its longest gap is the loop's stall. The load
runs on a 2-core machine shared with other work, so the bound is relative: the stall must stay a small
fraction of the load's own duration (on the loop, the stall *is* the load's duration).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog
from execution_helpers import INSTALLATION, OWNER, PR, REPO, make_client
from pydantic import SecretStr

from kodiai.compat.js_yaml import MAX_DOCUMENT_CHARS
from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.types import ExecutionContext
from kodiai.github.workspace import Workspace
from kodiai.handler_kit.checkout import load_workspace_config
from support.fake_github import FakeGitHub
from support.scripted_transport import Result, ScriptedTransport


def write_big_config(workspace: Path) -> int:
    """A valid config just under the 256 KiB document limit: ~9 000 short `review.skipPaths` globs."""
    lines = ["model: claude-opus-4-1", "review:", "  skipPaths:"]
    size = sum(len(line) + 1 for line in lines)
    i = 0
    while True:
        line = f"    - generated/part-{i}/**"
        if size + len(line) + 1 > MAX_DOCUMENT_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
        i += 1
    (workspace / ".kodiai.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return size


async def stall_while(work: Callable[[], Awaitable[Any]]) -> tuple[Any, float, float]:
    """(result, longest loop stall, duration) of ``work`` with a 10 ms ticker running beside it."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            before = time.monotonic()
            await asyncio.sleep(0.01)
            gaps.append(time.monotonic() - before - 0.01)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)  # the ticker is running before the load starts
    started = time.monotonic()
    try:
        result = await work()
    finally:
        duration = time.monotonic() - started
        done.set()
        await tick
    return result, max(gaps), duration


async def test_executor_loads_a_256k_config_off_the_event_loop(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    size = write_big_config(tmp_path)
    assert 250_000 < size <= MAX_DOCUMENT_CHARS
    transport = ScriptedTransport([Result()])
    seen: dict[str, Any] = {}

    def transport_factory(options: Any) -> ScriptedTransport:
        seen["model"] = options.model
        return transport

    executor = ClaudeAgentExecutor(
        installation_client=lambda _installation_id: make_client(fake_gh),
        credentials=ModelCredentials(anthropic_api_key=SecretStr("sk-ant-api03-" + "k" * 40)),
        transport_factory=transport_factory,
        pacing=PacingPolicy(min_write_interval=0.0),
    )
    context = ExecutionContext(
        workspace_dir=tmp_path,
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        event_type="pull_request.opened",
        pr_number=PR,
        prompt="Review.",
    )
    result, stall, duration = await stall_while(lambda: executor.execute(context))
    assert result.conclusion == "success" and seen["model"] == "claude-opus-4-1"
    assert duration > 0.3, "the config should take a measurable time to parse"
    assert stall < max(0.25, duration / 4), f"event loop stalled {stall:.3f}s during a {duration:.2f}s run"


async def test_handler_workspace_step_loads_a_256k_config_off_the_event_loop(tmp_path: Path) -> None:
    write_big_config(tmp_path)
    ws = Workspace(tmp_path, base_url="https://github.com", token="")
    log = structlog.get_logger("test")
    config, stall, duration = await stall_while(lambda: load_workspace_config(ws, log))
    assert config.model == "claude-opus-4-1" and len(config.review.skip_paths) > 9_000
    assert duration > 0.3
    assert stall < max(0.25, duration / 4), f"event loop stalled {stall:.3f}s during a {duration:.2f}s load"
