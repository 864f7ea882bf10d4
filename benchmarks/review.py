"""Review handler benchmark: handler time excluding the model call, next to ``git clone`` + ``git diff`` alone.

What runs in this process, composed as ``kodiai serve`` composes it and on the asyncio loop it runs on: the router
and job lanes, the review handler with every stage (run claim, workspace, config, gates, gather, plan,
post-process, publish, record), the real ``GitHubApp`` minting installation tokens, the workspace manager
cloning over loopback HTTP with the installation token header, SQLite knowledge and telemetry stores,
and a LanceDB learned-memory store opened for the real local embedder (all-MiniLM-L6-v2, onnxruntime,
``HF_HUB_OFFLINE=1``) holding 10,000 memories of the reviewed repository. The model is the real
``ClaudeAgentExecutor`` (Agent SDK client, in-process MCP tools, marker gate) over a scripted CLI stream
(``tests/support/scripted_transport.py``) that posts three ``[MAJOR]`` inline comments and a summary
comment; the executor's write pacing is off (it is model-call time either way).

GitHub is ``tests/support/fake_github.py`` with the PR routes and git smart HTTP (``git http-backend``)
in a child process: remote in production, it must not share the handler's GIL or count in its memory.

The memories are written directly with ``write_memories``: random unit vectors (384 dims, model name =
the embedder's) scattered around 64 embedded finding texts, plus 50 per PR size placed at L2 distance
0.3–0.7 from that PR's query (taken from the warm-up run) so retrieval keeps a few. Only the query
embedding and the search are timed, so synthetic vectors are fine.

Figures:
- ``handler`` = the whole job (``router.dispatch`` until the review job settles) minus the executor's
  ``execute()``; ``model`` is that executor time (scripted: SDK client, MCP tools, their GitHub calls),
  ``total`` both. Median and p90 over ``--runs`` runs, each with a fresh delivery id and PR number (so
  idempotency never skips), after one unmeasured warm-up run per size (the embedder and the memory
  vector cache load on first use). ``throttle``: the part of ``handler`` the handler's PyGithub client
  slept on its own (PyGithub's default ``seconds_between_requests=0.25``), measured by wrapping
  ``Requester.__deferRequest``.
- ``git only``, measured in the same run, alternating with the handler runs, over the same loopback
  HTTP with the same auth header (``auth_env``): ``git clone --depth=50 --single-branch --branch <head>``,
  ``git fetch --depth=1 origin main:refs/remotes/origin/main``, ``git merge-base``, ``git diff
  origin/main...HEAD`` ``--name-only``, ``--numstat`` and the full diff (skipped above 200 files, as the
  handler does). It runs with ``subprocess.run`` (vfork), the handler's git through the event loop.
- where the handler's time goes: stages cut at the handler's own log lines (plus one added by the
  benchmark after the base fetch), with the throttle sleeps inside each.
- burst, in a fresh child process with the same stack: ``--burst-prs`` PRs across
  ``--burst-installations`` installations (each owning one or two repos, ``--burst-memories`` memories
  each) dispatched at once with ``asyncio.gather``; checked: every PR reviewed exactly once (one
  ``executions`` row, one inline comment, one executor call each); wall time; the global review cap in
  force (``default_review_concurrency()``); memory: the process's peak RSS (``ru_maxrss``),
  ``RUSAGE_CHILDREN``'s ``ru_maxrss`` (the largest single child; a child forked from this process counts
  its resident pages until it execs) and the peak of the process plus its children sampled every 50 ms.
  The scripted model runs in-process, so no Claude Code CLI memory is included; with ``--real-cli`` the
  burst runs the real bundled CLI against ``tests/support/fake_anthropic.py`` (``ANTHROPIC_BASE_URL``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and a scratch ``HOME`` in the CLI's environment) and
  the sampled figure includes the CLI processes.

    .venv/bin/python benchmarks/review.py                    # 5 runs per size, burst of 20 PRs (~2.5 min)
    .venv/bin/python benchmarks/review.py --quick            # 1 run per size
    .venv/bin/python benchmarks/review.py --runs 10 --json   # machine-readable (last line)
    .venv/bin/python benchmarks/review.py --burst-only --real-cli   # the burst with the real Claude Code CLI
    .venv/bin/python benchmarks/review.py --no-burst --loop uvloop  # uvloop forks the process per git spawn

Targets (the issue): handler ≤ 2 s for a 50-file PR, ≤ 10 s for a 500-file PR (judged on p90).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import multiprocessing
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# lancedb's after-fork hook warns in every child forked under uvloop (each git spawn); the forked child
# inherits this filter, so the warning is silenced while its cost stays in the figures.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental")

import structlog  # noqa: E402
from claude_agent_sdk import ClaudeAgentOptions  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from kodiai.execution.executor import ClaudeAgentExecutor  # noqa: E402
from kodiai.execution.options import ModelCredentials  # noqa: E402
from kodiai.execution.pacing import PacingPolicy  # noqa: E402
from kodiai.execution.types import ExecutionContext, ExecutionResult  # noqa: E402
from kodiai.github.app_auth import GitHubApp  # noqa: E402
from kodiai.github.workspace import WorkspaceManager, auth_env  # noqa: E402
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory  # noqa: E402
from kodiai.jobs.lanes import JobQueue  # noqa: E402
from kodiai.jobs.limit import ConcurrencyLimit, default_review_concurrency  # noqa: E402
from kodiai.learning.embeddings import LocalEmbeddingProvider, normalise  # noqa: E402
from kodiai.learning.isolation import IsolationLayer  # noqa: E402
from kodiai.learning.setup import finding_memory_text, open_store_for_provider  # noqa: E402
from kodiai.learning.types import LearningMemoryRecord  # noqa: E402
from kodiai.log import configure_logging  # noqa: E402
from kodiai.metrics import Metrics  # noqa: E402
from kodiai.server.handlers import register_builtin_handlers  # noqa: E402
from kodiai.storage.knowledge import KnowledgeStore  # noqa: E402
from kodiai.storage.telemetry import TelemetryStore  # noqa: E402
from kodiai.webhook.bot_filter import BotFilter  # noqa: E402
from kodiai.webhook.events import build_event  # noqa: E402
from kodiai.webhook.router import EventRouter  # noqa: E402
from support.fake_github import FakeGitHub, generate_private_key_pem  # noqa: E402
from support.fake_github_git import install_git_routes  # noqa: E402
from support.fake_github_pr import install_pr_routes  # noqa: E402
from support.gitrepo import BareRepo, commit_files, git  # noqa: E402
from support.pr_payloads import pull_request_payload  # noqa: E402
from support.scripted_transport import Result, ScriptedTransport, Step, ToolCall  # noqa: E402

SLUG = "kodiai"
OWNER, REPO, INSTALLATION = "acme", "platform", 42
TARGETS = {50: 2.0, 500: 10.0}
MAX_FILES_FOR_FULL_DIFF = 200  # handlers/review/diff.py
MEMORY_BATCH = 2_000
NEAR_MEMORIES = 50
BASE_FETCHED = "bench: base ref fetched"
PROMPT_PR = re.compile(r"pull request #(\d+) in ([\w.-]+/[\w.-]+)")
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
}


# ----------------------------------------------------------------------------- synthetic source code
_PY = Template('''"""$cls: $purpose."""

from __future__ import annotations

import logging
from dataclasses import dataclass

LOG = logging.getLogger(__name__)
LIMIT = $limit


@dataclass
class $cls:
    id: int
    name: str
    total: float = 0.0

    def add(self, amount: float) -> None:
        if amount < 0:
            raise ValueError("negative amount")
        self.total += amount


def load_$n(rows: list[dict]) -> list[$cls]:
    out = []
    for row in rows:
        item = $cls(id=int(row["id"]), name=str(row.get("name", "")))
        if len(out) >= LIMIT:
            LOG.warning("limit reached at %d", LIMIT)
            break
        out.append(item)
    return out


def summarize_$n(items: list[$cls]) -> dict[str, float]:
    total = sum(i.total for i in items)
    return {"count": len(items), "total": total, "mean": total / max(1, len(items))}
$extra''')
_PY_EXTRA = """

def find_$n(items: list[$cls], key: str) -> $cls:
    for item in items:
        if item.name == key:
            return item
    return items[0]  # PR: falls back to the first item
"""

_TS = Template("""// $cls: $purpose.
import { Logger } from "../util/logger";

const LIMIT = $limit;
const log = new Logger("$n");

export interface ${cls}Row {
  id: number;
  name: string;
  total?: number;
}

export class $cls {
  constructor(public id: number, public name: string, public total = 0) {}

  add(amount: number): void {
    if (amount < 0) {
      throw new Error("negative amount");
    }
    this.total += amount;
  }
}

export function load$cls(rows: ${cls}Row[]): $cls[] {
  const out: $cls[] = [];
  for (const row of rows) {
    if (out.length >= LIMIT) {
      log.warn("limit reached", { limit: LIMIT });
      break;
    }
    out.push(new $cls(row.id, row.name, row.total ?? 0));
  }
  return out;
}

export function summarize$cls(items: $cls[]): { count: number; total: number } {
  const total = items.reduce((acc, i) => acc + i.total, 0);
  return { count: items.length, total };
}
$extra""")
_TS_EXTRA = """
export function find$cls(items: $cls[], key: string): $cls {
  const hit = items.find((i) => i.name == key);
  return hit as $cls; // PR: may be undefined
}
"""

_GO = Template("""// Package store: $cls, $purpose.
package store

import (
	"errors"
	"log"
)

const limit$cls = $limit

type $cls struct {
	ID    int
	Name  string
	Total float64
}

func (c *$cls) Add(amount float64) error {
	if amount < 0 {
		return errors.New("negative amount")
	}
	c.Total += amount
	return nil
}

func Load$cls(rows []map[string]any) []*$cls {
	out := make([]*$cls, 0, len(rows))
	for _, row := range rows {
		if len(out) >= limit$cls {
			log.Printf("limit reached at %d", limit$cls)
			break
		}
		out = append(out, &$cls{ID: row["id"].(int), Name: row["name"].(string)})
	}
	return out
}

func Summarize$cls(items []*$cls) (int, float64) {
	total := 0.0
	for _, i := range items {
		total += i.Total
	}
	return len(items), total
}
$extra""")
_GO_EXTRA = """
func Find$cls(items []*$cls, key string) *$cls {
	for _, i := range items {
		if i.Name == key {
			return i
		}
	}
	return items[0] // PR: panics on an empty slice
}
"""

_JAVA = Template("""// $cls: $purpose.
package com.acme.platform;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;

public class $cls {
    private static final int LIMIT = $limit;
    private static final Logger LOG = Logger.getLogger("$n");

    private final int id;
    private final String name;
    private double total;

    public $cls(int id, String name) {
        this.id = id;
        this.name = name;
    }

    public void add(double amount) {
        if (amount < 0) {
            throw new IllegalArgumentException("negative amount");
        }
        total += amount;
    }

    public static List<$cls> load(List<Map<String, Object>> rows) {
        List<$cls> out = new ArrayList<>();
        for (Map<String, Object> row : rows) {
            if (out.size() >= LIMIT) {
                LOG.warning("limit reached");
                break;
            }
            out.add(new $cls((Integer) row.get("id"), (String) row.get("name")));
        }
        return out;
    }
$extra}
""")
_JAVA_EXTRA = """
    public static $cls find(List<$cls> items, String key) {
        for ($cls item : items) {
            if (item.name == key) {
                return item;
            }
        }
        return null; // PR: callers do not check
    }
"""

_RS = Template("""//! $cls: $purpose.
use std::collections::HashMap;

const LIMIT: usize = $limit;

#[derive(Debug, Clone)]
pub struct $cls {
    pub id: u64,
    pub name: String,
    pub total: f64,
}

impl $cls {
    pub fn add(&mut self, amount: f64) -> Result<(), String> {
        if amount < 0.0 {
            return Err("negative amount".into());
        }
        self.total += amount;
        Ok(())
    }
}

pub fn load_$n(rows: &[HashMap<String, String>]) -> Vec<$cls> {
    let mut out = Vec::new();
    for row in rows {
        if out.len() >= LIMIT {
            eprintln!("limit reached at {}", LIMIT);
            break;
        }
        let id = row["id"].parse().unwrap_or(0);
        out.push($cls { id, name: row["name"].clone(), total: 0.0 });
    }
    out
}
$extra""")
_RS_EXTRA = """
pub fn find_$n<'a>(items: &'a [$cls], key: &str) -> &'a $cls {
    items.iter().find(|i| i.name == key).unwrap() // PR: panics when absent
}
"""

LANGS = (
    ("py", _PY, _PY_EXTRA),
    ("ts", _TS, _TS_EXTRA),
    ("go", _GO, _GO_EXTRA),
    ("java", _JAVA, _JAVA_EXTRA),
    ("rs", _RS, _RS_EXTRA),
)
DIRS = (
    "src/api",
    "src/core",
    "src/billing",
    "src/auth",
    "pkg/store",
    "pkg/queue",
    "services/search",
    "lib/util",
)
PURPOSES = (
    "invoices and payments",
    "user sessions",
    "search index entries",
    "queue messages",
    "audit events",
)
PR_MARK = "PR:"


def source_path(i: int) -> str:
    ext = LANGS[i % len(LANGS)][0]
    name = f"Item{i}" if ext == "java" else f"item_{i}"
    return f"{DIRS[i % len(DIRS)]}/m{i // 40}/{name}.{ext}"


def source_text(i: int, rev: int = 0, pr: bool = False) -> str:
    """A 35–50 line file in one of five languages; ``rev`` changes a constant, ``pr`` adds a function."""
    _, template, extra = LANGS[i % len(LANGS)]
    fields = {"cls": f"Item{i}", "n": str(i), "purpose": PURPOSES[i % len(PURPOSES)]}
    fields["limit"] = str(100 + 10 * rev + (7 if pr else 0))
    fields["extra"] = Template(extra).substitute(fields) if pr else ""
    return template.substitute(fields)


def pr_line(text: str) -> int:
    """The 1-based line of the PR's added function (an added line of the diff)."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if PR_MARK in line)


# ----------------------------------------------------------------------------- repositories
@dataclass
class PrBranch:
    branch: str
    head_sha: str
    files: list[str]
    findings: list[tuple[str, int]]  # (path, line) the scripted model comments on


@dataclass
class BuiltRepo:
    owner: str
    name: str
    base_sha: str
    branches: dict[str, PrBranch]


def build_repo(
    root: Path, owner: str, name: str, *, files: int, history: int, prs: dict[str, int], findings: int = 3
) -> BuiltRepo:
    """A bare repo with ``files`` source files on ``main``, ``history`` commits (8 files each), and one
    branch per entry of ``prs`` (branch → changed files: 80 % modified, 20 % added), pushed at once."""
    repo = BareRepo(root, owner, name)
    work = repo.work
    tree = {source_path(i): source_text(i) for i in range(files)}
    tree["README.md"] = f"# {owner}/{name}\n\nThe {name} service.\n"
    commit_files(work, tree, "Initial import")
    for k in range(1, history):
        changed = {
            source_path((k * 37 + j * 101) % files): source_text((k * 37 + j * 101) % files, rev=k)
            for j in range(8)
        }
        commit_files(work, changed, f"Tune limits ({k})")
    base = git("rev-parse", "HEAD", cwd=work)
    git("push", "-q", "origin", "main:main", cwd=work)
    branches: dict[str, PrBranch] = {}
    for offset, (branch, count) in enumerate(prs.items()):
        git("checkout", "-q", "-B", branch, "main", cwd=work)
        modified = max(1, count * 4 // 5)
        step = max(1, files // modified)
        indices = [(j * step + offset) % files for j in range(modified)]
        indices += [files + offset * 10_000 + j for j in range(count - modified)]
        changes = {}
        for i in indices:
            rev = max(
                (k for k in range(history) if any((k * 37 + j * 101) % files == i for j in range(8))),
                default=0,
            )
            changes[source_path(i)] = source_text(i, rev=rev, pr=True)
        head = commit_files(work, changes, f"Add lookups ({branch})")
        git("push", "-q", "origin", f"{branch}:{branch}", cwd=work)
        paths = list(changes)
        picks = [paths[(j * len(paths)) // findings] for j in range(findings)]
        branches[branch] = PrBranch(branch, head, paths, [(p, pr_line(changes[p])) for p in picks])
        git("checkout", "-q", "main", cwd=work)
    return BuiltRepo(owner, name, base, branches)


# ----------------------------------------------------------------------------- logs
@dataclass
class LogLine:
    t: float
    event: str
    fields: dict[str, Any]


class LogTap:
    """Production log processors (JSON lines), rendered to a file; every line also kept with its time."""

    def __init__(self, sink: Path) -> None:
        self.lines: list[LogLine] = []
        self._lock = threading.Lock()
        configure_logging("info", json=True)
        self._file = sink.open("w")
        processors = list(structlog.get_config()["processors"])
        structlog.configure(
            processors=[self._record, *processors],
            logger_factory=structlog.PrintLoggerFactory(file=self._file),
        )

    def _record(self, _logger: Any, _name: str, event: Any) -> Any:
        line = LogLine(time.perf_counter(), str(event.get("event", "")), dict(event))
        with self._lock:
            self.lines.append(line)
        return event

    def between(self, start: float, end: float) -> list[LogLine]:
        with self._lock:
            return [line for line in self.lines if start <= line.t <= end]

    def close(self) -> None:
        self._file.close()


class ThrottleMeter:
    """Time PyGithub's ``Requester`` sleeps before a request (its ``seconds_between_requests`` /
    ``seconds_between_writes`` client-side throttle), as (start, end) intervals."""

    def __init__(self) -> None:
        from github.Requester import Requester

        self.intervals: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        original = getattr(Requester, "_Requester__deferRequest", None)
        self.available = original is not None
        if original is None:
            return

        def defer(requester: Any, verb: str) -> None:
            t0 = time.perf_counter()
            try:
                original(requester, verb)
            finally:
                t1 = time.perf_counter()
                if t1 - t0 > 0.001:
                    with self._lock:
                        self.intervals.append((t0, t1))

        Requester._Requester__deferRequest = defer  # type: ignore[attr-defined]

    def slept(self, start: float, end: float, exclude: tuple[float, float] | None = None) -> float:
        """Seconds slept within [start, end], outside ``exclude`` (the model call)."""

        def overlap(a: float, b: float, lo: float, hi: float) -> float:
            return max(0.0, min(b, hi) - max(a, lo))

        total = 0.0
        with self._lock:
            for a, b in self.intervals:
                inside = overlap(a, b, start, end)
                if exclude is not None:
                    inside -= overlap(a, b, max(start, exclude[0]), min(end, exclude[1]))
                total += inside
        return total


# Where the handler's time goes: each stage ends at the first log line with this message.
STAGES = (
    ("claim run", "Run claimed"),
    ("clone (depth 50)", "Workspace created"),
    ("fetch base (depth 1)", BASE_FETCHED),
    ("config, gates, commits, author tier", "Incremental diff"),
    ("diff (merge-base, 3 diffs)", "Diff collected"),
    ("analysis, risk, triage", "Large PR triage"),
    ("retrieval (embed + search)", "Retrieval completed"),
    ("plan, prompt", "Review profile selected"),
    ("(model)", "__executor_end__"),
    ("post-process", "Review Details attempt"),
    ("publish details, record, learn", "Learning memories written"),
    ("workspace cleanup, lane", "__end__"),
)


def breakdown(
    lines: list[LogLine], start: float, exec_span: tuple[float, float], end: float, meter: ThrottleMeter
) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per stage, and the PyGithub throttle sleeps within each."""
    first: dict[str, float] = {}
    for line in lines:
        first.setdefault(line.event, line.t)
    first["__executor_end__"] = exec_span[1]
    first["__end__"] = end
    seconds: dict[str, float] = {}
    throttle: dict[str, float] = {}
    previous = start
    for stage, message in STAGES:
        if message not in first:
            continue
        t = first[message]
        if stage == "(model)":
            seconds["plan, prompt"] = seconds.get("plan, prompt", 0.0) + (exec_span[0] - previous)
            seconds[stage] = exec_span[1] - exec_span[0]
        else:
            seconds[stage] = t - previous
            throttle[stage] = meter.slept(previous, t, exclude=exec_span)
        previous = t
    return seconds, throttle


def instrument_base_fetch() -> None:
    """A log line when the workspace's base fetch is done (the handler logs none there)."""
    from kodiai.github.workspace import Workspace

    original = Workspace.fetch_base_ref

    async def fetch_base_ref(self: Workspace, base_ref: str, depth: int = 1) -> None:
        await original(self, base_ref, depth=depth)
        structlog.get_logger("bench").info(BASE_FETCHED)

    Workspace.fetch_base_ref = fetch_base_ref  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- the fake GitHub, in its own process
def _fake_github_main(conn: Any, git_root: str, private_key_pem: str) -> None:
    """The fake GitHub (REST + PR routes + git smart HTTP) in a child process, driven over ``conn``."""
    warnings.filterwarnings("ignore", message="lancedb fork support is experimental")
    fake = FakeGitHub(private_key_pem=private_key_pem).start()
    state = install_pr_routes(fake)
    install_git_routes(fake, Path(git_root))
    conn.send({"url": fake.url, "app_id": fake.app_id})
    operations: dict[str, Callable[..., Any]] = {
        "add_installation": fake.add_installation,
        "add_repo": fake.add_repo,
        "add_pull": state.add_pull,
        "review_comments": state.review_comments,
        "issue_comments": state.issue_comments,
        "maxrss_mb": lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    try:
        while True:
            op, args, kwargs = conn.recv()
            if op == "stop":
                break
            try:
                conn.send((True, operations[op](*args, **kwargs)))
            except Exception as exc:
                conn.send((False, f"{type(exc).__name__}: {exc}"))
    finally:
        fake.stop()
        conn.send((True, None))


class RemoteFakeGitHub:
    """``support.fake_github.FakeGitHub`` with its PR and git routes, served from a child process.

    GitHub is remote in production: here its CPU (FastAPI, the ``git http-backend`` pipes) does not share
    the handler's GIL and its memory is not the handler's. (In-process, its uvloop thread and the handler's
    uvloop would also race to spawn processes: uvloop raises "Racing with another loop to spawn a process".)
    """

    def __init__(self, git_root: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self.private_key_pem = generate_private_key_pem()
        self._conn, child = context.Pipe()
        self._lock = threading.Lock()
        self.process = context.Process(
            target=_fake_github_main, args=(child, str(git_root), self.private_key_pem), daemon=True
        )
        self.process.start()
        if not self._conn.poll(120):
            raise RuntimeError("the fake GitHub process did not start")
        info = self._conn.recv()
        self.url: str = info["url"]
        self.app_id: int = info["app_id"]

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self._conn.send((op, args, kwargs))
            ok, value = self._conn.recv()
        if not ok:
            raise RuntimeError(f"fake GitHub {op}: {value}")
        return value

    def stop(self) -> None:
        if self.process.is_alive():
            with self._lock:
                self._conn.send(("stop", (), {}))
                self._conn.poll(30)
        self.process.join(timeout=30)


# ----------------------------------------------------------------------------- the stack
_CURRENT: contextvars.ContextVar[ExecutionContext] = contextvars.ContextVar("bench_execution_context")


@dataclass
class TimedExecutor:
    """The real executor; records each ``execute()``'s span (perf_counter) by delivery id."""

    inner: Any
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    running: int = 0
    max_running: int = 0

    async def execute(self, context: ExecutionContext) -> ExecutionResult:
        key = f"{context.owner}/{context.repo}#{context.pr_number}"
        self.calls[key] += 1
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        token = _CURRENT.set(context)
        t0 = time.perf_counter()
        try:
            return await self.inner.execute(context)
        finally:
            self.spans[context.delivery_id or key] = (t0, time.perf_counter())
            self.running -= 1
            _CURRENT.reset(token)


def summary_body(findings: list[tuple[str, int]]) -> str:
    observations = []
    for path, line in findings:
        observations += [
            f"[MAJOR] {path} ({line}): Unchecked fallback in lookup",
            "A missing key is not handled.",
        ]
    return "\n".join(
        [
            "<details>",
            "<summary>Kodiai Review Summary</summary>",
            "",
            "## What Changed",
            "Adds lookup helpers and raises limits.",
            "",
            "## Observations",
            "",
            "### Impact",
            *observations,
            "",
            "## Verdict",
            f":red_circle: **Address before merging** -- {len(findings)} blocking issue(s) found",
            "</details>",
        ]
    )


def model_script(context: ExecutionContext, findings: list[tuple[str, int]], summary: bool) -> list[Step]:
    steps: list[Step] = [
        ToolCall(
            "github_inline_comment",
            "create_inline_comment",
            {
                "path": path,
                "line": line,
                "body": f"[MAJOR] Unchecked fallback in lookup\n\nThe lookup in `{path}` does not handle a missing key.",
            },
        )
        for path, line in findings
    ]
    if summary:
        steps.append(
            ToolCall(
                "github_comment",
                "create_comment",
                {"issueNumber": context.pr_number, "body": summary_body(findings)},
            )
        )
    steps.append(Result())
    return steps


class Stack:
    """Fake GitHub (REST + git smart HTTP) and a review handler stack wired as ``kodiai serve`` does."""

    def __init__(self, workdir: Path, *, review_limit: int | None = None, real_cli: bool = False) -> None:
        self.workdir = workdir
        self.git_root = workdir / "git"
        self.git_root.mkdir(parents=True, exist_ok=True)
        self.fake = RemoteFakeGitHub(self.git_root)
        self.github = GitHubApp(self.fake.app_id, self.fake.private_key_pem, base_url=self.fake.url)
        self.github.initialize()

        async def token_for(installation_id: int) -> str:
            return await asyncio.to_thread(self.github.installation_token, installation_id)

        self.workspaces = WorkspaceManager(token_for, root=workdir / "ws", git_base_url=self.fake.url)
        self.knowledge = KnowledgeStore(workdir / "knowledge.db")
        self.telemetry = TelemetryStore(workdir / "telemetry.db")
        self.embedder = LocalEmbeddingProvider()
        self.queries = QueryRecorder(self.embedder)
        store = open_store_for_provider(str(workdir / "memory.lance"), self.embedder)
        assert store is not None
        self.memory_store = store
        self.findings: dict[str, list[tuple[str, int]]] = {}  # "owner/repo#n" → findings
        self.transports: list[ScriptedTransport] = []
        self.model: Any = None
        if real_cli:
            from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic

            self.model = FakeAnthropic().start()
            self.model.script = self._real_model_reply
            home = workdir / "home"
            home.mkdir(exist_ok=True)
            # Only the CLI's environment (ModelCredentials.endpoint variables are passed to it by name): this
            # process keeps its HOME, so the embedder finds its cached ONNX export.
            cli_env = {
                "ANTHROPIC_BASE_URL": self.model.url,
                "HOME": str(home),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
            }
            credentials = ModelCredentials(
                anthropic_api_key=SecretStr(FAKE_API_KEY),
                endpoint={name: SecretStr(value) for name, value in cli_env.items()},
            )
            inner = ClaudeAgentExecutor(
                installation_client=self.github.installation_client,
                credentials=credentials,
                pacing=PacingPolicy(min_write_interval=0.0),
            )
        else:
            inner = ClaudeAgentExecutor(
                installation_client=self.github.installation_client,
                credentials=ModelCredentials(),
                transport_factory=self._transport,
                pacing=PacingPolicy(min_write_interval=0.0),
            )
        self.executor = TimedExecutor(inner)
        self.metrics = Metrics()
        self.deps = HandlerDeps(
            app_slug=SLUG,
            installation_client=self.github.installation_client,
            workspaces=self.workspaces,
            executor=self.executor,
            queue=JobQueue(metrics=self.metrics),
            metrics=self.metrics,
            review_limit=ConcurrencyLimit(
                review_limit or default_review_concurrency(),
                waiting=self.metrics.reviews_waiting,
                running=self.metrics.reviews_running,
            ),
            knowledge=self.knowledge,
            telemetry=self.telemetry,
            memory=LearnedMemory(self.memory_store, IsolationLayer(self.memory_store), self.queries),
        )
        self.router = EventRouter(BotFilter(SLUG))
        register_builtin_handlers(self.router, self.deps)
        self.summary = True

    def close(self) -> None:
        for store in (self.knowledge, self.telemetry, self.memory_store):
            store.close()
        if self.model is not None:
            self.model.stop()
        self.fake.stop()

    # -------------------------------------------------------------- the model
    def _transport(self, _options: ClaudeAgentOptions) -> ScriptedTransport:
        context = _CURRENT.get()
        findings = self.findings[f"{context.owner}/{context.repo}#{context.pr_number}"]
        transport = ScriptedTransport(model_script(context, findings, self.summary))
        self.transports.append(transport)
        return transport

    def _real_model_reply(self, request: Any) -> Any:
        """Fake Messages API: the first turn posts one inline comment on the PR's first finding, then done."""
        from support.fake_anthropic import Text, ToolUse

        match = PROMPT_PR.search(request.user_text)
        key = f"{match.group(2).rstrip('.')}#{match.group(1)}" if match else None
        if request.turn == 0 and key in self.findings:
            path, line = self.findings[key][0]
            return ToolUse(
                "mcp__github_inline_comment__create_inline_comment",
                {
                    "path": path,
                    "line": line,
                    "body": "[MAJOR] Unchecked fallback in lookup\n\nHandle a missing key.",
                },
            )
        return Text("Review posted.")

    # -------------------------------------------------------------- repositories and PRs
    def add_installation(self, installation_id: int, owner: str) -> None:
        self.fake.call("add_installation", installation_id, account=owner)

    def add_repo(self, built: BuiltRepo, installation_id: int) -> None:
        self.fake.call("add_repo", built.owner, built.name, installation_id=installation_id)

    def open_pr(
        self, built: BuiltRepo, branch: PrBranch, number: int, installation_id: int
    ) -> dict[str, Any]:
        pull = self.fake.call(
            "add_pull",
            built.owner,
            built.name,
            number,
            head_sha=branch.head_sha,
            head_ref=branch.branch,
            base_sha=built.base_sha,
            title=f"Add lookup helpers ({len(branch.files)} files)",
            body="Adds `find` helpers next to each loader and raises the limits.",
            author="alice",
            author_association="MEMBER",
            additions=len(branch.files) * 7,
            deletions=len(branch.files),
        )
        self.findings[f"{built.owner}/{built.name}#{number}"] = branch.findings
        return pull_request_payload("opened", pull, installation_id=installation_id)

    async def review(self, payload: dict[str, Any]) -> tuple[str, Any, float, float]:
        """Dispatch one delivery; ``(delivery id, outcome, start, end)``."""
        delivery = f"bench-{uuid.uuid4()}"
        event = build_event(delivery, "pull_request", payload)
        start = time.perf_counter()
        outcome = await self.router.dispatch(event)
        return delivery, outcome, start, time.perf_counter()

    def helper_pids(self) -> set[int]:
        """Processes of the benchmark, not of the handler: the fake GitHub, multiprocessing's tracker."""
        from multiprocessing import resource_tracker

        pids = {self.fake.process.pid or 0}
        tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
        if tracker:
            pids.add(tracker)
        return pids

    def inline_comments(self, owner: str, repo: str, number: int) -> int:
        return len(self.fake.call("review_comments", owner, repo, number))

    def outcomes(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for metric in self.metrics.reviews.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels.get("outcome", "?")] += int(sample.value)
        return counts

    def executions(self, repo: str, number: int) -> int:
        import sqlite3

        conn = sqlite3.connect(self.workdir / "telemetry.db")
        try:
            row = conn.execute(
                "SELECT COUNT(*) FROM executions WHERE repo = ? AND pr_number = ?", (repo, number)
            ).fetchone()
        finally:
            conn.close()
        return int(row[0])


TITLES = (
    "Unchecked fallback in lookup",
    "Possible null dereference",
    "Limit not enforced on input",
    "Error swallowed in loader",
    "Race on shared total",
    "Missing bounds check",
    "Comparing strings by reference",
    "Unwrap on user input",
)
SEVERITIES = ("critical", "major", "medium", "minor")
_ANCHORS: dict[str, np.ndarray] = {}


def seed_memories(
    stack: Stack,
    repo: str,
    owner: str,
    count: int,
    paths: list[str],
    *,
    seed: int = 7,
    first_id: int = 1,
    near: np.ndarray | None = None,
) -> float:
    """Write ``count`` memories of ``repo`` in batches; returns the seconds spent in ``write_memories``.

    Vectors: unit vectors scattered around 64 embedded finding texts, or, with ``near`` (a query vector),
    at L2 distances of about 0.3–0.7 from it (what a repo's related past findings look like)."""
    rng = np.random.default_rng(seed)
    anchors_text = [
        finding_memory_text(
            SEVERITIES[k % 4], "correctness", TITLES[k % len(TITLES)], paths[(k * 7) % len(paths)]
        )
        for k in range(64)
    ]
    key = "\n".join(anchors_text)
    if key not in _ANCHORS:
        _ANCHORS[key] = np.stack(
            [v for v in stack.embedder.generate_many(anchors_text, "document") if v is not None]
        )
    anchors = _ANCHORS[key]
    dims = anchors.shape[1]
    spent = 0.0
    for start in range(0, count, MEMORY_BATCH):
        n = min(MEMORY_BATCH, count - start)
        which = rng.integers(0, len(anchors), size=n)
        noise = normalise(rng.standard_normal((n, dims)))
        if near is None:
            vectors = normalise(anchors[which] + noise * rng.uniform(0.6, 1.2, size=(n, 1)))
        else:
            vectors = normalise(near[None, :] + noise * rng.uniform(0.3, 0.8, size=(n, 1)))
        records = [
            LearningMemoryRecord(
                repo=repo,
                owner=owner,
                finding_id=first_id + start + j,
                review_id=(first_id + start + j) // 5 + 1,
                source_repo=repo,
                finding_text=TITLES[int(which[j]) % len(TITLES)],
                severity=SEVERITIES[int(which[j]) % 4],
                category="correctness",
                file_path=paths[(int(which[j]) * 7) % len(paths)],
                outcome="accepted" if j % 5 else "suppressed",
                embedding_model=stack.embedder.model,
                embedding_dim=stack.embedder.dimensions,
                created_at=f"2026-0{1 + j % 6}-1{j % 10} 12:00:00",
            )
            for j in range(n)
        ]
        t0 = time.perf_counter()
        stack.memory_store.write_memories(records, vectors)
        spent += time.perf_counter() - t0
    return spent


class QueryRecorder:
    """The embedder as the handler sees it, remembering the last query vector (to seed near memories)."""

    def __init__(self, inner: LocalEmbeddingProvider) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimensions = inner.dimensions
        self.last_query: np.ndarray | None = None

    def generate(self, text: str, input_type: Any) -> np.ndarray | None:
        vector = self.inner.generate(text, input_type)
        if input_type == "query":
            self.last_query = vector
        return vector

    def generate_many(self, texts: Any, input_type: Any) -> list[np.ndarray | None]:
        return self.inner.generate_many(texts, input_type)


# ----------------------------------------------------------------------------- baseline: git alone
def git_only(stack: Stack, built: BuiltRepo, branch: PrBranch, installation_id: int) -> float:
    """What the handler's git work costs alone, over the same loopback HTTP and auth header."""
    token = stack.github.installation_token(installation_id)
    env = {**os.environ, **auth_env(stack.fake.url, token)}
    target = Path(tempfile.mkdtemp(prefix="git-only-", dir=stack.workdir / "ws"))
    url = f"{stack.fake.url}/{built.owner}/{built.name}.git"

    def run(*args: str, cwd: Path | None = target) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)
        return done.stdout.decode("utf-8", "replace")

    t0 = time.perf_counter()
    run(
        "clone",
        "--quiet",
        "--depth=50",
        "--single-branch",
        "--branch",
        branch.branch,
        "--",
        url,
        str(target),
        cwd=None,
    )
    run("fetch", "--quiet", "--depth=1", "origin", "main:refs/remotes/origin/main")
    run("merge-base", "origin/main", "HEAD")
    names = run("diff", "origin/main...HEAD", "--name-only").split()
    run("diff", "origin/main...HEAD", "--numstat")
    if len(names) <= MAX_FILES_FOR_FULL_DIFF:
        run("diff", "origin/main...HEAD")
    elapsed = time.perf_counter() - t0
    shutil.rmtree(target, ignore_errors=True)
    if len(names) != len(branch.files):
        raise RuntimeError(f"git-only diff listed {len(names)} files, expected {len(branch.files)}")
    return elapsed


# ----------------------------------------------------------------------------- figures
def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rss_now_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def maxrss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


class TreeRss:
    """Samples the RSS of this process plus all its descendants (but the ``exclude`` pids and theirs) every
    ``interval`` s; keeps the peak."""

    def __init__(self, interval: float = 0.05, exclude: set[int] | None = None) -> None:
        self.interval = interval
        self.exclude = exclude or set()
        self.peak_mb = 0.0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> tuple[float, int]:
        me = os.getpid()
        parents: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                    parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        tree = {me}
        grew = True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in tree and pid not in tree and pid not in self.exclude:
                    tree.add(pid)
                    grew = True
        total = 0
        for pid in tree:
            try:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            except (OSError, ValueError, IndexError):
                continue
        return total * self._page / 2**20, len(tree)

    def _run(self) -> None:
        while not self._stop.is_set():
            mb, count = self.sample()
            if mb > self.peak_mb:
                self.peak_mb, self.peak_processes = mb, count
            self._stop.wait(self.interval)


# ----------------------------------------------------------------------------- sequential runs
@dataclass
class RunFigures:
    total: float
    model: float
    handler: float
    stages: dict[str, float]
    stage_throttle: dict[str, float]
    outcome: str
    inline: int
    retrieval: dict[str, Any]
    throttle: float


async def one_review(
    stack: Stack,
    tap: LogTap,
    meter: ThrottleMeter,
    built: BuiltRepo,
    branch: PrBranch,
    number: int,
    installation_id: int,
) -> RunFigures:
    payload = stack.open_pr(built, branch, number, installation_id)
    before = stack.outcomes()
    delivery, outcome, start, end = await stack.review(payload)
    if outcome.succeeded != 1:
        raise RuntimeError(f"review of #{number} did not succeed: {outcome}")
    span = stack.executor.spans.get(delivery)
    if span is None:
        raise RuntimeError(f"the model never ran for #{number}; outcomes {stack.outcomes() - before}")
    lines = tap.between(start, end)
    failed = [line for line in lines if line.event == "Review handler failed" or "fail-open" in line.event]
    if failed:
        raise RuntimeError(f"#{number}: {[(f.event, f.fields.get('err')) for f in failed]}")
    retrieval = next((line.fields for line in lines if line.event == "Retrieval completed"), {})
    model = span[1] - span[0]
    inline = stack.inline_comments(built.owner, built.name, number)
    stages, stage_throttle = breakdown(lines, start, span, end, meter)
    return RunFigures(
        total=end - start,
        model=model,
        handler=end - start - model,
        stages=stages,
        stage_throttle=stage_throttle,
        outcome=",".join(sorted((stack.outcomes() - before).elements())),
        inline=inline,
        retrieval={k: retrieval.get(k) for k in ("thresholdMethod", "candidates", "results")},
        throttle=meter.slept(start, end, exclude=span),
    )


async def run_sizes(args: argparse.Namespace, workdir: Path, out: dict[str, Any]) -> int:
    tap = LogTap(workdir / "kodiai.log")
    meter = ThrottleMeter()
    instrument_base_fetch()
    stack = Stack(workdir)
    failures = 0
    try:
        t0 = time.perf_counter()
        prs = {f"pr-{size}": size for size in args.sizes}
        built = build_repo(stack.git_root, OWNER, REPO, files=args.base_files, history=args.history, prs=prs)
        stack.add_installation(INSTALLATION, OWNER)
        stack.add_repo(built, INSTALLATION)
        build_s = time.perf_counter() - t0
        all_paths = sorted({p for b in built.branches.values() for p in b.files})
        near = NEAR_MEMORIES * len(args.sizes)
        seed_s = seed_memories(stack, f"{OWNER}/{REPO}", OWNER, args.memories - near, all_paths)
        # one unmeasured warm-up review per size; its query vector places that size's related memories
        number = 1000
        colds: dict[int, RunFigures] = {}
        for k, size in enumerate(args.sizes):
            number += 1
            branch = built.branches[f"pr-{size}"]
            colds[size] = await one_review(stack, tap, meter, built, branch, number, INSTALLATION)
            assert stack.queries.last_query is not None
            seed_s += seed_memories(
                stack,
                f"{OWNER}/{REPO}",
                OWNER,
                NEAR_MEMORIES,
                all_paths,
                seed=k,
                first_id=args.memories - near + k * NEAR_MEMORIES + 1,
                near=stack.queries.last_query,
            )
        pack = sum(
            f.stat().st_size for f in (stack.git_root / OWNER / f"{REPO}.git").rglob("*") if f.is_file()
        )
        print(
            f"repo {OWNER}/{REPO}: {args.base_files + 1} files on main, {args.history} commits, {pack / 2**20:.1f} MiB "
            f"on disk; PR branches {', '.join(f'{s} files' for s in args.sizes)} (built in {build_s:.1f} s)\n"
            f"learned memory: {args.memories:,} memories of {OWNER}/{REPO} seeded ({NEAR_MEMORIES} per PR size "
            f"near its query), {stack.embedder.model} ({stack.embedder.dimensions} dims), written in {seed_s:.1f} s; "
            f"review cap {stack.deps.review_limit.limit}; {os.cpu_count()} CPUs",
            flush=True,
        )
        out["setup"] = {
            "base_files": args.base_files + 1,
            "history": args.history,
            "repo_mib": pack / 2**20,
            "memories": args.memories,
            "embedder": stack.embedder.model,
        }
        results: dict[int, dict[str, Any]] = {}
        for size in args.sizes:
            branch = built.branches[f"pr-{size}"]
            cold = colds[size]
            git_only(stack, built, branch, INSTALLATION)  # warm the same path
            runs: list[RunFigures] = []
            base: list[float] = []
            for _ in range(args.runs):
                base.append(git_only(stack, built, branch, INSTALLATION))
                number += 1
                runs.append(await one_review(stack, tap, meter, built, branch, number, INSTALLATION))
            results[size] = {"cold": cold, "runs": runs, "git": base}
            bad = [r for r in runs if r.inline != len(branch.findings)]
            if bad:
                print(f"  {size}-file PR: {len(bad)} run(s) without the expected inline comments", flush=True)
                failures += 1
            print(
                f"  {size}-file PR: {args.runs} runs done (warm-up run {cold.handler:.2f} s handler, "
                f"{cold.model:.2f} s model; last run: {runs[-1].outcome}, {runs[-1].inline} inline comments, "
                f"retrieval {runs[-1].retrieval})",
                flush=True,
            )
        out["memories_at_end"] = stack.memory_store.count(f"{OWNER}/{REPO}")
        failures += print_sizes(results, args.runs, out)
    finally:
        stack.close()
        tap.close()
    return failures


def print_sizes(results: dict[int, dict[str, Any]], runs: int, out: dict[str, Any]) -> int:
    failures = 0
    print(f"\nhandler time excluding the model call ({runs} runs each after a warm-up; seconds)")
    print(
        f"{'PR':>9} {'handler p50':>11} {'p90':>6} {'git only p50':>12} {'p90':>6} {'handler/git':>11} "
        f"{'throttle p50':>12} {'model p50':>9} {'total p50':>9} {'target':>7}  verdict (p90)"
    )
    out["sizes"] = {}
    for size, r in results.items():
        handler = [x.handler for x in r["runs"]]
        model = [x.model for x in r["runs"]]
        total = [x.total for x in r["runs"]]
        throttle = [x.throttle for x in r["runs"]]
        base = r["git"]
        target = TARGETS.get(size)
        p90 = pct(handler, 90)
        verdict = "n/a" if target is None else ("PASS" if p90 <= target else "FAIL")
        if verdict == "FAIL":
            failures += 1
        print(
            f"{size:>5} files {median(handler):>11.2f} {p90:>6.2f} {median(base):>12.2f} {pct(base, 90):>6.2f} "
            f"{median(handler) / median(base):>10.1f}x {median(throttle):>12.2f} {median(model):>9.2f} "
            f"{median(total):>9.2f} {'<= ' + format(target, 'g') if target else '-':>7}  {verdict}"
        )
        out["sizes"][str(size)] = {
            "handler_s": {"p50": median(handler), "p90": p90, "all": handler},
            "git_only_s": {"p50": median(base), "p90": pct(base, 90), "all": base},
            "pygithub_throttle_s": {"p50": median(throttle), "p90": pct(throttle, 90)},
            "model_s": {"p50": median(model), "p90": pct(model, 90)},
            "total_s": {"p50": median(total), "p90": pct(total, 90)},
            "cold": {"handler_s": r["cold"].handler, "model_s": r["cold"].model, "stages": r["cold"].stages},
            "target_s": target,
            "verdict": verdict,
            "retrieval": r["runs"][-1].retrieval,
        }
    print(
        "  throttle = time the handler's PyGithub client slept before its requests (PyGithub's default "
        "seconds_between_requests=0.25), included in handler"
    )
    print(
        "\nwhere the handler's time goes (median seconds per stage, from its log lines' timestamps; "
        "[throttle sleeps within])"
    )
    sizes = list(results)
    print(
        f"{'stage':<36}"
        + "".join(f"{f'{s} files':>18}" for s in sizes)
        + "".join(f"{f'{s} warm-up':>12}" for s in sizes)
    )
    for name, _ in STAGES:
        row = [median([x.stages.get(name, 0.0) for x in results[s]["runs"]]) for s in sizes]
        slept = [median([x.stage_throttle.get(name, 0.0) for x in results[s]["runs"]]) for s in sizes]
        cold = [results[s]["cold"].stages.get(name, 0.0) for s in sizes]
        cells = "".join(
            f"{f'{v:.3f} [{t:.2f}]' if t >= 0.005 else f'{v:.3f}':>18}"
            for v, t in zip(row, slept, strict=True)
        )
        print(f"{name:<36}" + cells + "".join(f"{v:>12.3f}" for v in cold))
        for s, v, t in zip(sizes, row, slept, strict=True):
            out["sizes"][str(s)].setdefault("stages_p50_s", {})[name] = v
            out["sizes"][str(s)].setdefault("stages_throttle_p50_s", {})[name] = t
    return failures


# ----------------------------------------------------------------------------- burst
async def run_burst_child(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """In a fresh process: ``prs`` PRs across ``installations`` installations, dispatched at once."""
    rss = {"imports": rss_now_mb()}
    tap = LogTap(workdir / "kodiai-burst.log")
    stack = Stack(workdir, real_cli=args.real_cli)
    stack.summary = False
    stack.embedder.generate("warm up", "query")  # loaded and warm, as on a server that already reviewed
    rss["stack and embedder"] = rss_now_mb()
    try:
        t0 = time.perf_counter()
        per_installation = -(-args.burst_prs // args.burst_installations)
        template_root = workdir / "template"
        template = build_repo(
            template_root,
            "tpl",
            "tpl",
            files=args.burst_base_files,
            history=20,
            prs={f"pr-{k}": args.burst_pr_files for k in range(per_installation)},
            findings=1,
        )
        jobs: list[tuple[BuiltRepo, PrBranch, int, int]] = []
        number = 0
        repos: list[BuiltRepo] = []
        for i in range(args.burst_installations):
            installation_id = 500 + i
            owner = f"org{i}"
            stack.add_installation(installation_id, owner)
            # odd installations own two repos (one PR each), even ones one repo with all their PRs
            names = [f"svc{i}-a", f"svc{i}-b"] if i % 2 else [f"svc{i}"]
            owned = []
            for name in names:
                shutil.copytree(template_root / "tpl" / "tpl.git", stack.git_root / owner / f"{name}.git")
                built = BuiltRepo(owner, name, template.base_sha, template.branches)
                stack.add_repo(built, installation_id)
                owned.append(built)
                repos.append(built)
            for k in range(per_installation):
                if len(jobs) == args.burst_prs:
                    break
                number += 1
                jobs.append(
                    (owned[k % len(owned)], template.branches[f"pr-{k}"], 100 + number, installation_id)
                )
        paths = sorted({p for b in template.branches.values() for p in b.files})
        for r, repo in enumerate(repos):
            seed_memories(stack, f"{repo.owner}/{repo.name}", repo.owner, args.burst_memories, paths, seed=r)
        payloads = [stack.open_pr(built, branch, n, inst) for built, branch, n, inst in jobs]
        setup_s = time.perf_counter() - t0
        rss_before = rss["memories seeded, before the burst"] = rss_now_mb()
        cpu = os.times()
        with TreeRss(exclude=stack.helper_pids()) as tree:
            started = time.perf_counter()
            done = await asyncio.gather(*(stack.review(p) for p in payloads))
            wall = time.perf_counter() - started
        cpu_after = os.times()
        ends = [end - started for _, _, _, end in done]
        checks: dict[str, Any] = {}
        per_pr = []
        for (built, _branch, n, _inst), (_delivery, outcome, _s, _e) in zip(jobs, done, strict=True):
            full = f"{built.owner}/{built.name}"
            per_pr.append(
                (
                    outcome.succeeded,
                    stack.executions(full, n),
                    stack.inline_comments(built.owner, built.name, n),
                    stack.executor.calls[f"{full}#{n}"],
                    sum(
                        "<summary>Review Details</summary>" in c["body"]
                        for c in stack.fake.call("issue_comments", built.owner, built.name, n)
                    ),
                )
            )
        checks["dispatched_ok"] = sum(1 for p in per_pr if p[0] == 1)
        checks["one_execution_row"] = sum(1 for p in per_pr if p[1] == 1)
        checks["one_inline_comment"] = sum(1 for p in per_pr if p[2] == 1)
        checks["one_executor_call"] = sum(1 for p in per_pr if p[3] == 1)
        checks["one_review_details"] = sum(1 for p in per_pr if p[4] == 1)
        checks["executor_calls"] = sum(stack.executor.calls.values())
        checks["outcomes"] = dict(stack.outcomes())
        errors = [line.event for line in tap.lines if line.fields.get("level") in ("error", "warning")]
        model_s = [b - a for a, b in stack.executor.spans.values()]
        return {
            "prs": len(jobs),
            "installations": args.burst_installations,
            "repos": len(repos),
            "pr_files": args.burst_pr_files,
            "memories_per_repo": args.burst_memories,
            "setup_s": setup_s,
            "wall_s": wall,
            "first_done_s": min(ends),
            "last_done_s": max(ends),
            "model_s_p50": median(model_s),
            "review_cap": stack.deps.review_limit.limit,
            "max_concurrent_model_calls": stack.executor.max_running,
            "rss_before_mb": rss_before,
            "rss_checkpoints_mb": rss,
            "cpu_s_per_review": {
                "process": (cpu_after.user + cpu_after.system - cpu.user - cpu.system) / len(jobs),
                "children": (
                    cpu_after.children_user
                    + cpu_after.children_system
                    - cpu.children_user
                    - cpu.children_system
                )
                / len(jobs),
            },
            "peak_rss_self_mb": maxrss_mb(resource.RUSAGE_SELF),
            "peak_rss_largest_child_mb": maxrss_mb(resource.RUSAGE_CHILDREN),
            "peak_tree_rss_mb": tree.peak_mb,
            "peak_tree_processes": tree.peak_processes,
            "fake_github_peak_rss_mb": stack.fake.call("maxrss_mb"),
            "real_cli": args.real_cli,
            "checks": checks,
            "warnings": dict(Counter(errors)),
        }
    finally:
        stack.close()
        tap.close()


def run_burst(args: argparse.Namespace, workdir: Path, out: dict[str, Any]) -> int:
    burst_dir = workdir / "burst"
    burst_dir.mkdir()
    command = [
        sys.executable,
        __file__,
        "--burst-child",
        "--workdir",
        str(burst_dir),
        "--burst-prs",
        str(args.burst_prs),
        "--burst-installations",
        str(args.burst_installations),
        "--burst-pr-files",
        str(args.burst_pr_files),
        "--burst-base-files",
        str(args.burst_base_files),
        "--burst-memories",
        str(args.burst_memories),
    ]
    command += ["--loop", args.loop]
    if args.real_cli:
        command.append("--real-cli")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"\nburst child failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return 1
    r = json.loads(done.stdout.strip().splitlines()[-1])
    out["burst"] = r
    c = r["checks"]
    n = r["prs"]
    kinds = (
        "dispatched_ok",
        "one_execution_row",
        "one_inline_comment",
        "one_review_details",
        "one_executor_call",
    )
    ok = all(c[k] == n for k in kinds)
    ok = ok and c["executor_calls"] == n
    model = "real Claude Code CLI vs fake Messages API" if r["real_cli"] else "scripted, in-process"
    print(
        f"\nburst: {n} PRs ({r['pr_files']} files each) across {r['installations']} installations / {r['repos']} repos, "
        f"dispatched at once in a fresh process (model: {model}; {r['memories_per_repo']:,} memories per repo)"
    )
    print(
        f"  reviewed exactly once: {'PASS' if ok else 'FAIL'}  (dispatch ok {c['dispatched_ok']}/{n}, one executions row "
        f"{c['one_execution_row']}/{n}, one inline comment {c['one_inline_comment']}/{n}, one executor call "
        f"{c['one_executor_call']}/{n}, one Review Details comment {c['one_review_details']}/{n}, "
        f"executor calls {c['executor_calls']}; outcomes {c['outcomes']})"
    )
    print(
        f"  wall {r['wall_s']:.2f} s (first review done at {r['first_done_s']:.2f} s, last at {r['last_done_s']:.2f} s); "
        f"global review cap {r['review_cap']} (default_review_concurrency on {os.cpu_count()} CPUs), "
        f"max concurrent model calls {r['max_concurrent_model_calls']}; model p50 {r['model_s_p50']:.2f} s"
    )
    children = "git, claude" if r["real_cli"] else "git"
    print(
        f"  peak RSS: this process {r['peak_rss_self_mb']:.0f} MiB (ru_maxrss; {r['rss_before_mb']:.0f} MiB before the "
        f"burst); this process + its children {r['peak_tree_rss_mb']:.0f} MiB (sampled every 50 ms, "
        f"{r['peak_tree_processes']} processes at the peak: {children})"
    )
    print(
        f"  RUSAGE_CHILDREN ru_maxrss {r['peak_rss_largest_child_mb']:.0f} MiB: the largest single child, and a child "
        f"forked from this process counts its resident pages until it execs; the fake GitHub (a separate "
        f"process, not counted) peaked at {r['fake_github_peak_rss_mb']:.0f} MiB"
    )
    print(
        "  RSS checkpoints: "
        + ", ".join(f"{name} {mb:.0f} MiB" for name, mb in r["rss_checkpoints_mb"].items())
        + f"; CPU per review: this process {r['cpu_s_per_review']['process']:.2f} s, its children "
        f"{r['cpu_s_per_review']['children']:.2f} s"
    )
    if not r["real_cli"]:
        print("  note: the scripted model runs in-process, so no Claude Code CLI memory is included")
    if r["warnings"]:
        print(f"  warnings/errors logged: {r['warnings']}")
    return 0 if ok else 1


# ----------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="measured runs per PR size (after one warm-up)")
    parser.add_argument("--quick", action="store_true", help="1 run per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500], help="changed files per PR")
    parser.add_argument("--base-files", type=int, default=800, help="source files on main")
    parser.add_argument("--history", type=int, default=60, help="commits on main")
    parser.add_argument("--memories", type=int, default=10_000, help="learned memories of the reviewed repo")
    parser.add_argument("--no-burst", action="store_true")
    parser.add_argument("--burst-only", action="store_true")
    parser.add_argument("--burst-prs", type=int, default=20)
    parser.add_argument("--burst-installations", type=int, default=10)
    parser.add_argument("--burst-pr-files", type=int, default=20)
    parser.add_argument("--burst-base-files", type=int, default=200)
    parser.add_argument("--burst-memories", type=int, default=1_000, help="memories per burst repo")
    parser.add_argument("--real-cli", action="store_true", help="burst with the real bundled Claude Code CLI")
    parser.add_argument(
        "--loop",
        choices=sorted(LOOPS),
        default="asyncio",
        help="event loop of the handler stack (kodiai serve runs the asyncio loop)",
    )
    parser.add_argument("--json", action="store_true", help="also print one JSON object (last line)")
    parser.add_argument("--workdir", type=Path, help="keep repos, stores and logs here (default: a temp dir)")
    parser.add_argument("--burst-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.runs = 1

    if args.burst_child:
        with asyncio.Runner(loop_factory=LOOPS[args.loop]) as runner:
            result = runner.run(run_burst_child(args, args.workdir))
        print(json.dumps(result))
        return 0

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kodiai-review-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"cpus": os.cpu_count(), "runs": args.runs}
    failures = 0
    print(
        f"kodiai review handler benchmark: handler stack on {args.loop}, fake GitHub in a child process, "
        f"{os.cpu_count()} CPUs ({workdir})",
        flush=True,
    )
    try:
        if not args.burst_only:
            with asyncio.Runner(loop_factory=LOOPS[args.loop]) as runner:
                failures += runner.run(run_sizes(args, workdir, out))
        if not args.no_burst:
            failures += run_burst(args, workdir, out)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(out, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
