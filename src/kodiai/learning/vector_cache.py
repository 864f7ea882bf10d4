"""The per-repo in-memory search structures (exact or ANN), least recently used evicted by bytes."""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol

import numpy as np

from kodiai.learning.types import MemoryHit


class RepoIndex(Protocol):
    """What the store needs from a repo's in-memory index."""

    @property
    def kind(self) -> str:
        """``exact``, ``ivf`` or ``hnsw``."""
        ...

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    def search(self, query: np.ndarray, k: int) -> list[MemoryHit]: ...

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None: ...

    def remove(self, ids: np.ndarray) -> None: ...

    def live_ids(self) -> np.ndarray:
        """The ids the index answers with (to reconcile it with commits made by another process)."""
        ...


class VectorCache:
    """Repo → index, LRU; entries beyond ``max_bytes`` are evicted (the newest one is always kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, RepoIndex] = OrderedDict()

    def get(self, repo: str) -> RepoIndex | None:
        entry = self._entries.get(repo)
        if entry is not None:
            self._entries.move_to_end(repo)
        return entry

    def peek(self, repo: str) -> RepoIndex | None:
        """The entry without touching its recency."""
        return self._entries.get(repo)

    def put(self, repo: str, entry: RepoIndex) -> None:
        self._entries[repo] = entry
        self._entries.move_to_end(repo)
        self.shrink()

    def shrink(self) -> None:
        while len(self._entries) > 1 and self.nbytes > self.max_bytes:
            self._entries.popitem(last=False)

    def pop(self, repo: str) -> None:
        self._entries.pop(repo, None)

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.max_bytes

    @property
    def nbytes(self) -> int:
        return sum(entry.nbytes for entry in self._entries.values())

    def repos(self) -> list[str]:
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()
