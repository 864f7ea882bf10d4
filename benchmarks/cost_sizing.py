"""What a review costs and what machine Kodiai needs, measured on real pull requests.

**Cost.** For each PR of the corpus (two published releases of a real project, see
``cost_sizing_lib/corpus.py``; or one tiny PR built here with ``--smoke``):

1. ``kodiai review --base main --head <branch> --path <repo> --dry-run`` (its Python entry,
   ``build_local_review``) builds the exact prompt the bot would send; its size is the baseline printed
   next to the rest.
2. That review then runs as the bot runs it: ``run_local_review`` (the executor, its MCP tools, the
   bubblewrap sandbox) starts the real Claude Code CLI bundled with claude-agent-sdk, pointed at the fake
   Anthropic API (``tests/support/fake_anthropic.py``), whose model plays the review of
   ``cost_sizing_lib/script.py`` (read the diff and log, narrow a cut diff, read context, post findings
   and the summary).
3. Every request the CLI sent is recorded: its system prompt, tool definitions, messages and
   ``cache_control`` marks. ``cost_sizing_lib/pricing.py`` estimates tokens (3.5 characters per token)
   and replays prompt caching over them: plain input, cache writes and cache reads per request.
   Output tokens are what the scripted model wrote. Dollars follow from the price table in
   ``pricing.py`` (one place, with its date). Side requests the CLI makes on its own (the session title,
   on its small model) are priced apart.

**Sizing.** ``kodiai serve`` runs as a real process between the fake GitHub (REST + git smart HTTP) and the
fake model (answering after ``--model-delay`` seconds), with ``REVIEW_CONCURRENCY`` at the highest level
measured. After one warm-up review (the embedder and the stores load on first use) the idle server is the
baseline; then 1, 2 and 4 PRs of different installations are opened at once (reviews of one installation
run one at a time). The server and every descendant (bubblewrap, the CLI, git) are sampled from ``/proc``
every 100 ms: peak RSS and PSS of the whole tree, and the tree's CPU seconds per review.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cost_sizing.py                 # all PRs + sizing (~4 min)
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cost_sizing.py --prs ms,flask  # some PRs
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cost_sizing.py --smoke --json  # tiny local PR, 1 review

Downloads and built repositories are cached under ``$XDG_CACHE_HOME/kodiai-benchmarks/cost-sizing``
(``KODIAI_BENCH_CACHE`` overrides), so a re-run is offline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

from cost_sizing_lib import pricing  # noqa: E402
from cost_sizing_lib.corpus import CORPUS, CorpusError, PullCase, build, cache_root, git, local_case  # noqa: E402
from cost_sizing_lib.proctree import TreeSampler, cpu_seconds, descendants, settled  # noqa: E402
from cost_sizing_lib.script import Assumptions, PullFacts, ReviewPlanner, ScriptedReviewer, read_facts  # noqa: E402
from cost_sizing_lib.tokenizer import legacy_counts  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from kodiai.config.models import DEFAULT_MODEL  # noqa: E402
from kodiai.log import configure_logging  # noqa: E402
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic  # noqa: E402

if TYPE_CHECKING:  # the review pipeline is imported where it runs: kodiai serve boots meanwhile
    from kodiai.review.local_branch import LocalReview

MIB = 1024
T0 = time.perf_counter()


def progress(message: str) -> None:
    print(f"  [{time.perf_counter() - T0:6.1f} s] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- cost


@dataclass
class CostRow:
    name: str
    label: str
    language: str
    files: int
    added: int
    removed: int
    prompt_tokens: float
    turns: int
    fresh: float
    cache_write: float
    cache_read: float
    output: float
    largest_request: float
    dollars: dict[str, float]
    dollars_uncached: float
    dollars_warm: float
    dollars_prompt_only: float
    side_requests: int
    side_dollars: float
    seconds: float
    inline_comments: int
    whole_diff_refused: bool
    diff_calls_cut: int
    narrowed_diff_calls: int
    files_left_out: int
    texts: list[str] = field(default_factory=list, repr=False)  # every distinct block, for the cross-check

    @property
    def input(self) -> float:
        return self.fresh + self.cache_write + self.cache_read


async def dry_run(case: PullCase, scratch: Path) -> LocalReview:
    """What ``kodiai review --base B --head H --path P --dry-run --json --embeddings none`` prints, from
    its Python entry (``build_local_review``, the review pipeline's gather and plan stages), in process:
    the command's own start-up would add seconds and nothing else. No learned memory: retrieval adds at
    most ``knowledge.retrieval.maxContextChars`` (2,000 characters, about 570 tokens) to a prompt."""
    from kodiai.learning.embeddings import build_embedding_provider
    from kodiai.review.local_branch import LocalReviewError, build_local_review

    try:
        return await build_local_review(
            case.repo,
            case.base,
            case.head,
            embedder_factory=lambda: build_embedding_provider("none"),
            memory_uri=str(scratch / "no-memory.lance"),
        )
    except LocalReviewError as exc:
        raise SystemExit(f"kodiai review --dry-run failed on {case.label}: {exc}") from None


async def cost_of(
    case: PullCase, a: Assumptions, model: FakeAnthropic, scratch: Path
) -> tuple[CostRow, PullFacts, LocalReview]:
    from kodiai.execution.options import ModelCredentials
    from kodiai.execution.sandbox import AgentSandbox
    from kodiai.review.local_branch import run_local_review

    local = await dry_run(case, scratch)
    progress(f"dry run of {case.label}: {len(local.prompt):,} characters of prompt")
    facts = read_facts(case.repo, case.base, case.head)
    planner = ReviewPlanner(facts, local.prompt, a)
    reviewer = ScriptedReviewer({0: planner})
    model.reset()
    model.script = reviewer
    credentials = ModelCredentials(
        anthropic_api_key=SecretStr(FAKE_API_KEY), endpoint={"ANTHROPIC_BASE_URL": SecretStr(model.url)}
    )
    started = time.perf_counter()
    result, recorder = await run_local_review(
        local, case.repo, credentials=credentials, sandbox=AgentSandbox()
    )
    seconds = time.perf_counter() - started
    if result.conclusion != "success" or not recorder.review_comments or not recorder.issue_comments:
        raise SystemExit(
            f"the scripted review of {case.label} did not complete: {result.conclusion} "
            f"{result.error_message or ''} ({len(recorder.review_comments)} inline comments)"
        )
    main = [r.body for r in model.main_requests]
    side = [r.body for r in model.side_requests if r.path == "/v1/messages" and isinstance(r.body, dict)]
    usages = pricing.account(main)
    # another review less than five minutes before (any repository of the same API key) left the tools and
    # the system prompt in the cache: they are the same for every review
    warm = pricing.CacheState()
    pricing.account_request({**main[0], "messages": []}, warm)
    warm_totals = pricing.totals(pricing.account(main, warm), 0.0)
    side_usages = pricing.account(side)
    output = sum(pricing.tokens_of(t) for t in reviewer.output[0])
    t = pricing.totals(usages, output)
    default = pricing.PRICES[pricing.DEFAULT_PRICE]
    texts = sorted(
        {b.text for body in main + side for b in pricing.blocks_of(body)} | set(reviewer.output[0])
    )
    row = CostRow(
        name=case.name,
        label=case.label,
        language=case.language,
        files=facts.shortstat[0],
        added=facts.shortstat[1],
        removed=facts.shortstat[2],
        prompt_tokens=pricing.tokens_of(local.prompt),
        turns=t.requests,
        fresh=t.fresh,
        cache_write=t.cache_write,
        cache_read=t.cache_read,
        output=t.output,
        largest_request=t.largest_request,
        dollars={
            key: pricing.dollars(t, p) for key, p in pricing.PRICES.items() if key != pricing.SIDE_PRICE
        },
        dollars_uncached=pricing.dollars(t, default, cached=False),
        dollars_warm=pricing.dollars(replace(warm_totals, output=t.output), default),
        dollars_prompt_only=pricing.tokens_of(local.prompt) * default.input / 1e6,
        side_requests=len(side),
        side_dollars=pricing.side_dollars(side_usages),
        seconds=seconds,
        inline_comments=len(recorder.review_comments),
        whole_diff_refused=planner.whole_refused,
        diff_calls_cut=planner.refused,
        narrowed_diff_calls=planner.narrowed,
        files_left_out=planner.skipped,
        texts=texts,
    )
    return row, facts, local


def tokenizer_check(rows: list[CostRow]) -> str:
    """Characters per token of Anthropic's published (pre-Claude-3) tokenizer on this run's text."""
    texts = sorted({t for r in rows for t in r.texts})
    counts = legacy_counts(texts, cache_root())
    if isinstance(counts, str):
        return f"tokenizer cross-check skipped: {counts}"
    chars, tokens = sum(len(t) for t in texts), sum(counts)
    ratio = chars / tokens if tokens else 0.0
    return (
        f"tokenizer cross-check: Anthropic's published tokenizer (pre-Claude-3, {len(texts)} distinct "
        f"blocks, {chars:,} characters) counts {ratio:.2f} characters per token; the estimate uses "
        f"{pricing.CHARS_PER_TOKEN} ({(ratio / pricing.CHARS_PER_TOKEN - 1) * 100:+.0f} % tokens vs that tokenizer)"
    )


# ----------------------------------------------------------------------------- sizing


@dataclass
class Level:
    concurrency: int
    wall_seconds: float
    peak_rss_mib: float
    peak_pss_mib: float
    peak_processes: int
    cpu_seconds_per_review: float
    marginal_pss_mib: float  # (peak PSS - idle PSS) / concurrency
    marginal_rss_mib: float


@dataclass
class Sizing:
    pr: str
    model_delay: float
    start_rss_mib: float
    start_pss_mib: float
    idle_rss_mib: float
    idle_pss_mib: float
    warmup_cpu_seconds: float
    warmed_up: bool
    levels: list[Level]


def _push(case: PullCase, bare: Path, facts: PullFacts, branch: str) -> None:
    if not bare.exists():
        bare.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    git(case.repo, "push", "-q", "--force", str(bare), f"{facts.base_sha}:refs/heads/main",
        f"{facts.head_sha}:refs/heads/{branch}")  # fmt: skip


def _wait_reaped(pid: int, timeout: float = 30.0) -> None:
    """Until the server has no child left (every CLI, bwrap and git exited and was waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(descendants(pid)) > 1:
        time.sleep(0.1)


class ServeBench:
    """``kodiai serve`` between the fake GitHub and the fake model: entered first, so the server boots
    (imports, the embedding model) while the cost stage runs; :meth:`measure` then drives it."""

    def __init__(self, levels: list[int], delay: float, tmp: Path, *, warm_up: bool) -> None:
        self.levels, self.delay, self.tmp, self.warm_up = levels, delay, tmp, warm_up
        self.installations = max(levels)
        self.owners = [f"org{i}" for i in range(1, self.installations + 1)]
        self.settle = 2.0 if warm_up else 0.5  # seconds of quiet sampled for a baseline
        self.number = 0
        self._stack = contextlib.ExitStack()
        self._boot_error: BaseException | None = None

    def __enter__(self) -> ServeBench:
        from support.fake_github import FakeGitHub
        from support.fake_github_git import install_git_routes
        from support.fake_github_pr import install_pr_routes
        from support.kodiai_process import KodiaiProcess

        self.tmp.mkdir(parents=True, exist_ok=True)
        try:
            self.fake = self._stack.enter_context(FakeGitHub())
            self.model = self._stack.enter_context(FakeAnthropic())
            self.state = install_pr_routes(self.fake)
            install_git_routes(self.fake, self.tmp / "git")
            for i, owner in enumerate(self.owners, start=1):
                self.fake.add_installation(100 + i, account=owner)
                self.fake.add_repo(owner, "widgets", installation_id=100 + i)
                self.state.set_permission(owner, "widgets", "alice", "write")
            self.reviewer = ScriptedReviewer({}, delay=self.delay)
            self.model.script = self.reviewer
            concurrency = str(self.installations)
            self.server = KodiaiProcess(self.tmp, self.fake, self.model, REVIEW_CONCURRENCY=concurrency)
            self.server.env.pop("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", None)  # as in production
            self._boot = threading.Thread(target=self._start, name="serve-boot", daemon=True)
            self._boot.start()
            self._stack.callback(self._stop)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _start(self) -> None:
        try:
            self.server.start()
        except BaseException as exc:  # reported by measure()
            self._boot_error = exc

    def _stop(self) -> None:
        self._boot.join(timeout=180)
        self.server.stop()
        progress("kodiai serve stopped")

    def _open(self, count: int, case: PullCase, facts: PullFacts, prompt: str, a: Assumptions) -> list[int]:
        """``count`` PRs at once, each on its own installation (one installation's reviews run in turn)."""
        from stack import pull_payload

        opened = []
        for index in range(count):
            self.number += 1
            owner, branch = self.owners[index], f"pr-{self.number}"
            _push(case, self.tmp / "git" / owner / "widgets.git", facts, branch)
            self.reviewer.plan_for[self.number] = ReviewPlanner(facts, prompt, a)
            sha = {"head_sha": facts.head_sha, "base_sha": facts.base_sha}
            self.state.add_pull(owner, "widgets", self.number, head_ref=branch, title=case.label, **sha)
            payload = pull_payload(
                SimpleNamespace(owner=owner, name="widgets"),  # what it reads of a BareRepo
                self.number,
                branch=branch,
                title=case.label,
                additions=facts.shortstat[1],
                deletions=facts.shortstat[2],
                **sha,
            )
            payload["installation"]["id"] = 100 + index + 1
            response = self.server.deliver(payload)
            if response.status_code != 200:
                raise SystemExit(f"the webhook was refused: {response.status_code} {response.text}")
            opened.append(self.number)
        return opened

    def _finish(self, numbers: list[int]) -> None:
        for index, n in enumerate(numbers):
            self.server.wait_for_log("Review job finished", prNumber=n, timeout=900)
            if not self.state.review_comments(self.owners[index], "widgets", n):
                raise SystemExit(f"PR #{n} got no inline comment:\n{self.server.log_text()[-3000:]}")

    def measure(self, case: PullCase, facts: PullFacts, prompt: str, a: Assumptions) -> Sizing:
        self._boot.join(timeout=300)
        if self._boot_error is not None or self.server.proc is None:
            raise SystemExit(f"kodiai serve did not start: {self._boot_error}")
        progress("kodiai serve answers /health")
        pid = self.server.proc.pid
        start = settled(pid, self.settle)
        cpu0 = cpu_seconds(pid)
        if self.warm_up:  # the embedder, LanceDB and the stores load on first use
            self._finish(self._open(1, case, facts, prompt, a))
            _wait_reaped(pid)
            progress("warm-up review done")
        warmup_cpu = cpu_seconds(pid) - cpu0
        idle = settled(pid, self.settle) if self.warm_up else start
        measured = []
        for level in self.levels:
            _wait_reaped(pid)
            cpu0, started = cpu_seconds(pid), time.perf_counter()
            with TreeSampler(pid) as sampler:
                self._finish(self._open(level, case, facts, prompt, a))
                _wait_reaped(pid)
            wall = time.perf_counter() - started
            cpu = cpu_seconds(pid) - cpu0
            progress(f"{level} concurrent review(s) done in {wall:.1f} s")
            measured.append(
                Level(
                    concurrency=level,
                    wall_seconds=wall,
                    peak_rss_mib=sampler.peak_rss / MIB,
                    peak_pss_mib=sampler.peak_pss / MIB,
                    peak_processes=sampler.peak_processes,
                    cpu_seconds_per_review=cpu / level,
                    marginal_pss_mib=(sampler.peak_pss - idle.pss_kib) / MIB / level,
                    marginal_rss_mib=(sampler.peak_rss - idle.rss_kib) / MIB / level,
                )
            )
        return Sizing(
            pr=case.label,
            model_delay=self.delay,
            start_rss_mib=start.rss_kib / MIB,
            start_pss_mib=start.pss_kib / MIB,
            idle_rss_mib=idle.rss_kib / MIB,
            idle_pss_mib=idle.pss_kib / MIB,
            warmup_cpu_seconds=warmup_cpu,
            warmed_up=self.warm_up,
            levels=measured,
        )


# ----------------------------------------------------------------------------- report


def _k(tokens: float) -> str:
    return f"{tokens / 1000:.1f}k"


def _diff_cell(r: CostRow) -> str:
    if not r.whole_diff_refused:
        return "one call"
    left_out = f", {r.files_left_out} left unread" if r.files_left_out else ""
    return f"paged: {r.narrowed_diff_calls} more calls{left_out}"


def cost_table(rows: list[CostRow]) -> str:
    others = [k for k in pricing.PRICES if k not in (pricing.DEFAULT_PRICE, pricing.SIDE_PRICE)]
    head = (
        "| PR | language | files | lines +/- | whole diff | prompt alone | requests | input: plain / cache write / "
        "cache read | output | largest request | "
        + " | ".join(
            [pricing.PRICES[pricing.DEFAULT_PRICE].label, *(pricing.PRICES[k].label for k in others)]
        )
        + " | default, tools and system prompt cached by an earlier review | default, no caching | prompt alone at input price |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [
            r.label, r.language, str(r.files), f"+{r.added} / -{r.removed}", _diff_cell(r), _k(r.prompt_tokens),
            str(r.turns),
            f"{_k(r.fresh)} / {_k(r.cache_write)} / {_k(r.cache_read)}", _k(r.output), _k(r.largest_request),
            *(f"${r.dollars[k]:.3f}" for k in [pricing.DEFAULT_PRICE, *others]),
            f"${r.dollars_warm:.3f}", f"${r.dollars_uncached:.3f}", f"${r.dollars_prompt_only:.4f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sizing_table(s: Sizing) -> str:
    lines = [f"server after start (idle): RSS {s.start_rss_mib:.0f} MiB, PSS {s.start_pss_mib:.0f} MiB"]
    if s.warmed_up:
        lines.append(
            f"server after one review (idle, embedder and stores loaded; the baseline): RSS "
            f"{s.idle_rss_mib:.0f} MiB, PSS {s.idle_pss_mib:.0f} MiB; the warm-up review used "
            f"{s.warmup_cpu_seconds:.1f} CPU s"
        )
    else:
        lines.append("no warm-up review in this run: the baseline is the server after start")
    lines += [
        "",
        "| concurrent reviews | wall s | peak RSS (tree) MiB | peak PSS (tree) MiB | processes | "
        "RAM per review over the baseline (PSS / RSS) MiB | CPU s per review |",
        "|---|---|---|---|---|---|---|",
    ]
    for lv in s.levels:
        lines.append(
            f"| {lv.concurrency} | {lv.wall_seconds:.1f} | {lv.peak_rss_mib:.0f} | {lv.peak_pss_mib:.0f} | "
            f"{lv.peak_processes} | {lv.marginal_pss_mib:.0f} / {lv.marginal_rss_mib:.0f} | "
            f"{lv.cpu_seconds_per_review:.1f} |"
        )
    return "\n".join(lines)


def report(rows: list[CostRow], s: Sizing | None, a: Assumptions, check: str | None) -> str:
    out = [
        f"Kodiai review cost and sizing — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, model "
        f"{DEFAULT_MODEL}, list prices of {pricing.PRICE_LIST_DATE} (USD per million tokens: "
        + "; ".join(
            f"{p.label} {p.input:g} in / {p.output:g} out / {p.cache_write_5m:g} cache write / {p.cache_read:g} "
            "cache read"
            for p in pricing.PRICES.values()
        )
        + ")",
        f"tokens: {pricing.CHARS_PER_TOKEN} characters per token, + {pricing.TOOL_USE_SYSTEM_TOKENS} per request "
        "for the API's tool-use system prompt; caching replayed from the CLI's cache_control marks (cold cache, "
        "5-minute writes; the 'cached by an earlier review' column starts with the tools and system prompt "
        "already cached)",
        f"scripted reviewer: {a.think_chars} characters of reasoning per turn ({a.analysis_chars} before the first "
        f"finding), 1 finding per {a.lines_per_finding} changed lines (1-{a.max_findings}), stops reading diffs at "
        f"{a.context_budget_tokens // 1000}k tokens of context",
    ]
    if check:
        out.append(check)
    if rows:
        out += ["", cost_table(rows)]
        if any(r.whole_diff_refused for r in rows):
            out.append(
                "\n'paged': the whole-range diff the prompt asks for first is over one git tool answer (40,000 "
                "bytes); as the prompt says, the reviewer listed the files and read the triaged files' diffs one "
                "per call (following a cut file's offsets for up to 3 pages), or without triage paged through the "
                "whole diff; 'unread': files or pages left once the context or the turn limit was reached"
            )
        side = max(r.side_dollars for r in rows)
        if any(r.side_requests for r in rows):
            out.append(
                f"\nplus the CLI's own side requests ({rows[0].side_requests} per review, session title on its "
                f"small model): at most ${side:.4f} per review"
            )
    if s is not None:
        out += [
            "",
            f"sizing: {s.pr}, the fake model answering after {s.model_delay:g} s per turn",
            sizing_table(s),
        ]
    return "\n".join(out)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    a = Assumptions(think_chars=args.think_chars, analysis_chars=args.analysis_chars)
    with tempfile.TemporaryDirectory(prefix="kodiai-cost-") as tmp_name:
        tmp = Path(tmp_name)
        if args.smoke:
            cases = [local_case(tmp / "repos")]
        else:
            wanted = args.prs.split(",") if args.prs else [r.name for r in CORPUS]
            unknown = set(wanted) - {r.name for r in CORPUS}
            if unknown:
                raise SystemExit(
                    f"unknown PR name(s) {sorted(unknown)}: choose from {[r.name for r in CORPUS]}"
                )
            try:
                cases = [build(r) for r in CORPUS if r.name in wanted]
            except CorpusError as exc:
                raise SystemExit(f"cost_sizing: {exc}") from None
        rows: list[CostRow] = []
        contexts: dict[str, tuple[PullFacts, LocalReview]] = {}
        result_sizing = None
        check = None
        with contextlib.ExitStack() as stack:
            serve = None
            if not args.no_sizing:  # started first: it boots while the cost stage runs
                levels = [int(x) for x in args.concurrency.split(",")]
                bench = ServeBench(levels, args.model_delay, tmp / "sizing", warm_up=not args.smoke)
                serve = stack.enter_context(bench)
            if not args.no_cost:
                with FakeAnthropic() as model:
                    for case in cases:
                        row, facts, local = await cost_of(case, a, model, tmp)
                        rows.append(row)
                        contexts[case.name] = (facts, local)
                        progress(f"reviewed {case.label}: {row.turns} requests in {row.seconds:.1f} s")
                if not args.smoke and not args.no_tokenizer_check:
                    check = tokenizer_check(rows)
            if serve is not None:
                target = (
                    cases[0] if args.smoke else next((c for c in cases if c.name == args.sizing_pr), None)
                )
                if target is None:
                    target = build(next(r for r in CORPUS if r.name == args.sizing_pr))
                if target.name in contexts:
                    facts, local = contexts[target.name]
                else:
                    facts, local = (
                        read_facts(target.repo, target.base, target.head),
                        await dry_run(target, tmp),
                    )
                result_sizing = serve.measure(target, facts, local.prompt, a)
        progress("done")
        text = report(rows, result_sizing, a, check)
        return {
            "text": text,
            "date": time.strftime("%Y-%m-%d"),
            "price_list_date": pricing.PRICE_LIST_DATE,
            "chars_per_token": pricing.CHARS_PER_TOKEN,
            "assumptions": asdict(a),
            "cost": [{k: v for k, v in asdict(r).items() if k != "texts"} | {"input": r.input} for r in rows],
            "tokenizer_check": check,
            "sizing": asdict(result_sizing) if result_sizing else None,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", help=f"comma-separated subset of {','.join(r.name for r in CORPUS)}")
    parser.add_argument("--smoke", action="store_true", help="one tiny PR built here (no download), 1 review")
    parser.add_argument("--sizing-pr", default="flask", help="the PR reviewed in the sizing runs")
    parser.add_argument("--concurrency", default="1,2,4", help="concurrent reviews per sizing run")
    parser.add_argument(
        "--model-delay", type=float, default=1.0, help="seconds the fake model takes per turn"
    )
    parser.add_argument("--think-chars", type=int, default=Assumptions.think_chars)
    parser.add_argument("--analysis-chars", type=int, default=Assumptions.analysis_chars)
    parser.add_argument("--no-cost", action="store_true")
    parser.add_argument("--no-sizing", action="store_true")
    parser.add_argument("--no-tokenizer-check", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON object on the last line")
    args = parser.parse_args()
    if args.smoke:
        args.concurrency, args.model_delay = "1", 0.0
    if shutil.which("bwrap") is None:
        raise SystemExit(
            "cost_sizing: bubblewrap (bwrap) is required: the reviews run sandboxed, as in production"
        )
    configure_logging("error")
    # lancedb (imported with the review pipeline) warns on every fork of this process; the benchmark's
    # own children (the CLI, git) never touch it
    warnings.filterwarnings("ignore", message="lancedb fork support is experimental")
    os.environ.pop(
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", None
    )  # the CLI's own traffic, as in production
    os.environ["CLAUDE_CODE_MAX_RETRIES"] = "0"
    result = asyncio.run(run(args))
    print(result["text"])
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "text"}))


if __name__ == "__main__":
    main()
