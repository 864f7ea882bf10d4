"""Start-up glue: the memory table for an embedder, stale-marking on model change, memory texts.

One LanceDB URI can hold one table per vector size: ``learning_memories`` for 1024-dim vectors (the
original's size, voyage-code-3) and ``learning_memories_d<N>`` otherwise (384 for MiniLM). Within a
table, rows written by another model of the same size are marked stale at start-up, so a memory is
never compared with a query embedded by a different model.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.memory_schema import TABLE_NAME
from kodiai.learning.memory_store import LanceMemoryStore, MemoryStoreOptions, open_memory_store
from kodiai.learning.object_store import env_flag, is_remote, refresh_seconds, remote_storage_options
from kodiai.log import get_logger

ORIGINAL_DIMENSIONS = 1024


def memory_table_name(dimensions: int) -> str:
    return TABLE_NAME if dimensions == ORIGINAL_DIMENSIONS else f"{TABLE_NAME}_d{dimensions}"


def open_store_for_provider(
    uri: str,
    provider: EmbeddingProvider,
    *,
    options: MemoryStoreOptions | None = None,
    storage_options: dict[str, str] | None = None,
    mark_stale: bool = True,
    env: Mapping[str, str] | None = None,
) -> LanceMemoryStore | None:
    """The store matching ``provider``'s vector size (None for the no-op provider), with rows of other
    models marked stale (logged when any were).

    An object-store ``uri`` (``s3://bucket/prefix``) is reached with the AWS variables of ``env`` (the
    process environment by default) and opened for several writers; so is a directory shared by several
    processes with ``LEARNING_MEMORY_MULTI_WRITER=true``. Raises
    :class:`~kodiai.learning.object_store.MemoryStoreRefused` when the store is unsafe or misconfigured.
    """
    if provider.dimensions <= 0:
        return None
    env = os.environ if env is None else env
    options = options or MemoryStoreOptions()
    multi = is_remote(uri) or env_flag(env, "LEARNING_MEMORY_MULTI_WRITER") or options.multi_writer
    if multi:
        options = options.model_copy(
            update={"multi_writer": True, "refresh_seconds": refresh_seconds(env, options.refresh_seconds)}
        )
    if is_remote(uri) and storage_options is None:
        storage_options = remote_storage_options(uri, env)
    store = open_memory_store(
        uri,
        dimensions=provider.dimensions,
        options=options,
        storage_options=storage_options,
        table_name=memory_table_name(provider.dimensions),
        multi_writer=multi,
    )
    if mark_stale:
        flagged = store.mark_stale(provider.model)
        if flagged:
            get_logger("kodiai.learning").info(
                "Learning memories of another embedding model marked stale",
                model=provider.model,
                count=flagged,
            )
    return store


def warm_in_background(store: LanceMemoryStore) -> threading.Thread:
    """Build the in-memory ANN index of every repo above the exact-search limit on a daemon thread
    (queries are answered by LanceDB until it is ready); failures are logged, never raised."""
    log = get_logger("kodiai.learning")

    def run() -> None:
        started = time.monotonic()
        try:
            repos = store.warm()
        except Exception as exc:
            log.warning(
                "Learning memory warm-up failed (LanceDB answers instead)", err=f"{type(exc).__name__}"
            )
            return
        if repos:
            log.info(
                "Learning memory ANN indexes built",
                repos=len(repos),
                seconds=round(time.monotonic() - started, 1),
            )

    thread = threading.Thread(target=run, name="kodiai-memory-warm", daemon=True)
    thread.start()
    return thread


def finding_memory_text(severity: str, category: str, title: str, file_path: str) -> str:
    """The text embedded for a finding's memory (behaviour R1 step 50): three lines."""
    return f"[{severity}] [{category}]\n{title}\nFile: {file_path}"


def memory_record_fields(provider: EmbeddingProvider) -> dict[str, Any]:
    """The embedding fields every record written with ``provider`` carries."""
    return {"embedding_model": provider.model, "embedding_dim": provider.dimensions}
