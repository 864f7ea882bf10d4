"""What handlers are given: one typed object built once by the composition root (``kodiai serve``).

Handlers never see the whole runtime. Optional parts are ``None`` when the deployment lacks them (no
learned memory when LanceDB failed to open, no embedder when ``EMBEDDING_PROVIDER=none``); each stage
that uses one checks for it, as the original checks for its injected stores.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from github import Github
from kodiai.execution.executor import Executor
from kodiai.github.workspace import WorkspaceManager
from kodiai.handler_kit.usage_scan import UsageAnalysisResult, analyze_package_usage
from kodiai.jobs.lanes import JobQueue
from kodiai.jobs.limit import ConcurrencyLimit
from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.lexical import LexicalChannel
from kodiai.learning.memory_store import LanceMemoryStore
from kodiai.learning.pipeline import LexicalSearcher
from kodiai.metrics import Metrics
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore

#: Installation id → an authenticated PyGithub client acting as that installation.
InstallationClients = Callable[[int], Github]
#: ``(workspace_dir, package, breaking_change_snippets, ecosystem, time_budget_ms)`` → usage evidence.
UsageAnalyzer = Callable[[str, str, Sequence[str], str | None, float], Awaitable[UsageAnalysisResult]]


def utcnow() -> datetime:
    return datetime.now(UTC)


def registry_client() -> httpx.Client:
    """A client for the package registries (npm, PyPI, RubyGems) the dependency enrichment reads."""
    return httpx.Client(follow_redirects=True)


@dataclass(frozen=True)
class OperatorCaps:
    """The operator's daily spend caps in USD: ``default_usd`` for every installation, ``overrides`` by id.

    ``0`` means no cap, so an override of ``0`` exempts one installation from the default.
    """

    default_usd: float = 0.0
    overrides: Mapping[int, float] = field(default_factory=dict)

    def for_installation(self, installation_id: int) -> float | None:
        """The installation's cap, or ``None`` when it has none."""
        cap = self.overrides.get(installation_id, self.default_usd)
        return cap if cap > 0 else None


@dataclass(frozen=True)
class LearnedMemory:
    """The learned-memory store, the isolation layer over it, the embedder its table was opened for, and
    the lexical channel (BM25) over the same table.

    ``lexical`` is one object per store, not per request: it remembers that the full-text indexes exist,
    so only the first retrieval checks for (and builds) them. Left unset, it is built over ``store``;
    whether a retrieval uses it is the cut's choice (``uses_lexical``, i.e. ``headLexicalWeight`` > 0).
    """

    store: LanceMemoryStore
    isolation: IsolationLayer
    embeddings: EmbeddingProvider
    lexical: LexicalSearcher | None = None

    def __post_init__(self) -> None:
        if self.lexical is None:
            object.__setattr__(self, "lexical", LexicalChannel(self.store))


@dataclass(frozen=True)
class HandlerDeps:
    app_slug: str
    installation_client: InstallationClients
    workspaces: WorkspaceManager
    executor: Executor
    queue: JobQueue
    metrics: Metrics
    review_limit: ConcurrencyLimit
    knowledge: KnowledgeStore | None = None
    telemetry: TelemetryStore | None = None
    memory: LearnedMemory | None = None
    clock: Callable[[], datetime] = utcnow
    registry: Callable[[], httpx.Client] = registry_client
    usage_analyzer: UsageAnalyzer = analyze_package_usage
    """Dependency-bump usage scan (``git grep`` in the workspace), as the original let it be injected."""
    spend_caps: OperatorCaps = field(default_factory=OperatorCaps)
    """The operator's daily spend caps (``SPEND_CAP_USD_PER_DAY``…); none by default."""

    @property
    def bot_handles(self) -> list[str]:
        """Handles the outgoing-mention sanitiser neutralises (behaviour R0.3)."""
        return [self.app_slug, "claude"]
