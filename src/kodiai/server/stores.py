"""Start-up steps 6–11 (behaviour P1.2): the stores and providers handlers are given.

Built once by the composition root (``kodiai serve``) and attached to the runtime as ``runtime.stores``:
telemetry and knowledge stores (fail-fast, as the original), learned memory (fail-open: a failure logs
"Learning memory store failed to initialize (fail-open, learning disabled)" and leaves it ``None``),
the embedding provider, the isolation layer when a memory store exists, and the run-state purge.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kodiai.learning.embeddings import EmbeddingProvider, build_embedding_provider
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import LanceMemoryStore
from kodiai.learning.object_store import MemoryStoreRefused
from kodiai.learning.setup import open_store_for_provider, warm_in_background
from kodiai.log import get_logger, redact
from kodiai.settings import Settings
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.startup import (
    open_knowledge_store,
    open_knowledge_store_in,
    open_telemetry_store,
    purge_run_state,
)
from kodiai.storage.telemetry import TelemetryStore
from kodiai.storage.write_health import WriteHealth


@dataclass
class Stores:
    """What handlers get from the composition root (never module-level singletons)."""

    telemetry: TelemetryStore
    knowledge: KnowledgeStore
    embeddings: EmbeddingProvider
    memory: LanceMemoryStore | None = None
    isolation: IsolationLayer | None = None

    def write_healths(self) -> list[WriteHealth]:
        """The write state of each store that has one (``/readiness`` and the write-failure metric)."""
        healths = [self.knowledge.write_health, self.telemetry.write_health]
        if self.memory is not None:
            healths.append(self.memory.write_health)
        return healths

    def close(self) -> None:
        for store in (self.memory, self.knowledge, self.telemetry):
            if store is not None:
                try:
                    store.close()
                except Exception as exc:  # closing must never mask the shutdown
                    get_logger("kodiai.server").warning("Store close failed", err=redact(str(exc)))


def open_stores(settings: Settings, *, learned_memory: bool = True) -> Stores:
    """Open everything in the original's order; telemetry/knowledge errors propagate (fail-fast).

    ``learned_memory=False`` (a ``--role web`` replica: it runs no job) opens neither the embedder nor the
    memory store: seconds of start-up CPU (LanceDB, the model, the object store's probe) it never uses."""
    log = get_logger("kodiai.server")
    database_url = settings.database()
    telemetry = open_telemetry_store(database_url or settings.telemetry_db_path, log)
    try:
        if database_url:  # DATABASE_URL: telemetry and knowledge in PostgreSQL (the jobs journal: next)
            knowledge = open_knowledge_store_in(database_url, log)
        else:
            env = dict(os.environ)
            if settings.knowledge_db_path:
                env["KNOWLEDGE_DB_PATH"] = settings.knowledge_db_path
            knowledge = open_knowledge_store(None, env, log)
    except BaseException:
        telemetry.close()
        raise

    voyage = settings.voyage_api_key.get_secret_value() if settings.voyage_api_key else None
    provider = settings.embedding_provider if learned_memory else "none"
    embeddings = build_embedding_provider(provider, voyage_api_key=voyage)
    memory: LanceMemoryStore | None = None
    try:
        memory = open_store_for_provider(settings.learning_memory_uri, embeddings) if learned_memory else None
    except MemoryStoreRefused:  # an unsafe or misconfigured object store stops the start (not fail-open)
        knowledge.close()
        telemetry.close()
        raise
    except Exception as exc:
        log.warning(
            "Learning memory store failed to initialize (fail-open, learning disabled)",
            err=redact(f"{type(exc).__name__}: {exc}"),
        )
    if embeddings.dimensions > 0:
        log.info("Embedding provider initialized", model=embeddings.model, dimensions=embeddings.dimensions)
    if memory is not None:
        warm_in_background(memory)
    isolation = IsolationLayer(memory) if memory is not None else None
    purge_run_state(knowledge, log)
    return Stores(
        telemetry=telemetry, knowledge=knowledge, embeddings=embeddings, memory=memory, isolation=isolation
    )
