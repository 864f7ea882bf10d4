"""The review, end to end: a signed webhook to ``kodiai serve`` (a real process) → a published review,
telemetry and a learned memory that the next PR retrieves. Only the model is faked (at the Messages API,
behind the real Claude Code CLI); GitHub is the fake REST server with git over smart HTTP.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from stack import INSTALLATION, OWNER, REPO, pull_payload, summary

from kodiai.learning.memory_store import open_memory_store
from support.fake_anthropic import Fail, FakeAnthropic, Hang, MainRequest, Reply, Text, ToolUse
from support.fake_github import FakeGitHub
from support.fake_github_git import GitRoutes, install_git_routes
from support.fake_github_pr import PrState, install_pr_routes
from support.gitrepo import BareRepo, git
from support.kodiai_process import KodiaiProcess

pytestmark = pytest.mark.slow

PR_RE = re.compile(r"pull request #(\d+) in ")
INLINE = "mcp__github_inline_comment__create_inline_comment"
COMMENT = "mcp__github_comment__create_comment"


def finding_turns(path: str, line: int, title: str) -> list[Reply]:
    """The model's review: one inline finding, the summary, then a closing text."""
    return [
        ToolUse(INLINE, {"path": path, "line": line, "body": f"[MAJOR] {title}\n\nGuard the input."}),
        ToolUse(COMMENT, {"issueNumber": 0, "body": summary(path, line, title)}),  # ModelPlan sets the number
        Text("Review posted."),
    ]


@dataclass
class ModelPlan:
    """The fake model's behaviour per PR number (turn by turn); clean PRs get one closing text."""

    turns: dict[int, list[Reply | Callable[[MainRequest], Reply]]] = field(default_factory=dict)
    prompts: dict[int, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: MainRequest) -> Reply:
        match = PR_RE.search(request.user_text)
        number = int(match.group(1)) if match else -1
        with self.lock:
            self.prompts.setdefault(number, []).append(request.user_text)
            plan = self.turns.get(number, [Text("No issues found.")])
        step = plan[min(request.turn, len(plan) - 1)]
        reply = step(request) if callable(step) else step
        if isinstance(reply, ToolUse) and reply.name == COMMENT and number > 0:
            return ToolUse(COMMENT, {**reply.input, "issueNumber": number})
        return reply


@dataclass
class Stack:
    tmp: Path
    fake: FakeGitHub
    state: PrState
    git: GitRoutes
    model: FakeAnthropic
    plan: ModelPlan
    repo: BareRepo
    server: KodiaiProcess
    base_sha: str = ""

    def open_pr(self, number: int, files: dict[str, str], title: str, **kw: Any) -> dict[str, Any]:
        branch = f"pr-{number}"
        git("checkout", "-q", "main", cwd=self.repo.work)  # every PR branches from main
        head = self.repo.commit(files, f"change for {number}", branch=branch)
        self.state.add_pull(OWNER, REPO, number, head_sha=head)
        return pull_payload(
            self.repo, number, head_sha=head, base_sha=self.base_sha, branch=branch, title=title, **kw
        )

    def comments(self, number: int) -> list[dict[str, Any]]:
        return self.state.issue_comments(OWNER, REPO, number)

    def inline(self, number: int) -> list[dict[str, Any]]:
        return self.state.review_comments(OWNER, REPO, number)

    def approvals(self, number: int) -> list[dict[str, Any]]:
        return [r for r in self.state.reviews(OWNER, REPO, number) if r["state"] == "APPROVED"]

    def rows(self, db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.tmp / db)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def finished(self, number: int, timeout: float = 120.0) -> None:
        self.server.wait_for_log("Review job finished", prNumber=number, timeout=timeout)


@contextmanager
def make_stack(tmp: Path, **env: str) -> Iterator[Stack]:
    with FakeGitHub() as fake, FakeAnthropic() as model:
        state = install_pr_routes(fake)
        routes = install_git_routes(fake, tmp / "git")
        fake.add_installation(INSTALLATION, account=OWNER)
        fake.add_repo(OWNER, REPO, installation_id=INSTALLATION)
        # The PRs' author is on the team: its findings are learned at once (an outsider's wait for a writer).
        state.set_permission(OWNER, REPO, "alice", "write")
        repo = BareRepo(tmp / "git", OWNER, REPO)
        base = repo.commit(
            {"README.md": "# widgets\n", "src/app.py": "def add(a, b):\n    return a + b\n"}, "base"
        )
        plan = ModelPlan()
        model.script = plan
        server = KodiaiProcess(tmp, fake, model, **env).start()
        try:
            yield Stack(tmp, fake, state, routes, model, plan, repo, server, base)
        finally:
            server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with make_stack(tmp_path_factory.mktemp("e2e")) as built:
        yield built


#: The model-timeout case runs on a second installation's repository (see ``model_timeout_review``).
SLOW_OWNER, SLOW_REPO, SLOW_INSTALLATION, SLOW_PR = "globex", "gadgets", 43, 7


@pytest.fixture(scope="module", autouse=True)
def model_timeout_review(stack: Stack) -> int:
    """Deliver the model-timeout case before this module's other tests: its run must wait out the smallest
    timeout a configuration allows (30 s) and is on a lane of its own (another installation), so it waits
    while the other reviews run instead of after them. Returns its PR number;
    ``test_model_timeout_ends_in_a_timeout_comment`` checks the outcome."""
    stack.fake.add_installation(SLOW_INSTALLATION, account=SLOW_OWNER)
    stack.fake.add_repo(SLOW_OWNER, SLOW_REPO, installation_id=SLOW_INSTALLATION)
    stack.state.set_permission(SLOW_OWNER, SLOW_REPO, "alice", "write")
    repo = BareRepo(stack.tmp / "git", SLOW_OWNER, SLOW_REPO)
    config = "timeoutSeconds: 30\ntimeout:\n  dynamicScaling: false\n"
    base = repo.commit({".kodiai.yml": config, "src/app.py": "y = 1\n"}, "base")
    head = repo.commit({"src/app.py": "y = 2\n"}, "slow change", branch=f"pr-{SLOW_PR}")
    stack.state.add_pull(SLOW_OWNER, SLOW_REPO, SLOW_PR, head_sha=head)
    stack.plan.turns[SLOW_PR] = [Hang()]
    payload = pull_payload(
        repo, SLOW_PR, head_sha=head, base_sha=base, branch=f"pr-{SLOW_PR}", title="Slow model"
    )
    payload["installation"] = {"id": SLOW_INSTALLATION}
    payload["repository"]["id"] = 8
    assert stack.server.deliver(payload).status_code == 200
    return SLOW_PR


DIV = "def div(a, b):\n    return a / b\n"


def test_opened_pr_is_reviewed_published_recorded_and_learned(stack: Stack) -> None:
    title = "Division by zero when b is 0"
    stack.plan.turns[1] = finding_turns("src/app.py", 2, title)
    payload = stack.open_pr(
        1, {"src/app.py": "def add(a, b):\n    return a + b\n\n" + DIV}, "Add a div helper"
    )
    assert stack.server.deliver(payload).status_code == 200
    stack.finished(1)

    (inline,) = stack.inline(1)
    assert (inline["path"], inline["line"]) == ("src/app.py", 2)
    assert inline["body"].startswith(f"[MAJOR] {title}") and "kodiai:review-output-key:" in inline["body"]
    (summary_comment,) = [c for c in stack.comments(1) if "Kodiai Review Summary" in c["body"]]
    assert "<summary>Review Details</summary>" in summary_comment["body"]  # embedded into the summary
    assert "- Profile: strict (auto, lines changed: 10)" in summary_comment["body"]
    assert stack.approvals(1) == []

    clones = [r for r in stack.git.requests_for(OWNER, REPO) if r.installation_id == INSTALLATION]
    assert clones, "the workspace was cloned over smart HTTP with the installation token"
    assert stack.rows(
        "telemetry.db", "SELECT repo, pr_number, conclusion FROM executions WHERE pr_number = 1"
    ) == [("acme/widgets", 1, "success")]
    methods = stack.rows("telemetry.db", "SELECT threshold_method FROM retrieval_quality WHERE pr_number = 1")
    assert len(methods) == 1 and methods[0][0]
    assert stack.rows(
        "knowledge.db", "SELECT findings_total, findings_major FROM reviews WHERE pr_number = 1"
    ) == [(1, 1)]
    assert stack.rows("knowledge.db", "SELECT title, comment_id FROM findings") == [(title, inline["id"])]
    # git and Claude Code are spawned without forking the server (LanceDB warns of a deadlock risk on fork)
    assert "fork support is experimental" not in stack.server.log_text()
    memory = open_memory_store(str(stack.tmp / "memory.lance"), 384, table_name="learning_memories_d384")
    try:
        assert memory.count("acme/widgets") == 1
    finally:
        memory.close()


def test_the_next_pr_of_the_repo_retrieves_the_first_pr_finding(stack: Stack) -> None:
    payload = stack.open_pr(
        2,
        {"src/app.py": "def add(a, b):\n    return a + b\n\ndef ratio(a, b):\n    return a / b\n"},
        "Add a ratio helper that divides a by b",
    )
    assert stack.server.deliver(payload).status_code == 200
    stack.finished(2)
    (prompt, *_) = stack.plan.prompts[2]
    assert "## Similar Prior Findings (Learning Context)" in prompt
    assert "Division by zero when b is 0" in prompt
    rows = stack.rows("telemetry.db", "SELECT result_count FROM retrieval_quality WHERE pr_number = 2")
    assert rows and rows[0][0] >= 1


def test_clean_pr_is_approved_once_and_a_redelivery_publishes_nothing(stack: Stack) -> None:
    payload = stack.open_pr(3, {"docs/notes.md": "Notes.\n"}, "Add notes")
    first = stack.server.deliver(payload, delivery="clean-3")
    assert first.status_code == 200
    stack.finished(3)
    again = stack.server.deliver(payload, delivery="clean-3")
    assert again.status_code == 200
    (approval,) = stack.approvals(3)
    assert "<!-- kodiai:review-output-key:" in approval["body"]
    assert len([c for c in stack.comments(3) if "<summary>Review Details</summary>" in c["body"]]) == 1
    assert stack.rows("telemetry.db", "SELECT COUNT(*) FROM executions WHERE pr_number = 3") == [(1,)]
    assert len(stack.plan.prompts[3]) == 1  # one model turn, not re-run by the redelivery


def test_model_500_ends_in_an_api_error_comment_and_nothing_half_written(stack: Stack) -> None:
    stack.plan.turns[4] = [Fail(500, message="upstream exploded")]
    payload = stack.open_pr(4, {"src/app.py": "def add(a, b):\n    return a - b\n"}, "Change add")
    stack.server.deliver(payload)
    stack.finished(4)
    errors = [c["body"] for c in stack.comments(4) if "Kodiai encountered an API error" in c["body"]]
    assert len(errors) == 1 and "500" in errors[0]
    assert stack.rows("telemetry.db", "SELECT conclusion FROM executions WHERE pr_number = 4") == [("error",)]
    assert stack.rows(
        "knowledge.db",
        "SELECT COUNT(*) FROM findings f JOIN reviews r ON r.id = f.review_id WHERE r.pr_number = 4",
    ) == [(0,)]
    assert stack.approvals(4) == [] and stack.inline(4) == []


def test_clone_failure_ends_in_a_repository_error_comment(stack: Stack) -> None:
    payload = stack.open_pr(5, {"src/app.py": "def add(a, b):\n    return b + a\n"}, "Swap operands")
    stack.fake.fail(404, path=r"/acme/widgets\.git/info/refs", times=1)
    stack.server.deliver(payload)
    stack.finished(5)
    assert stack.fake.faults == []  # the clone met the fault (and nothing later will)
    errors = [c["body"] for c in stack.comments(5) if "Kodiai couldn't access the repository" in c["body"]]
    assert len(errors) == 1
    assert "ghs_" not in errors[0] and "x-access-token" not in errors[0]
    assert stack.rows("telemetry.db", "SELECT COUNT(*) FROM executions WHERE pr_number = 5") == [(0,)]
    assert 5 not in stack.plan.prompts


def test_broken_kodiai_yml_ends_in_a_configuration_error_comment(stack: Stack) -> None:
    payload = stack.open_pr(6, {".kodiai.yml": "review: [unclosed\n", "src/app.py": "x = 1\n"}, "Config")
    stack.server.deliver(payload)
    stack.finished(6)
    errors = [c["body"] for c in stack.comments(6) if "Kodiai found a configuration problem" in c["body"]]
    assert len(errors) == 1 and "Invalid .kodiai.yml: YAML parse error" in errors[0]
    assert 6 not in stack.plan.prompts


def test_kill_9_mid_review_then_replay_publishes_nothing_twice(tmp_path: Path) -> None:
    """The server dies after the model posted its inline comment; the restarted server replays the
    delivery from the job journal, recognises its own unfinished run, does not ask the model again and
    publishes nothing twice, and finishes the run from what was published: Review Details, the finding in
    the knowledge store and in learned memory."""
    with make_stack(tmp_path) as stack:
        posted = threading.Event()
        release = threading.Event()

        def second_turn(_request: MainRequest) -> Reply:
            posted.set()
            release.wait(60)
            return Text("Done.")

        stack.plan.turns[9] = [
            ToolUse(INLINE, {"path": "src/app.py", "line": 2, "body": "[MAJOR] Crash window\n\nExplain."}),
            second_turn,
        ]
        payload = stack.open_pr(9, {"src/app.py": "def add(a, b):\n    return a + b + 1\n"}, "Off by one")
        assert stack.server.deliver(payload, delivery="crash-9").status_code == 200
        assert posted.wait(120), stack.server.log_text()[-3000:]
        (inline,) = stack.inline(9)
        stack.server.stop(signal.SIGKILL)
        release.set()
        requests_before = len(stack.model.main_requests)

        stack.server.start()
        replayed = stack.server.wait_for_log("Replaying unfinished delivery from job journal")
        assert replayed[0]["deliveryId"] == "crash-9"
        stack.server.wait_for_log(
            "Finishing the interrupted run from the output it already published", prNumber=9
        )
        stack.finished(9)
        assert stack.inline(9) == [inline]
        assert stack.approvals(9) == []
        assert len(stack.model.main_requests) == requests_before  # the model was not asked again
        assert len([c for c in stack.comments(9) if "<summary>Review Details</summary>" in c["body"]]) == 1
        assert stack.rows("knowledge.db", "SELECT title, comment_id FROM findings") == [
            ("Crash window", inline["id"])
        ]
        assert stack.rows("knowledge.db", "SELECT status FROM run_state WHERE pr_number = 9") == [
            ("completed",)
        ]
        assert stack.rows("telemetry.db", "SELECT COUNT(*) FROM executions") == [
            (0,)
        ]  # nothing known to record


# The model-timeout case waits out its 30 s timer from the start of the module; it and the metrics that
# count its outcome come last, so the timer runs while the tests above do, the kill -9 test's own stack too.
def test_model_timeout_ends_in_a_timeout_comment(stack: Stack, model_timeout_review: int) -> None:
    number = model_timeout_review  # the model hangs (Hang), timeoutSeconds: 30, no dynamic scaling
    stack.finished(number, timeout=180)
    comments = stack.state.issue_comments(SLOW_OWNER, SLOW_REPO, number)
    errors = [c["body"] for c in comments if "Kodiai timed out" in c["body"]]
    assert len(errors) == 1
    assert stack.rows(
        "telemetry.db", "SELECT repo, conclusion FROM executions WHERE pr_number = ?", (number,)
    ) == [(f"{SLOW_OWNER}/{SLOW_REPO}", "timeout")]


def test_metrics_show_the_review_cap_and_outcomes(stack: Stack) -> None:
    text = stack.server.metrics()
    assert "kodiai_reviews_running 0.0" in text and "kodiai_reviews_waiting 0.0" in text
    assert 'kodiai_reviews_total{outcome="published"}' in text
    assert 'kodiai_reviews_total{outcome="approved"}' in text
    assert 'kodiai_reviews_total{outcome="error"}' in text
    started = stack.server.wait_for_log("Event handlers registered")
    assert "pull_request.opened" in started[0]["handledEvents"]
