"""A review handler wired to real components for the checklist tests.

Real: the router and job lanes, the handler and its stages, git clones (``file://`` bare repos), the fake
GitHub REST server through PyGithub, SQLite knowledge and telemetry stores, a LanceDB memory store, and
the Claude Agent SDK client with our in-process MCP tools. Faked: the model, as a scripted CLI stream
(:class:`support.scripted_transport.ScriptedTransport`), and the embedder, a deterministic test double.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from claude_agent_sdk import ClaudeAgentOptions

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.github.app_auth import GitHubApp
from kodiai.github.retry import GitHubRetry
from kodiai.github.workspace import WorkspaceManager
from kodiai.handler_kit.deps import HandlerDeps, LearnedMemory
from kodiai.jobs.lanes import JobQueue
from kodiai.jobs.limit import ConcurrencyLimit
from kodiai.learning.embeddings import normalise
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.setup import open_store_for_provider
from kodiai.metrics import Metrics
from kodiai.review import entry as review
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent, build_event
from kodiai.webhook.router import DispatchOutcome, EventRouter
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.gitrepo import BareRepo
from support.scripted_transport import Result, ScriptedTransport, Step, ToolCall

OWNER, REPO, INSTALLATION = "acme", "repo", 42
SLUG = "kodiai"
#: A `.kodiai.yml` with the retrieval cut alone: abstention and the second stage (on by default) off.
FIRST_STAGE = "knowledge:\n  retrieval:\n    abstain: false\n    secondStage: false\n"


class BagOfWordsEmbedder:
    """Deterministic embeddings without a model: texts sharing words land close together."""

    model = "test-bow"
    dimensions = 64

    def generate(self, text: str, input_type: str) -> np.ndarray | None:
        vec = np.zeros(self.dimensions)
        for word in text.lower().split():
            vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimensions] += 1
        return normalise(vec)[0]

    def generate_many(self, texts: Sequence[str], input_type: str) -> list[np.ndarray | None]:
        return [self.generate(t, input_type) for t in texts]


def inline(path: str, line: int, body: str) -> ToolCall:
    return ToolCall(
        "github_inline_comment", "create_inline_comment", {"path": path, "line": line, "body": body}
    )


def yaml_finding(severity: str, category: str, title: str) -> str:
    """An enhanced-mode inline body (fenced yaml metadata, then the title)."""
    return f"```yaml\nseverity: {severity}\ncategory: {category}\nsuggested_action: fix\n```\n\n**{title}**\n\nWhy."


@dataclass
class RecordingExecutor:
    """The real executor; remembers each context and result and runs an optional probe on the workspace
    while it still exists (e.g. which branch the clone has checked out)."""

    inner: ClaudeAgentExecutor
    contexts: list[ExecutionContext] = field(default_factory=list)
    results: list[ExecutionResult] = field(default_factory=list)
    probe: Any = None
    probes: list[Any] = field(default_factory=list)

    async def execute(self, context: ExecutionContext) -> ExecutionResult:
        self.contexts.append(context)
        if self.probe is not None:
            self.probes.append(self.probe(context.workspace_dir))
        result = await self.inner.execute(context)
        self.results.append(result)
        return result


class ReviewHarness:
    """One repository ``acme/repo`` on a fake GitHub, and a handler stack around it."""

    def __init__(
        self,
        tmp_path: Path,
        fake: FakeGitHub,
        state: PrState,
        *,
        knowledge: bool | KnowledgeStore = True,
        telemetry: bool = True,
        memory: bool = True,
        embedder: Any = None,
        bot_allow_list: Sequence[str] = (),
        handlers: Sequence[Callable[[EventRouter, HandlerDeps], None]] = (review.register,),
        **deps: Any,
    ) -> None:
        """``deps`` overrides optional :class:`HandlerDeps` fields (``registry``, ``usage_analyzer``).

        ``knowledge`` may be a store the test built (e.g. a subclass that fails on purpose). ``handlers``
        are the registrars put on the router: the review handler alone unless a test asks for more
        (``kodiai.server.handlers.BUILTIN`` is what ``kodiai serve`` registers).
        """
        self.tmp = tmp_path
        self.fake = fake
        self.state = state
        self.repo = BareRepo(tmp_path / "git", OWNER, REPO)
        self.github = GitHubApp(
            fake.app_id,
            fake.private_key_pem,
            base_url=fake.url,
            retry=GitHubRetry(total=2, backoff_factor=0.01),
        )
        self.github.initialize()

        async def token(installation_id: int) -> str:
            return self.github.installation_token(installation_id)

        self.workspaces = WorkspaceManager(
            token, root=tmp_path / "ws", git_base_url=f"file://{tmp_path / 'git'}"
        )
        if isinstance(knowledge, KnowledgeStore):
            self.knowledge: KnowledgeStore | None = knowledge
        else:
            self.knowledge = KnowledgeStore(tmp_path / "knowledge.db") if knowledge else None
        self.telemetry = TelemetryStore(tmp_path / "telemetry.db") if telemetry else None
        self.embedder = embedder or BagOfWordsEmbedder()
        self.memory_store = (
            open_store_for_provider(str(tmp_path / "memory.lance"), self.embedder) if memory else None
        )
        self.scripts: list[list[Step]] = []
        self.transports: list[ScriptedTransport] = []
        self.options: list[ClaudeAgentOptions] = []
        """The CLI options of each run (model, turns, system prompt): what the model is really given."""
        self.executor = RecordingExecutor(
            ClaudeAgentExecutor(
                installation_client=self.github.installation_client,
                credentials=ModelCredentials(),
                transport_factory=self._transport,
                pacing=PacingPolicy(min_write_interval=0.0),
            )
        )
        self.metrics = Metrics()
        self.deps = HandlerDeps(
            app_slug=SLUG,
            installation_client=self.github.installation_client,
            workspaces=self.workspaces,
            executor=self.executor,
            queue=JobQueue(metrics=self.metrics),
            metrics=self.metrics,
            review_limit=ConcurrencyLimit(
                4, waiting=self.metrics.reviews_waiting, running=self.metrics.reviews_running
            ),
            knowledge=self.knowledge,
            telemetry=self.telemetry,
            memory=LearnedMemory(self.memory_store, IsolationLayer(self.memory_store), self.embedder)
            if self.memory_store is not None
            else None,
            **deps,
        )
        self.router = EventRouter(BotFilter(SLUG, list(bot_allow_list)))
        for register in handlers:
            register(self.router, self.deps)
        self._deliveries = itertools.count(1)
        self.logs: list[dict[str, Any]] = []

    def close(self) -> None:
        for store in (self.knowledge, self.telemetry, self.memory_store):
            if store is not None:
                store.close()

    # ------------------------------------------------------------------ model
    def _transport(self, options: ClaudeAgentOptions) -> ScriptedTransport:
        self.options.append(options)
        steps = self.scripts.pop(0) if self.scripts else [Result()]
        transport = ScriptedTransport(steps)
        self.transports.append(transport)
        return transport

    def script(self, *steps: Step) -> None:
        """Queue the model's behaviour for the next run (a final ``Result()`` is added when missing)."""
        items = list(steps)
        if not items or not isinstance(items[-1], Result):
            items.append(Result())
        self.scripts.append(items)

    @property
    def prompts(self) -> list[str]:
        return [t.prompt or "" for t in self.transports]

    # ------------------------------------------------------------------ repository and PR
    def open_pr(
        self,
        number: int = 101,
        *,
        base_files: dict[str, str] | None = None,
        head_files: dict[str, str] | None = None,
        config: str | None = None,
        branch: str = "feature",
        title: str = "Improve things",
        body: str | None = "Body text",
        author: str = "alice",
        additions: int | None = None,
        deletions: int | None = None,
        labels: Sequence[str] = (),
        fork: bool = False,
        draft: bool = False,
        commits: int | None = 1,
        association: str = "MEMBER",
    ) -> dict[str, Any]:
        """Commit the base and head trees, register the PR on the fake GitHub, return its payload part."""
        base = dict(base_files or {"README.md": "# repo\n", "src/index.ts": "export const a = 1;\n"})
        if config is not None:
            base[".kodiai.yml"] = config
        if not self.repo._has_commits():
            base_sha = self.repo.commit(base, "base")
        else:
            base_sha = self.repo.commit(base, "base update")
        head = head_files or {"src/index.ts": "export const a = 2;\n"}
        if fork:
            head_sha = self.repo.add_pull_head(number, head)
        else:
            head_sha = self.repo.commit(head, "feature", branch=branch)
        lines = sum(text.count("\n") for text in head.values())
        pull = {
            "number": number,
            "title": title,
            "body": body,
            "draft": draft,
            "state": "open",
            "user": {"login": author, "type": "User"},
            "author_association": association,
            "head": {
                "ref": branch,
                "sha": head_sha,
                "repo": {
                    "name": REPO,
                    "full_name": f"forker/{REPO}" if fork else f"{OWNER}/{REPO}",
                    "owner": {"login": "forker" if fork else OWNER},
                },
            },
            "base": {
                "ref": "main",
                "sha": base_sha,
                "repo": {"name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER}},
            },
            "labels": [{"name": name} for name in labels],
            "additions": lines if additions is None else additions,
            "deletions": 0 if deletions is None else deletions,
            "commits": commits,
        }
        if commits is None:
            del pull["commits"]
        self.state.add_pull(OWNER, REPO, number, head_sha=head_sha, files=None)
        return pull

    def payload(self, pull: dict[str, Any], action: str = "opened", **extra: Any) -> dict[str, Any]:
        return {
            "action": action,
            "number": pull["number"],
            "pull_request": pull,
            "repository": {
                "id": 1,
                "name": REPO,
                "full_name": f"{OWNER}/{REPO}",
                "owner": {"login": OWNER, "type": "Organization"},
                "private": False,
                "default_branch": "main",
            },
            "installation": {"id": INSTALLATION},
            "sender": {
                "login": pull["user"]["login"],
                "type": "Bot" if pull["user"]["login"].endswith("[bot]") else "User",
            },
            **extra,
        }

    async def deliver(
        self, pull: dict[str, Any], action: str = "opened", *, delivery: str | None = None, **extra: Any
    ) -> DispatchOutcome:
        """Dispatch a ``pull_request.<action>`` delivery and wait for its review job; logs are captured."""
        event = build_event(
            delivery or f"delivery-{next(self._deliveries)}",
            "pull_request",
            self.payload(pull, action, **extra),
        )
        return await self._dispatch(event)

    async def deliver_event(
        self, event_name: str, payload: dict[str, Any], *, delivery: str | None = None
    ) -> DispatchOutcome:
        """Dispatch any event with a ready-made payload and wait for its jobs; logs are captured."""
        return await self._dispatch(
            build_event(delivery or f"delivery-{next(self._deliveries)}", event_name, payload)
        )

    async def _dispatch(self, event: WebhookEvent) -> DispatchOutcome:
        with structlog.testing.capture_logs() as captured:
            outcome = await self.router.dispatch(event)
        self.logs.extend(captured)
        return outcome

    # ------------------------------------------------------------------ what happened
    def issue_comments(self, number: int = 101) -> list[dict[str, Any]]:
        return self.state.issue_comments(OWNER, REPO, number)

    def review_comments(self, number: int = 101) -> list[dict[str, Any]]:
        return self.state.review_comments(OWNER, REPO, number)

    def reviews(self, number: int = 101) -> list[dict[str, Any]]:
        return self.state.reviews(OWNER, REPO, number)

    def logged(self, message: str) -> list[dict[str, Any]]:
        return [entry for entry in self.logs if message in str(entry.get("event", ""))]

    def calls(self, method: str, path_regex: str) -> list[Any]:
        return self.fake.calls_to(method, path_regex)

    def rows(self, db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import sqlite3

        conn = sqlite3.connect(self.tmp / db)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()
