"""The review the fake model plays: what a careful reviewer does with Kodiai's prompt, turn by turn.

The fake Anthropic API replaces the model, not the work around it: the real Claude Code CLI runs every tool
call below (the git MCP tools run git in the workspace, Read reads the checkout inside the sandbox, the
comment tools publish), and each turn's request carries whatever those tools returned. The sequence:

1. the two calls the prompt's "Reading the code" section names, in one message: the diff of the whole
   range and ``git log --stat``;
2. when that diff did not fit in one answer (the git tools answer 40,000 bytes per call and end a cut
   answer with the offset of the next part), what the section says to do on a large change: with the
   prompt's large-PR triage, list the files (``stat``), then diff the triaged files not yet read one file
   per call (several calls per message), following a cut file's offsets up to ``pages_per_file`` pages;
   without triage, page through the whole diff with the offsets. Either until the conversation reaches
   ``context_budget_tokens`` or the run's turn limit comes near;
3. the surrounding code of the most-changed source files with Read (one file per ten changed files, at
   least one, at most three; a long file is read 300 lines around its first change), in one message;
4. one inline comment per finding, one per turn, on an added line of a changed file: one finding per
   ``lines_per_finding`` changed lines, at least one, at most ``max_findings``;
5. the summary comment in the prompt's template, then a closing text.

What the fake cannot produce is the model's thinking (the CLI asks for extended thinking, and keeps its
blocks in the conversation). Every assistant message therefore starts with ``think_chars`` characters of
reasoning text (``analysis_chars`` before the first finding): output tokens that later requests carry
as input, as thinking blocks are.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cost_sizing_lib.corpus import git
from kodiai.config import RepoConfig
from support.fake_anthropic import MainRequest, Reply, Text, ToolUse, ToolUses

#: What the CLI puts in place of a tool result over its limits (over 25,000 tokens an error, over about
#: 50 KB a 2 KB preview): the git tools' pages are far under both, so the reviewer stops if it ever sees one.
REFUSED = ("exceeds maximum allowed tokens", "<persisted-output>")
#: How the git tools end a cut answer, and the offset of the next part it names.
CUT = "[output cut at "
OFFSET_RE = re.compile(r'"offset": (\d+)')
DIFF_HEADER_RE = re.compile(r"^diff --git a/.* b/(.*)$", re.MULTILINE)
PAGE_CHARS = 40_000  # one git tool answer at most (kodiai.execution.tools.git_page.PAGE_BYTES)
DIFF = "mcp__git__diff"
MAX_TURNS = int(RepoConfig().max_turns)  # .kodiai.yml maxTurns, default 25
INLINE = "mcp__github_inline_comment__create_inline_comment"
COMMENT = "mcp__github_comment__create_comment"
CODE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".d.ts", ".go", ".rs", ".java", ".rb")
PR_RE = re.compile(r"pull request #(\d+) in ")
WORKDIR_RE = re.compile(r"Primary working directory: (\S+)")


@dataclass(frozen=True)
class Assumptions:
    """The reviewer's behaviour that no measurement here can fix: stated in the benchmark's output."""

    think_chars: int = 1000
    analysis_chars: int = 6000
    lines_per_finding: int = 250
    max_findings: int = 8
    context_budget_tokens: int = 120_000
    diff_batch: int = 8  # git tool calls per message
    pages_per_file: int = 3


@dataclass(frozen=True)
class ChangedFile:
    path: str
    added: int
    removed: int
    diff_bytes: int
    first_added_line: int | None
    head_lines: int | None  # None: deleted in the head


@dataclass(frozen=True)
class PullFacts:
    """What the reviewer's plan depends on, read from the repository with git."""

    base_sha: str
    head_sha: str
    files: tuple[ChangedFile, ...]  # rename detection off: a renamed file is a deletion and an addition
    diff_bytes: int
    shortstat: tuple[int, int, int]  # files, insertions, deletions as git (and the prompt) count them

    @property
    def lines_changed(self) -> int:
        return self.shortstat[1] + self.shortstat[2]


def read_facts(repo: Path, base: str, head: str) -> PullFacts:
    """Files, line counts, per-file diff sizes and first added lines of ``base...head`` (the head's
    files are read from the work tree, which must have ``head`` checked out)."""
    base_sha = git(repo, "rev-parse", base).strip()
    head_sha = git(repo, "rev-parse", head).strip()
    if git(repo, "rev-parse", "HEAD").strip() != head_sha:
        raise ValueError(f"{repo} must have {head} checked out")
    diff = git(repo, "diff", "--no-renames", "--no-color", f"{base_sha}...{head_sha}")
    per_path: dict[str, tuple[int, int | None]] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        header = re.match(r"diff --git a/(.+?) b/(.+)\n", chunk)
        if header:
            per_path[header.group(2)] = (len(chunk.encode()), first_added_line(chunk))
    in_head = set(git(repo, "ls-tree", "-r", "--name-only", head_sha).splitlines())
    files = []
    for line in git(repo, "diff", "--no-renames", "--numstat", f"{base_sha}...{head_sha}").splitlines():
        added, removed, path = line.split("\t", 2)
        size, first = per_path.get(path, (0, None))
        head_lines = _line_count(repo / path) if path in in_head and added != "-" else None
        files.append(
            ChangedFile(
                path,
                int(added) if added.isdigit() else 0,
                int(removed) if removed.isdigit() else 0,
                size,
                first if head_lines else None,
                head_lines,
            )
        )
    stat = git(repo, "diff", "--shortstat", f"{base_sha}...{head_sha}")
    return PullFacts(base_sha, head_sha, tuple(files), len(diff.encode()), parse_shortstat(stat))


def parse_shortstat(stat: str) -> tuple[int, int, int]:
    """``3 files changed, 10 insertions(+), 2 deletions(-)`` → ``(3, 10, 2)`` (a missing part is 0)."""

    def count(word: str) -> int:
        found = re.search(rf"(\d+) {word}", stat)
        return int(found.group(1)) if found else 0

    return count("file"), count("insertion"), count("deletion")


def first_added_line(chunk: str) -> int | None:
    """The head-side line number of the first ``+`` line of one file's diff."""
    line_no: int | None = None
    for line in chunk.splitlines():
        hunk = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
        if hunk:
            line_no = int(hunk.group(1))
        elif line_no is None:
            continue
        elif line.startswith("+"):
            return line_no
        elif line.startswith(" "):
            line_no += 1
    return None


def _line_count(path: Path) -> int | None:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return None


# ----------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Call:
    """A tool call; ``read_path`` is relative to the workspace (made absolute when the reply is sent)."""

    name: str
    input: dict[str, object]
    read_path: str | None = None


@dataclass(frozen=True)
class Step:
    calls: tuple[Call, ...]
    think: int  # characters of reasoning text before the calls (or the closing text)
    text: str | None = None  # the closing text (no calls)


def triage_lists(prompt: str) -> list[str]:
    """The files the prompt's large-PR triage names (full review first, then abbreviated)."""
    names: list[str] = []
    for heading in ("### Full Review", "### Abbreviated Review"):
        at = prompt.find(heading)
        if at < 0:
            continue
        for line in prompt[at:].splitlines()[1:]:
            if line.startswith("- "):
                names.append(line[2:].strip())
            elif line.startswith("#"):
                break
    return names


def _by_change(files: tuple[ChangedFile, ...]) -> list[ChangedFile]:
    return sorted(files, key=lambda f: (-(f.added + f.removed), f.path))


class ReviewPlanner:
    """One PR's conversation, decided turn by turn from what the previous turn's tools returned.

    A diff too large for one git tool answer comes a page at a time (see :data:`CUT`): the reviewer reads
    the rest as the prompt says (the file list, then one file per call, or the next offsets), in messages
    of up to ``diff_batch`` calls that fit the context budget; what does not fit is left unread
    (``skipped``: files, or further pages of a file)."""

    def __init__(self, facts: PullFacts, prompt: str, a: Assumptions) -> None:
        self.facts, self.a = facts, a
        self.range = f"{facts.base_sha}...{facts.head_sha}"
        by_path = {f.path: f for f in facts.files}
        triaged = [by_path[p] for p in triage_lists(prompt) if p in by_path]
        self.triaged = bool(triaged)
        self.reviewed = triaged or _by_change(facts.files)
        self.sizes = {f.path: f.diff_bytes for f in facts.files}
        log = Call("mcp__git__log", {"revision": f"{facts.base_sha}..{facts.head_sha}", "stat": True})
        self.steps = [Step((Call(DIFF, {"revisions": [self.range]}), log), a.think_chars)]
        self.tail = tail_steps(facts, self.reviewed, a)
        self.queue: list[Call] = []
        self.pages: dict[str, int] = {}  # pages read of each file's own diff
        self.diff_steps = 0
        self.whole_refused = False  # the whole-range diff did not fit in one answer
        self.refused = 0  # diff answers that were cut (their note followed or not)
        self.narrowed = 0  # diff calls after the first: the file list, one file's diff, a next page
        self.skipped = 0

    def step(self, turn: int, request: MainRequest) -> Step:
        while len(self.steps) <= turn:
            self.steps.append(self._next(request))
        return self.steps[turn]

    def _next(self, request: MainRequest) -> Step:
        for call, text in last_results(request):
            if any(marker in text for marker in REFUSED):
                raise RuntimeError(f"the CLI kept a {call.get('name')} result from the model: {text[:200]}")
            if call.get("name") == DIFF:
                self._read_diff_answer(dict(call.get("input") or {}), text)
        context = len(json.dumps(request.body)) / 3.5
        room = len(self.steps) + len(self.tail) < MAX_TURNS  # the run's turn limit (maxTurns) is not reached
        if self.queue and context < self.a.context_budget_tokens and room:
            calls = self._batch(self.a.context_budget_tokens - context)
            self.diff_steps += 1
            self.narrowed += len(calls)
            return Step(tuple(calls), self.a.think_chars)
        self.skipped += len({str(c.input.get("paths")) for c in self.queue})
        self.queue = []
        done = len(self.steps) - 1 - self.diff_steps
        return self.tail[min(done, len(self.tail) - 1)]

    def _read_diff_answer(self, args: dict[str, Any], text: str) -> None:
        """Queue what the prompt says to do after this diff answer."""
        if args.get("stat") or args.get("nameOnly"):
            return
        paths = [str(p) for p in args.get("paths") or []]
        for path in paths:
            self.pages[path] = self.pages.get(path, 0) + 1
        note = cut_note(text)
        if note is None:
            return
        self.refused += 1
        found = OFFSET_RE.search(note)
        following = {**args, "offset": int(found.group(1))} if found else None
        first_page = not paths and not args.get("offset")
        if first_page and self.triaged:
            self.whole_refused = True
            read = DIFF_HEADER_RE.findall(text)[:-1]  # every file before the one the page ends in
            self.queue.append(Call(DIFF, {"revisions": [self.range], "stat": True}))
            self.queue += [
                Call(DIFF, {"revisions": [self.range], "paths": [f.path]})
                for f in self.reviewed
                if f.diff_bytes and f.path not in read
            ]
            return
        self.whole_refused |= not paths
        if following is None:
            return
        if paths and max(self.pages[p] for p in paths) >= self.a.pages_per_file:
            self.skipped += 1  # the rest of this file's diff
            return
        self.queue.insert(0, Call(DIFF, following))

    def _batch(self, room_tokens: float) -> list[Call]:
        """The next calls for one message: at least one, then as many as fit ``room_tokens``."""
        if self.queue[0].input.get("stat"):
            return [self.queue.pop(0)]  # the file list first, on its own
        calls: list[Call] = []
        used = 0.0
        while self.queue and len(calls) < self.a.diff_batch:
            size = self._answer_chars(self.queue[0])
            if calls and used + size / 3.5 > room_tokens:
                break
            calls.append(self.queue.pop(0))
            used += size / 3.5
        return calls

    def _answer_chars(self, call: Call) -> int:
        """About how long the call's answer is: a page, a shorter file's whole diff, a file list."""
        if call.input.get("stat"):
            return 100 * len(self.facts.files)
        paths = call.input.get("paths")
        if isinstance(paths, list) and paths and not call.input.get("offset"):
            return min(PAGE_CHARS, self.sizes.get(str(paths[0]), PAGE_CHARS))
        return PAGE_CHARS


def cut_note(text: str) -> str | None:
    """The note a cut git tool answer ends with (the CLI may append a ``<system-reminder>`` after it)."""
    at = text.rfind("\n" + CUT)
    if at < 0 and not text.startswith(CUT):
        return None
    return text[at + 1 :].split("\n", 1)[0]


def last_results(request: MainRequest) -> list[tuple[dict[str, Any], str]]:
    """``(tool_use block, result text)`` of each call the previous turn made."""
    uses: dict[object, dict[str, Any]] = {}
    for message in request.messages:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    uses[block.get("id")] = block
    return [(uses.get(r.tool_use_id, {}), r.text) for r in request.tool_results]


def tail_steps(facts: PullFacts, reviewed: list[ChangedFile], a: Assumptions) -> list[Step]:
    """After the diffs: read the context, post the findings and the summary, close."""
    steps = []
    readable = sorted(
        (f for f in reviewed if f.head_lines and f.path.endswith(CODE_SUFFIXES)),
        key=lambda f: "test" in f.path,
    )
    count = min(3, max(1, facts.shortstat[0] // 10))
    reads = []
    for f in readable[:count]:
        args: dict[str, object] = {}
        assert f.head_lines is not None
        if f.head_lines > 600:
            args = {"offset": max(1, (f.first_added_line or 1) - 150), "limit": 300}
        reads.append(Call("Read", args, read_path=f.path))
    if reads:
        steps.append(Step(tuple(reads), a.think_chars))
    targets = sorted(
        (f for f in reviewed if f.first_added_line is not None),
        key=lambda f: (not f.path.endswith(CODE_SUFFIXES), "test" in f.path),
    )
    findings = max(1, min(a.max_findings, facts.lines_changed // a.lines_per_finding))
    posted: list[tuple[str, int, str]] = []
    for i in range(findings):
        if not targets:
            break
        f = targets[i % len(targets)]
        assert f.first_added_line is not None
        title = f"Unchecked input reaches {Path(f.path).name} (finding {i + 1})"
        body = (
            f"[MAJOR] {title}\n\nThe value read here is used without checking it, so a caller passing an "
            "empty or malformed value gets an exception instead of the documented error. Validate it "
            "before use, as the other entry points in this module do."
        )
        posted.append((f.path, f.first_added_line, title))
        call = Call(INLINE, {"path": f.path, "line": f.first_added_line, "body": body})
        steps.append(Step((call,), a.analysis_chars if i == 0 else a.think_chars))
    steps.append(Step((Call(COMMENT, {"issueNumber": 0, "body": summary(posted)}),), a.think_chars))
    steps.append(Step((), 0, text="Review posted: the inline comments and the summary are on the PR."))
    return steps


def summary(posted: list[tuple[str, int, str]]) -> str:
    lines = [
        "<details>",
        "<summary>Kodiai Review Summary</summary>",
        "",
        "## What Changed",
        "Updates the package to its next release: new behaviour, fixes and the matching tests.",
        "Reviewed: core logic, error handling, tests",
        "",
        "## Observations",
        "",
        "### Impact",
    ]
    for path, line, title in posted:
        lines += [f"[MAJOR] {path} ({line}): {title}", "A malformed value raises instead of being rejected."]
    lines += [
        "",
        "## Verdict",
        f":red_circle: **Address before merging** -- {len(posted)} blocking issue(s) found",
        "</details>",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- replies

_REASONING = (
    "The change touches {path}. I compare the new code path with the callers in the diff and check what "
    "happens with empty, missing and malformed values, whether errors are raised or swallowed, whether "
    "resources opened here are closed on every path, and whether the tests cover the new branch. "
)


def reasoning(chars: int, path: str) -> str:
    if chars <= 0:
        return ""
    sentence = _REASONING.format(path=path)
    return (sentence * (chars // len(sentence) + 1))[:chars]


def realize(step: Step, workdir: str, number: int) -> Reply:
    """The step as the fake API's reply: calls with absolute Read paths and the PR's number."""
    first = step.calls[0] if step.calls else None
    path = (first.read_path or str(first.input.get("path", "the diff"))) if first else "the review"
    think = reasoning(step.think, path)
    if not step.calls:
        return Text(((think + "\n\n") if think else "") + (step.text or "Done."))
    uses = []
    for call in step.calls:
        args = dict(call.input)
        if call.read_path is not None:
            args = {"file_path": f"{workdir.rstrip('/')}/{call.read_path}", **args}
        if call.name == COMMENT:
            args["issueNumber"] = number
        uses.append(ToolUse(call.name, args))
    return ToolUses(*uses, text=think or None)


def reply_text(reply: Reply) -> str:
    """What the model wrote in a reply (its output tokens): text, tool names and their inputs."""
    if isinstance(reply, Text):
        return reply.text
    if isinstance(reply, ToolUse):
        return reply.name + json.dumps(reply.input)
    if isinstance(reply, ToolUses):
        return (reply.text or "") + "".join(c.name + json.dumps(c.input) for c in reply.calls)
    return ""


@dataclass
class ScriptedReviewer:
    """The fake model's script: each PR's plan (by the number in its prompt), one step per turn.

    ``delay`` seconds pass before each answer (the model's latency), in the fake's worker thread."""

    plan_for: dict[int, ReviewPlanner]
    delay: float = 0.0
    output: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: MainRequest) -> Reply:
        text = request.user_text
        match = PR_RE.search(text)
        number = int(match.group(1)) if match else 0
        workdir = WORKDIR_RE.search(text)
        with self.lock:
            planner = self.plan_for.get(number) or self.plan_for[min(self.plan_for)]
            step = planner.step(request.turn, request)
        reply = realize(step, workdir.group(1) if workdir else ".", number)
        with self.lock:
            self.output[number].append(reply_text(reply))
        if self.delay:
            time.sleep(self.delay)
        return reply
