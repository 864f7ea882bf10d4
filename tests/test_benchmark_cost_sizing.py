"""``benchmarks/cost_sizing.py``, whose figures docs/deployment.md quotes, keeps working: its smallest
configuration (a tiny PR built in the run, one review through the real Claude Code CLI in its sandbox, then
one review through a ``kodiai serve`` process) runs end to end, and its prompt-cache arithmetic bills a
conversation the way the API does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from cost_sizing_lib import pricing  # noqa: E402
from cost_sizing_lib.script import Assumptions, ChangedFile, PullFacts, ReviewPlanner  # noqa: E402

from support.fake_anthropic import MainRequest  # noqa: E402

TOOL = {"name": "Read", "description": "D" * 7_000, "input_schema": {"type": "object"}}
Message = dict[str, Any]


def _body(messages: list[Message]) -> dict[str, Any]:
    """A request shaped like the CLI's: tools, a system prompt with a breakpoint, the last block marked."""
    system = [{"type": "text", "text": "S" * 35_000, "cache_control": {"type": "ephemeral"}}]
    *earlier, last = messages
    content = list(last["content"])
    content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}
    return {
        "model": "claude-sonnet-4-5-20250929",
        "tools": [TOOL],
        "system": system,
        "messages": [*earlier, {**last, "content": content}],
    }


def test_a_later_turn_reads_the_earlier_prefix_from_the_cache_and_writes_only_what_is_new() -> None:
    prompt = {"role": "user", "content": [{"type": "text", "text": "P" * 3_500}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "R" * 7_000}],
    }
    first, second = pricing.account([_body([prompt]), _body([prompt, call, result])])

    whole_first = (len(json.dumps(TOOL)) + 35_000 + 3_500) / 3.5 + pricing.TOOL_USE_SYSTEM_TOKENS
    assert first.cache_read == 0 and first.fresh == 0
    assert first.cache_write == pytest.approx(whole_first)
    assert second.cache_read == pytest.approx(first.cache_write)  # the prefix marked last time
    assert second.cache_write == pytest.approx((len("Read{}") + 7_000) / 3.5)  # only the new blocks
    assert second.fresh == 0

    t = pricing.totals([first, second], output_tokens=1_000)
    sonnet = pricing.PRICES["claude-sonnet-4-5"]
    expected = (t.cache_write * 3.75 + t.cache_read * 0.30 + 1_000 * 15.00) / 1e6
    assert pricing.dollars(t, sonnet) == pytest.approx(expected)
    assert pricing.dollars(t, sonnet, cached=False) == pytest.approx((t.input * 3.00 + 1_000 * 15.00) / 1e6)


def test_a_changed_prefix_is_written_again_not_read() -> None:
    prompt = {"role": "user", "content": [{"type": "text", "text": "P" * 3_500}]}
    other = {"role": "user", "content": [{"type": "text", "text": "Q" * 3_500}]}
    state = pricing.CacheState()
    first = pricing.account_request(_body([prompt]), state)
    second = pricing.account_request(_body([other]), state)
    # the tools and the system prompt (the system breakpoint) are shared; the prompt is not
    assert second.cache_read == pytest.approx(first.cache_write - 3_500 / 3.5)
    assert second.cache_write == pytest.approx(3_500 / 3.5)


def _request(turns: list[tuple[list[str], str]]) -> MainRequest:
    """The request after ``turns`` (each: the tools called, what they returned)."""
    messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": "review"}]}]
    for i, (names, result) in enumerate(turns):
        uses = [{"type": "tool_use", "id": f"t{i}{j}", "name": n, "input": {}} for j, n in enumerate(names)]
        results = [{"type": "tool_result", "tool_use_id": u["id"], "content": result} for u in uses]
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    return MainRequest(len(turns), {"messages": messages}, {})


def test_a_diff_the_cli_kept_from_the_model_is_read_again_in_narrower_calls() -> None:
    big = ChangedFile("src/big.py", 3000, 0, 200_000, 1, 3000)  # its diff alone is over the limit
    files = (
        ChangedFile("src/a.py", 400, 10, 30_000, 5, 900),
        ChangedFile("src/b.py", 300, 0, 20_000, 1, 300),
        big,
        ChangedFile("tests/test_a.py", 200, 0, 12_000, 3, 200),
    )
    facts = PullFacts("b" * 40, "h" * 40, files, 262_000, (4, 3900, 10))
    prompt = "### Full Review (3 files)\n- src/a.py\n- src/big.py\n- tests/test_a.py\n\n## Next"
    planner = ReviewPlanner(facts, prompt, Assumptions())
    opening = planner.step(0, _request([]))
    assert [c.name for c in opening.calls] == ["mcp__git__diff", "mcp__git__log"]

    cut = "Error: result (280,000 characters across 1 line) exceeds maximum allowed tokens. Output has been saved"
    first = planner.step(1, _request([(["mcp__git__diff", "mcp__git__log"], cut)]))
    (call,) = first.calls
    # the triaged files that fit, in triage order, packed under the size limit; the oversized one left out
    assert call.input["paths"] == ["src/a.py"]
    second = planner.step(
        2, _request([(["mcp__git__diff", "mcp__git__log"], cut), (["mcp__git__diff"], "{}")])
    )
    assert second.calls[0].input["paths"] == ["tests/test_a.py"]
    third = planner.step(3, _request([(["x"], cut), (["mcp__git__diff"], "{}"), (["mcp__git__diff"], "{}")]))
    assert third.calls[0].name == "Read" and planner.skipped == 1 and planner.whole_refused
    assert planner.step(1, _request([])) is first, "a retried turn replays its step"


def test_the_smallest_configuration_runs_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KODIAI_BENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cost_sizing.py"), "--smoke", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    (row,) = result["cost"]
    assert row["inline_comments"] == 1 and row["turns"] >= 4
    # the CLI's system prompt, tools and the turns weigh far more than Kodiai's own prompt (the baseline)
    assert row["input"] > 10 * row["prompt_tokens"]
    assert row["cache_read"] > row["cache_write"] > 0
    assert 0 < row["dollars"]["claude-sonnet-4-5"] < row["dollars_uncached"]
    assert row["dollars"]["claude-haiku-4-5"] < row["dollars"]["claude-sonnet-4-5"]
    assert row["side_requests"] >= 1, "the CLI's own side request (the session title) is counted"

    (level,) = result["sizing"]["levels"]
    assert level["concurrency"] == 1
    assert level["peak_processes"] >= 3, "server, bubblewrap and the CLI were sampled as one tree"
    assert level["marginal_pss_mib"] > 20 and level["cpu_seconds_per_review"] > 0
    assert "| PR | language | files |" in done.stdout and "| concurrent reviews |" in done.stdout
