"""The attacker's kit for the adversarial end-to-end suite (issue 23).

The stack is the ordinary one (:func:`test_review_e2e.make_stack`: ``kodiai serve`` between the fake
GitHub and the fake Messages API, the real Claude Code CLI in between); what changes is the model. The
:class:`Attacker` plays a model that has been prompt-injected: per PR or issue number it follows a list of
steps, and a step may be a function of the request, so it can aim at the session's real working directory
(:func:`workdir`) or post back whatever its earlier tool calls returned (:func:`leak_everything`) — the
exfiltration an injected model would attempt. A test then proves two things: the attempt was made (the
next request to the model carries the tool result, see :meth:`Attacker.results`) and its effect did not
happen (no marker file, nothing on GitHub, no commit).

A :class:`Sentinel` is planted in the server's environment and data directory; :func:`sentinel_leaks`
lists every place it (or another server secret) reached: GitHub request bodies, the bare repositories'
objects, the server log, the model's requests.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from stack import INSTALLATION, OWNER, REPO, SECRET
from test_review_e2e import COMMENT, INLINE, Stack, make_stack

from support.fake_anthropic import MainRequest, Reply, Text, ToolResult, ToolUse
from support.gitrepo import commit_files, git
from support.pr_payloads import pull_request_payload

SENTINEL_ENV = "KODIAI_E2E_SENTINEL"
OUTSIDER = "mallory"  # a fork author / commenter with read permission only (the fake's default)
WRITER = "maya"  # a maintainer

_NUMBER_RES = (
    re.compile(r"You are reviewing pull request #(\d+) in "),
    re.compile(r"This is about Pull Request #(\d+)\."),
    re.compile(r"This is about Issue #(\d+)\."),
)
_WORKDIR_RE = re.compile(r"Primary working directory: (/[^\s\"\\]+)")

Step: TypeAlias = Reply | Callable[[MainRequest], Reply]


def number_of(request: MainRequest) -> int:
    """The PR or issue the run is about, as the server's prompt states it (-1 when none is named)."""
    text = request.user_text
    for pattern in _NUMBER_RES:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return -1


def workdir(request: MainRequest) -> str:
    """The session's cwd as the CLI tells the model (inside the sandbox, the path the model sees)."""
    match = _WORKDIR_RE.search(json.dumps(request.body))
    assert match, "the CLI names its working directory"
    return match.group(1)


@dataclass
class Attacker:
    """The injected model: ``plan(n, *steps)``; step ``k`` answers the request of agent turn ``k`` (the last
    step repeats). Runs without a plan answer one closing text."""

    plans: dict[int, list[Step]] = field(default_factory=dict)
    seen: dict[int, list[MainRequest]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def plan(self, number: int, *steps: Step) -> None:
        with self.lock:
            self.plans[number] = list(steps)

    def __call__(self, request: MainRequest) -> Reply:
        number = number_of(request)
        with self.lock:
            self.seen.setdefault(number, []).append(request)
            steps = self.plans.get(number, [Text("No issues found.")])
        step = steps[min(request.turn, len(steps) - 1)]
        return step(request) if callable(step) else step

    def requests(self, number: int) -> list[MainRequest]:
        with self.lock:
            return list(self.seen.get(number, []))

    def results(self, number: int, turn: int) -> list[ToolResult]:
        """What the tool calls of agent turn ``turn`` returned: the tool results the CLI sent back in the
        request of turn ``turn + 1`` (the proof the attempt was made and how it ended)."""
        for request in self.requests(number):
            if request.turn == turn + 1:
                calls = [m for m in request.messages if m.get("role") == "assistant"][turn]
                order = [b.get("id") for b in calls.get("content", []) if b.get("type") == "tool_use"]
                found = {r.tool_use_id: r for r in request.all_tool_results}
                results = [found[i] for i in order if i in found]
                if os.environ.get("H7_DEBUG"):
                    print(f"#{number} turn {turn}:", [(r.is_error, r.text[:300]) for r in results])
                return results
        raise AssertionError(f"no request after turn {turn} of #{number}: the CLI never answered the call")


def leak_everything(number: int, prefix: str = "Findings:") -> Callable[[MainRequest], Reply]:
    """The follow-through of an injection: post every tool result seen so far (and the prompt the model
    received) as a comment on ``number`` — whatever the agent could read would reach GitHub this way."""

    def step(request: MainRequest) -> Reply:
        seen = "\n---\n".join(r.text for r in request.all_tool_results)
        return ToolUse(
            COMMENT, {"issueNumber": number, "body": f"{prefix}\n{seen}\n---\n{request.user_text}"}
        )

    return step


def read(path: str | Callable[[MainRequest], str]) -> Callable[[MainRequest], ToolUse]:
    """A ``Read`` of ``path`` (a function of the request to aim inside the session's workdir)."""
    return lambda request: ToolUse("Read", {"file_path": path(request) if callable(path) else path})


# ----------------------------------------------------------------------------- the planted secret


@dataclass(frozen=True)
class Sentinel:
    """A random secret the server holds and nobody else may ever see."""

    value: str

    @classmethod
    def new(cls) -> Sentinel:
        return cls("SENTINEL-" + secrets.token_hex(16))

    def plant(self, data_dir: Path) -> None:
        """``<data dir>/sentinel.txt`` and a ``.env`` next to the databases, as an operator keeps one."""
        (data_dir / "sentinel.txt").write_text(self.value + "\n")
        (data_dir / ".env").write_text(
            f"GITHUB_WEBHOOK_SECRET={SECRET}\n{SENTINEL_ENV}={self.value}\n", encoding="utf-8"
        )


def no_breaches(breaches: list[str]) -> None:
    """Fail listing every breach at once (one attack often gets through in several ways)."""
    if breaches:
        pytest.fail("breaches:\n- " + "\n- ".join(breaches), pytrace=False)


def bare_repo_dump(git_root: Path) -> str:
    """Every object (commits, trees, blobs) and ref name of every bare repository under ``git_root``."""
    out: list[str] = []
    for repo in sorted(git_root.glob("*/*.git")):
        out.append(git("for-each-ref", "--format=%(refname)", cwd=repo))
        done = subprocess.run(
            ["git", "cat-file", "--batch-all-objects", "--batch"],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        out.append(done.stdout.decode("utf-8", "replace"))
    return "\n".join(out)


def server_secrets(stack: Stack, sentinel: Sentinel) -> dict[str, str]:
    """The values no output may carry: the sentinel, the webhook secret, the App key's body, and every
    installation token the fake GitHub minted."""
    key_body = "".join(stack.fake.private_key_pem.strip().splitlines()[1:-1])[:64]
    found = {"sentinel": sentinel.value, "webhook secret": SECRET, "private key": key_body}
    with stack.fake.lock:
        tokens = list(stack.fake.tokens)
    found.update({f"installation token {i}": t for i, t in enumerate(tokens)})
    return found


def sentinel_leaks(stack: Stack, sentinel: Sentinel) -> list[str]:
    """Where a server secret surfaced: ``["<secret> in <place>", ...]`` (empty when nowhere).

    Places: the JSON bodies GitHub received (comments, reviews, replies, PRs), the bare repositories'
    objects and refs, the server log, and every request the fake model received. The model's own requests
    are checked for the sentinel and the tokens only: an attacker's comment may carry a secret it already
    knows (the webhook secret) on purpose, to test redaction.
    """
    with stack.fake.lock:
        github = json.dumps([[r.method, r.path, r.query, r.json] for r in stack.fake.records])
    with stack.model.lock:
        model = json.dumps([r.body for r in stack.model.requests])
    places = {
        "GitHub request bodies": github,
        "bare repositories": bare_repo_dump(stack.tmp / "git"),
        "server log": stack.server.log_text(),
        "model requests": model,
    }
    found = []
    for name, value in server_secrets(stack, sentinel).items():
        for place, text in places.items():
            if place == "model requests" and name in ("webhook secret", "private key"):
                continue
            if value and value in text:
                found.append(f"{name} in {place}")
    return found


# ----------------------------------------------------------------------------- the stack


@dataclass
class Kit:
    """One ``kodiai serve`` stack driven by the :class:`Attacker`, with the planted :class:`Sentinel` and a
    host directory for markers (a file there means an attacker's command ran on the server)."""

    stack: Stack
    attacker: Attacker
    sentinel: Sentinel
    markers: Path

    @property
    def server_pid(self) -> int:
        assert self.stack.server.proc is not None
        return self.stack.server.proc.pid

    def review(self, payload: dict[str, Any]) -> None:
        """Deliver a ``pull_request`` event and wait for its review job to end."""
        assert self.stack.server.deliver(payload).status_code == 200
        self.stack.finished(int(payload["number"]), timeout=240)

    def bodies(self, number: int) -> list[str]:
        """Every request body the model received during runs on ``number``, as JSON text."""
        return [json.dumps(r.body) for r in self.attacker.requests(number)]


@contextmanager
def attack_stack(tmp: Path) -> Iterator[Kit]:
    """The stack with the sentinel planted (``KODIAI_E2E_SENTINEL`` in the server's environment,
    ``sentinel.txt`` and ``.env`` in its data directory) and the :class:`Attacker` as the model; the
    maintainer :data:`WRITER` has the ``maintain`` role, everyone else reads."""
    sentinel = Sentinel.new()
    sentinel.plant(tmp)
    markers = tmp / "markers"
    markers.mkdir()
    with make_stack(tmp, **{SENTINEL_ENV: sentinel.value}) as stack:
        attacker = Attacker()
        stack.model.script = attacker
        stack.state.set_permission(OWNER, REPO, WRITER, "maintain")
        yield Kit(stack, attacker, sentinel, markers)


# ----------------------------------------------------------------------------- pull requests


def base_branch(stack: Stack, name: str, files: dict[str, str]) -> str:
    """A base branch ``name`` (from main) carrying ``files`` — e.g. its own trusted ``.kodiai.yml``."""
    git("checkout", "-q", "main", cwd=stack.repo.work)
    return stack.repo.commit(files, f"base {name}", branch=name)


def fork_pr(
    stack: Stack,
    number: int,
    files: dict[str, str],
    *,
    title: str = "Improve things",
    body: str = "Please review.",
    author: str = OUTSIDER,
    base: str = "main",
    symlinks: dict[str, str] | None = None,
    executables: Iterable[str] = (),
) -> dict[str, Any]:
    """A PR from ``<author>/widgets`` (a fork): GitHub exposes its head as ``refs/pull/<n>/head`` of the
    base repository, which is all the server can fetch; the payload's ``head.repo`` names the fork."""
    head = _pull_head(stack, number, files, base=base, symlinks=symlinks, executables=executables)
    base_sha = git("rev-parse", base, cwd=stack.repo.work)
    pull = stack.state.add_pull(
        OWNER,
        REPO,
        number,
        head_sha=head,
        head_ref="patch-1",
        head_owner=author,
        base_ref=base,
        base_sha=base_sha,
        title=title,
        body=body,
        author=author,
        author_association="NONE",
        files=list(files),
    )
    return pull_request_payload("opened", pull, installation_id=INSTALLATION)


def same_repo_pr(
    stack: Stack,
    number: int,
    files: dict[str, str],
    *,
    title: str = "Improve things",
    author: str = WRITER,
    base: str = "main",
    branch: str | None = None,
    executables: Iterable[str] = (),
    symlinks: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A PR from a branch of the base repository (its author can push there), plus GitHub's PR ref."""
    branch = branch or f"feature-{number}"
    work = stack.repo.work
    git("checkout", "-q", base, cwd=work)
    git("checkout", "-q", "-b", branch, cwd=work)
    head = _commit(work, files, f"change for {number}", symlinks=symlinks, executables=executables)
    git("push", "-q", "origin", f"{branch}:{branch}", f"{branch}:refs/pull/{number}/head", cwd=work)
    git("checkout", "-q", base, cwd=work)
    base_sha = git("rev-parse", base, cwd=stack.repo.work)
    pull = stack.state.add_pull(
        OWNER,
        REPO,
        number,
        head_sha=head,
        head_ref=branch,
        base_ref=base,
        base_sha=base_sha,
        title=title,
        author=author,
        author_association="MEMBER",
        files=list(files),
    )
    return pull_request_payload("opened", pull, installation_id=INSTALLATION)


def _pull_head(
    stack: Stack,
    number: int,
    files: dict[str, str],
    *,
    base: str,
    symlinks: dict[str, str] | None,
    executables: Iterable[str],
) -> str:
    work = stack.repo.work
    git("checkout", "-q", base, cwd=work)
    git("checkout", "-q", "-B", f"_pr{number}", cwd=work)
    sha = _commit(work, files, f"pr {number}", symlinks=symlinks, executables=executables)
    git("push", "-q", "origin", f"_pr{number}:refs/pull/{number}/head", cwd=work)
    git("checkout", "-q", base, cwd=work)
    return sha


def _commit(
    work: Path,
    files: dict[str, str],
    message: str,
    *,
    symlinks: dict[str, str] | None,
    executables: Iterable[str],
) -> str:
    """Commit ``files`` (``executables`` with mode 755) and ``symlinks`` (name → target) as git stores
    them; returns the commit."""
    for name, target in (symlinks or {}).items():
        link = work / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    for name in executables:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(files[name])
        (work / name).chmod(0o755)
    return commit_files(work, files, message)


def comment_payload(
    stack: Stack, number: int, body: str, *, author: str, comment_id: int | None = None
) -> dict[str, Any]:
    """An ``issue_comment.created`` by ``author`` on PR ``number`` (known to the fake GitHub)."""
    pull = stack.state.pull(OWNER, REPO, number)
    assert pull is not None, f"PR {number} is not known to the fake GitHub"
    base_repo = {"name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER}}
    return {
        "action": "created",
        "issue": {
            "number": number,
            "title": pull["title"],
            "user": {"login": pull["user"]["login"], "type": "User"},
            "pull_request": {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{number}"},
        },
        "comment": {
            "id": comment_id or 70000 + number,
            "body": body,
            "user": {"login": author, "type": "User"},
            "created_at": "2026-11-23T12:00:00Z",
        },
        "repository": {**base_repo, "id": 7, "private": False, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": "User"},
    }


def deliver_mention(stack: Stack, payload: dict[str, Any], *, event: str = "issue_comment") -> None:
    """Deliver a mention and wait until its job ended (answered, refused or skipped)."""
    number = int(payload.get("issue", payload.get("pull_request", {})).get("number"))
    done = [
        line
        for line in stack.server.log_lines()
        if line.get("msg") == "Job execution completed"
        and line.get("jobType") == "mention"
        and line.get("prNumber") == number
    ]
    assert stack.server.deliver(payload, event=event).status_code == 200
    stack.server.wait_for_log(
        "Job execution completed", jobType="mention", prNumber=number, count=len(done) + 1, timeout=240
    )


def heads(stack: Stack) -> dict[str, str]:
    """``refs/heads/*`` of the base repository → sha (what was pushed where)."""
    out = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", cwd=stack.repo.path)
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def tree_paths(stack: Stack, ref: str) -> list[str]:
    out = git("ls-tree", "-r", "--name-only", ref, cwd=stack.repo.path)
    return out.splitlines()


def all_text(stack: Stack, number: int) -> str:
    """Everything the app posted on PR/issue ``number``: comments, inline comments, review bodies."""
    parts = [c["body"] or "" for c in stack.comments(number) + stack.inline(number)]
    parts += [r.get("body") or "" for r in stack.state.reviews(OWNER, REPO, number)]
    return "\n".join(parts)


__all__ = ["COMMENT", "INLINE", "Text", "ToolUse"]
