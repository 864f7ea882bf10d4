"""A Kodiai cluster on one host, for the cluster test and ``benchmarks/cluster_throughput.py``.

``kodiai serve`` replicas (``--role web`` / ``--role worker``, real processes started by
:class:`support.kodiai_process.KodiaiProcess`) on one PostgreSQL (``DATABASE_URL``) and one learned memory
(``LEARNING_MEMORY_URI``, an S3 bucket), between the fake GitHub (REST + git over smart HTTP) and the fake
model (the real Claude Code CLI against the fake Messages API, answering each call after a think time).

The workload: :class:`Tenant` is one installation with one repository. Its deliveries are review triggers
(``pull_request`` ``opened`` for a new PR, ``synchronize`` for a new head pushed to it) and plain human
comments (``issue_comment`` without a mention: a job that ends without any GitHub effect), each a signed
body. The model posts one inline finding (+ the summary) on the first PR of each repository and approves
every other head. :class:`ModelLog` keeps each model call's interval per repository, an account of the
jobs' timing that does not come from Kodiai's own journal.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from e2e.stack import SECRET, pull_payload
from kodiai.webhook.signature import sign
from support.fake_anthropic import FakeAnthropic, MainRequest, Reply, Text, ToolUse
from support.fake_github import FakeGitHub
from support.fake_github_git import install_git_routes
from support.fake_github_pr import PrState, install_pr_routes
from support.gitrepo import BareRepo, git
from support.kodiai_process import KodiaiProcess

INLINE = "mcp__github_inline_comment__create_inline_comment"
COMMENT = "mcp__github_comment__create_comment"
PROMPT_RE = re.compile(r"pull request #(\d+) in ([\w.-]+/[\w.-]+)\.")
MARKER_RE = re.compile(r"kodiai:(review-output-key|review-details):(\S+?) -->")
FINDING_TITLE = "Division by zero when b is 0"
BASE_FILES = {
    "README.md": "# service\n",
    "src/app.py": "def add(a, b):\n    return a + b\n",
    ".kodiai.yml": "review:\n  triggers:\n    onSynchronize: true\n",  # pushes are reviewed too
}
FINDING_FILES = {"src/app.py": "def add(a, b):\n    return a + b\n\ndef div(a, b):\n    return a / b\n"}


# ----------------------------------------------------------------------------- the workload
@dataclass(frozen=True)
class Delivery:
    """One webhook delivery as GitHub would send it (``replay_of``: the same body under a new id)."""

    id: str
    event: str
    body: bytes
    installation: int
    repo: str
    pr: int
    head: str | None = None  # the head a review trigger asks to review
    replay_of: str | None = None

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "X-GitHub-Event": self.event,
            "X-GitHub-Delivery": self.id,
            "X-Hub-Signature-256": sign(SECRET, self.body),
            "User-Agent": "GitHub-Hookshot/cluster",
        }

    def replayed(self) -> Delivery:
        """A captured body sent again under a new delivery id (acknowledged, never run again)."""
        return Delivery(
            f"replay-{uuid.uuid4()}", self.event, self.body, self.installation, self.repo, self.pr,
            self.head, replay_of=self.id,
        )  # fmt: skip


@dataclass
class Tenant:
    """One installation with one repository (``org<i>/svc<i>``) and its deliveries, in order."""

    installation: int
    owner: str
    name: str
    repo: BareRepo
    base: str
    deliveries: list[Delivery] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def _payload(self, number: int, head: str, action: str, **extra: Any) -> dict[str, Any]:
        payload = pull_payload(
            self.repo, number, head_sha=head, base_sha=self.base, branch=f"pr-{number}",
            title=f"Change {number}", action=action, delivery_extra=extra,
        )  # fmt: skip
        payload["installation"] = {"id": self.installation}
        payload["repository"]["id"] = self.installation * 10
        return payload

    def _add(self, event: str, payload: dict[str, Any], number: int, head: str | None) -> Delivery:
        delivery = Delivery(
            f"d-{self.installation}-{len(self.deliveries):03d}-{uuid.uuid4().hex[:8]}",
            event, json.dumps(payload).encode(), self.installation, self.full_name, number, head,
        )  # fmt: skip
        self.deliveries.append(delivery)
        return delivery

    def open_pr(self, state: PrState, number: int, files: dict[str, str]) -> Delivery:
        """A new PR branched from main (its head pushed to the repository): ``pull_request.opened``."""
        git("checkout", "-q", "main", cwd=self.repo.work)
        head = self.repo.commit(files, f"change {number}", branch=f"pr-{number}")
        state.add_pull(self.owner, self.name, number, head_sha=head, author="alice")
        return self._add("pull_request", self._payload(number, head, "opened"), number, head)

    def push(self, state: PrState, number: int, files: dict[str, str]) -> Delivery:
        """A new commit on the PR's branch: ``pull_request.synchronize`` for the new head."""
        before = state.pull(self.owner, self.name, number)
        assert before is not None
        head = self.repo.commit(files, f"push to {number}", branch=f"pr-{number}")
        state.add_pull(self.owner, self.name, number, head_sha=head, author="alice")
        payload = self._payload(number, head, "synchronize", before=before["head"]["sha"], after=head)
        return self._add("pull_request", payload, number, head)

    def retrigger(self, review: Delivery) -> Delivery:
        """Another review trigger for an already triggered head (a new body: action, ``updated_at``)."""
        assert review.head is not None
        k = len(self.deliveries)
        action = "synchronize" if k % 2 else "ready_for_review"
        payload = self._payload(review.pr, review.head, action, before=review.head, after=review.head)
        payload["pull_request"]["updated_at"] = f"2026-11-28T06:00:{k:02d}Z"
        return self._add("pull_request", payload, review.pr, review.head)

    def comment(self, number: int, text: str) -> Delivery:
        """A human's plain comment on the PR (no mention of the app)."""
        payload = self._payload(number, "0" * 40, "opened")
        issue = {"number": number, "title": f"Change {number}", "pull_request": {"url": "x"},
                 "user": {"login": "bob", "type": "User"}, "state": "open"}  # fmt: skip
        body = {
            "action": "created",
            "issue": issue,
            "comment": {"id": 10**6 + len(self.deliveries), "body": text,
                        "user": {"login": "bob", "type": "User"}, "author_association": "MEMBER"},
            "repository": payload["repository"],
            "installation": payload["installation"],
            "sender": {"login": "bob", "type": "User"},
        }  # fmt: skip
        return self._add("issue_comment", body, number, None)


#: One installation's deliveries, in order: ``r<k>`` the k-th new head to review (PR 1 opened with a finding,
#: PR 2 opened, PR 2's push), ``c`` a plain comment, ``a<k>`` a later trigger for head k (``synchronize`` or
#: ``ready_for_review`` with a new body, as GitHub sends for the same head): its run is already claimed, so
#: it must end without an effect on whichever worker runs it. 12 ``pull_request`` events, 4 comments.
PATTERN = ["r0", "c", "a0", "r1", "c", "a1", "a0", "r2", "c", "a2", "a1", "a2", "c", "a0", "a1", "a2"]


def build_tenants(
    fake: FakeGitHub, state: PrState, root: Path, count: int, *, first_installation: int = 101
) -> list[Tenant]:
    """``count`` installations, each with one repository and the deliveries of :data:`PATTERN`."""
    tenants = []
    for i in range(count):
        installation = first_installation + i
        owner, name = f"org{installation}", f"svc{installation}"
        fake.add_installation(installation, account=owner)
        fake.add_repo(owner, name, installation_id=installation)
        state.set_permission(owner, name, "alice", "write")  # a writer's findings are learned at once
        repo = BareRepo(root, owner, name)
        tenant = Tenant(installation, owner, name, repo, repo.commit(BASE_FILES, "base"))
        reviews: list[Delivery] = []
        for step in PATTERN:
            if step == "r0":
                reviews.append(tenant.open_pr(state, 1, FINDING_FILES))
            elif step == "r1":
                reviews.append(tenant.open_pr(state, 2, {"docs/notes.md": "Notes.\n"}))
            elif step == "r2":
                reviews.append(tenant.push(state, 2, {"docs/notes.md": "Notes, take 2.\n"}))
            elif step == "c":
                tenant.comment(
                    1 + len(tenant.deliveries) % 2, f"Looks fine to me ({len(tenant.deliveries)})."
                )
            else:
                tenant.retrigger(reviews[int(step[1:])])
        tenants.append(tenant)
    return tenants


# ----------------------------------------------------------------------------- the fake model
@dataclass
class ModelCall:
    repo: str
    pr: int
    start: float
    end: float = 0.0


class ModelLog:
    """The fake model's answers: a finding on PR 1 of each repository, an approval elsewhere; every main
    call waits ``think`` seconds (``random.uniform(*think)``) and is logged with its interval."""

    def __init__(self, think: tuple[float, float], seed: int = 25) -> None:
        self.think = think
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.calls: list[ModelCall] = []
        self._open: dict[int, ModelCall] = {}

    def delay(self, request: MainRequest) -> float:
        match = PROMPT_RE.search(request.user_text)
        call = ModelCall(match.group(2) if match else "?", int(match.group(1)) if match else -1, time.time())
        with self.lock:
            self.calls.append(call)
            self._open[request.index] = call
            return self.rng.uniform(*self.think)

    def script(self, request: MainRequest) -> Reply:
        with self.lock:
            call = self._open.pop(request.index)
            call.end = time.time()
        if call.pr != 1:
            return Text("No issues found.")
        turns: list[Reply] = [
            ToolUse(
                INLINE, {"path": "src/app.py", "line": 5, "body": f"[MAJOR] {FINDING_TITLE}\n\nGuard b."}
            ),
            ToolUse(COMMENT, {"issueNumber": call.pr, "body": summary_body("src/app.py", 5, FINDING_TITLE)}),
            Text("Review posted."),
        ]
        return turns[min(request.turn, len(turns) - 1)]

    def in_flight(self) -> int:
        with self.lock:
            return len(self._open)


def summary_body(path: str, line: int, title: str) -> str:
    return "\n".join(
        [
            "<details>", "<summary>Kodiai Review Summary</summary>", "", "## What Changed", "Adds a helper.",
            "", "## Observations", "", "### Impact", f"[MAJOR] {path} ({line}): {title}",
            "The input is not checked.", "", "## Verdict",
            ":red_circle: **Address before merging** -- 1 blocking issue(s) found", "</details>",
        ]
    )  # fmt: skip


# ----------------------------------------------------------------------------- the cluster
class Cluster:
    """The fakes and the replicas (``procs`` by name), sharing one environment (``env``)."""

    def __init__(self, tmp: Path, env: dict[str, str], *, think: tuple[float, float]) -> None:
        self.tmp = tmp
        self.env = env
        self.fake = FakeGitHub().start()
        self.state = install_pr_routes(self.fake)
        self.git = install_git_routes(self.fake, tmp / "git")
        self.log = ModelLog(think)
        self.model = FakeAnthropic(script=self.log.script, delay=self.log.delay).start()
        self.procs: dict[str, KodiaiProcess] = {}

    def process(self, name: str, role: str | None, **env: str) -> KodiaiProcess:
        home = self.tmp / name
        home.mkdir(exist_ok=True)
        argv = ("--role", role) if role else ()
        proc = KodiaiProcess(home, self.fake, self.model, argv=argv, **{**self.env, **env})
        self.procs[name] = proc
        return proc

    def start(self, names: Iterable[str]) -> None:
        """Start these replicas side by side (each start waits for its /health)."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda n: self.procs[n].start(timeout=180), names))

    def kill(self, name: str) -> None:
        self.procs[name].stop(signal.SIGKILL)

    def close(self) -> None:
        for proc in self.procs.values():
            proc.stop(timeout=15)
        self.model.stop()
        self.fake.stop()

    # ---------------------------------------------------------------- what GitHub received
    def bot_writes(self) -> list[tuple[str, str, int, str]]:
        """Every comment, review comment and review the app created: (kind, repo, PR number, body)."""
        out = []
        for record in list(self.fake.records):
            match = re.fullmatch(r"/repos/([^/]+/[^/]+)/(issues|pulls)/(\d+)/(comments|reviews)", record.path)
            if record.method != "POST" or match is None or record.status >= 300:
                continue
            kind = {"issues": "comment", "pulls": "inline"}[match.group(2)]
            if match.group(4) == "reviews":
                kind = f"review:{(record.json or {}).get('event', '')}"
            out.append((kind, match.group(1), int(match.group(3)), str((record.json or {}).get("body", ""))))
        return out


def worker_is_mid_job(proc: KodiaiProcess) -> bool:
    """The process has a child running (the Claude Code CLI in its sandbox, or git): a job is mid-way."""
    if proc.proc is None:
        return False
    pid = proc.proc.pid
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return any((task / "children").read_text().strip() for task in tasks)
    except OSError:
        return False


# ----------------------------------------------------------------------------- sending
@dataclass
class Outcome:
    delivery: Delivery
    acked: bool = False
    statuses: list[int | str] = field(default_factory=list)
    acked_at: float = 0.0


class Sender:
    """Sends a tenant's deliveries one after another (GitHub's order), each to one web replica and then
    again to the other; a delivery not acknowledged (refused connection, reset, 5xx) is resent to the
    other replica, as GitHub's redelivery would."""

    def __init__(self, webs: list[KodiaiProcess], deadline: float = 120.0) -> None:
        self.webs = webs
        self.deadline = deadline
        self.lock = threading.Lock()
        self.outcomes: list[Outcome] = []
        self.post_seconds: list[float] = []
        self.client = httpx.Client(timeout=15)

    def _post(self, web: KodiaiProcess, delivery: Delivery) -> int | str:
        started = time.monotonic()
        try:
            return self.client.post(
                f"http://127.0.0.1:{web.port}/webhooks/github",
                content=delivery.body,
                headers=delivery.headers(),
            ).status_code
        except httpx.HTTPError as exc:
            return type(exc).__name__
        finally:
            with self.lock:
                self.post_seconds.append(time.monotonic() - started)

    def send(self, delivery: Delivery, first: int) -> Outcome:
        outcome = Outcome(delivery)
        target = first
        stop = time.monotonic() + self.deadline
        while time.monotonic() < stop:
            status = self._post(self.webs[target % len(self.webs)], delivery)
            outcome.statuses.append(status)
            if isinstance(status, int) and 200 <= status < 300:
                outcome.acked, outcome.acked_at = True, time.time()
                break
            target += 1  # resent to the other replica
            time.sleep(0.05)
        if outcome.acked:  # GitHub's at-least-once: the same delivery again, to the other replica
            outcome.statuses.append(self._post(self.webs[(target + 1) % len(self.webs)], delivery))
        with self.lock:
            self.outcomes.append(outcome)
        return outcome

    def send_all(self, streams: list[list[Delivery]], progress: Callable[[int], None] | None = None) -> None:
        """One thread per stream (an installation's deliveries in order); ``progress(n)`` after each ack."""

        def run(index: int, stream: list[Delivery]) -> None:
            for k, delivery in enumerate(stream):
                self.send(delivery, index + k)
                if progress is not None:
                    progress(len(self.outcomes))

        with ThreadPoolExecutor(max_workers=len(streams)) as pool:
            for future in [pool.submit(run, i, s) for i, s in enumerate(streams)]:
                future.result()

    def close(self) -> None:
        self.client.close()


def with_replays(deliveries: list[Delivery], every: int) -> list[Delivery]:
    """The stream with a replay of every ``every``-th delivery's body (new id) two positions later."""
    out = list(deliveries)
    for k in range(len(deliveries) - 1, -1, -1):
        if every and k % every == every - 1:
            out.insert(min(len(out), out.index(deliveries[k]) + 3), deliveries[k].replayed())
    return out


# ----------------------------------------------------------------------------- PostgreSQL reads
def rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


def journal(url: str) -> dict[str, tuple[Any, ...]]:
    """delivery id → (seq, installation, status, attempts, started_at, finished_at)."""
    found = rows(
        url,
        "SELECT delivery_id, seq, installation_id, status, attempts, started_at, finished_at"
        " FROM delivery_journal",
    )
    return {str(r[0]): tuple(r[1:]) for r in found}


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of ``pid``, its children it has waited for, and its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick  # utime stime cutime cstime
        children = [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except OSError:
        return 0.0
    return own + sum(tree_cpu_seconds(c) for c in children)


def host_cpu_seconds() -> float:
    """CPU time spent by the whole host so far (user + nice + system + irq + softirq, all cores)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = sum(int(fields[i]) for i in (0, 1, 2, 5, 6))
    return ticks / os.sysconf("SC_CLK_TCK")


def markers(body: str) -> Iterator[tuple[str, str]]:
    """(marker kind, review output key) of each Kodiai marker in a body."""
    for match in MARKER_RE.finditer(body):
        yield match.group(1), match.group(2)


def head_of(key: str) -> str:
    return key.rsplit(":head-", 1)[1]


def delivery_of(key: str) -> str:
    return key.split(":delivery-", 1)[1].split(":head-", 1)[0]


def duplicates(items: Iterable[Any]) -> dict[Any, int]:
    return {k: n for k, n in Counter(items).items() if n > 1}
