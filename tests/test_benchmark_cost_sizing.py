"""``benchmarks/cost_sizing.py``, whose figures docs/deployment.md quotes, keeps working: its smallest
configuration (a tiny PR built in the run, one review through the real Claude Code CLI in its sandbox, then
one review through a ``kodiai serve`` process) runs end to end, and its prompt-cache arithmetic bills a
conversation the way the API does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from cost_sizing_lib import pricing  # noqa: E402
from cost_sizing_lib.script import Assumptions, ChangedFile, PullFacts, ReviewPlanner, Step  # noqa: E402

from kodiai.execution.tools.git_page import Page, page_note  # noqa: E402
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


def _request(turns: list[tuple[Step, list[str]]]) -> MainRequest:
    """The request after ``turns`` (each: the step the model took, what its calls returned)."""
    messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": "review"}]}]
    for i, (step, results) in enumerate(turns):
        uses = [
            {"type": "tool_use", "id": f"t{i}{j}", "name": c.name, "input": c.input}
            for j, c in enumerate(step.calls)
        ]
        answers = [
            {"type": "tool_result", "tool_use_id": u["id"], "content": r}
            for u, r in zip(uses, results, strict=True)
        ]
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": answers}]
    return MainRequest(len(turns), {"messages": messages}, {})


#: What the CLI appends to a message's last tool result, after the git tools' note.
REMINDER = "\n\n<system-reminder>\n<total_tokens>14999850 tokens left</total_tokens>\n</system-reminder>"


def _cut(offset: int, *files: str) -> str:
    """A git tool answer holding the diffs of ``files``, cut before line ``offset + 1``, with the tools' note."""
    diffs = "".join(f"diff --git a/{f} b/{f}\n+x\n" for f in files)
    lines = diffs.count("\n")
    page = Page(diffs.encode(), first=offset - lines, lines=lines, more=True)
    return diffs + str(page_note("diff", page))


def test_a_large_diff_is_read_as_the_prompt_says() -> None:
    """The files listed, then the triaged files not read yet one per call, a cut file's offsets followed
    (up to three pages), whatever the CLI appends after the note."""
    files = (
        ChangedFile("src/a.py", 400, 10, 30_000, 5, 900),
        ChangedFile("src/b.py", 300, 0, 20_000, 1, 300),
        ChangedFile("src/big.py", 3000, 0, 200_000, 1, 3000),  # five pages: three are read
        ChangedFile("tests/test_a.py", 200, 0, 12_000, 3, 200),
    )
    facts = PullFacts("b" * 40, "h" * 40, files, 262_000, (4, 3900, 10))
    prompt = "### Full Review (3 files)\n- src/a.py\n- src/big.py\n- tests/test_a.py\n\n## Next"
    planner = ReviewPlanner(facts, prompt, Assumptions())
    turns: list[tuple[Step, list[str]]] = []

    def take(*results: str) -> Step:
        turns[-1] = (turns[-1][0], list(results))
        step = planner.step(len(turns), _request(turns))
        turns.append((step, []))
        return step

    opening = planner.step(0, _request([]))
    turns.append((opening, []))
    assert [c.name for c in opening.calls] == ["mcp__git__diff", "mcp__git__log"]
    listing = take(_cut(900, "src/a.py", "src/b.py"), "log")  # the first page: a.py whole, b.py begun
    assert [c.input for c in listing.calls] == [{"revisions": [planner.range], "stat": True}]
    per_file = take("stat")
    # the triaged files not read whole yet, one per call, in one message
    assert [c.input.get("paths") for c in per_file.calls] == [["src/big.py"], ["tests/test_a.py"]]
    per_file = replace(per_file, calls=per_file.calls[::-1])  # big.py's answer last, with the REMINDER
    turns[-1] = (per_file, [])
    following = take(
        "diff --git a/tests/test_a.py b/tests/test_a.py\n+x\n", _cut(1000, "src/big.py") + REMINDER
    )
    assert [c.input for c in following.calls] == [
        {"revisions": [planner.range], "paths": ["src/big.py"], "offset": 1000}
    ]
    last_page = take(_cut(2000))
    assert last_page.calls[0].input["offset"] == 2000
    context = take(_cut(3000))
    assert context.calls[0].name == "Read", "a file's diff is read for three pages at most"
    assert (planner.refused, planner.narrowed, planner.skipped) == (4, 5, 1) and planner.whole_refused
    assert planner.step(1, _request([])) is listing, "a retried turn replays its step"


def test_without_triage_the_whole_diff_is_paged_with_the_notes_offsets() -> None:
    files = (ChangedFile("src/a.py", 900, 10, 60_000, 5, 900),)
    planner = ReviewPlanner(
        PullFacts("b" * 40, "h" * 40, files, 60_000, (1, 900, 10)), "no triage", Assumptions()
    )
    opening = planner.step(0, _request([]))
    page_two = planner.step(1, _request([(opening, [_cut(700, "src/a.py"), "log" + REMINDER])]))
    assert [c.input for c in page_two.calls] == [{"revisions": [planner.range], "offset": 700}]
    end = "+y\n" + str(page_note("diff", Page(b"+y\n" * 200, first=700, lines=200, more=False)))
    after = planner.step(
        2, _request([(opening, [_cut(700, "src/a.py"), "log"]), (page_two, [end + REMINDER])])
    )
    assert after.calls[0].name == "Read" and (planner.refused, planner.narrowed, planner.skipped) == (1, 1, 0)


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
    assert row["side_requests"] == 0, (
        "no session-title request: the bot sets CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
    )

    (level,) = result["sizing"]["levels"]
    assert level["concurrency"] == 1
    assert level["peak_processes"] >= 3, "server, bubblewrap and the CLI were sampled as one tree"
    assert level["marginal_pss_mib"] > 20 and level["cpu_seconds_per_review"] > 0
    assert "| PR | language | files |" in done.stdout and "| concurrent reviews |" in done.stdout
