"""An on-disk embedding cache keyed by model, input type and text hash.

Embedding a few thousand texts on a CPU takes minutes; an evaluation embeds them once and then reads the
vectors back. One cache directory holds one ``.npz`` file per model (keys + vectors), rewritten
atomically (temp file + rename) after each batch of new texts, so an interrupted run loses nothing it
had already saved and a concurrent reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kodiai.learning.embeddings import EmbeddingProvider, InputType

SAVE_EVERY = 512


class EmbeddingFailedError(RuntimeError):
    """The provider returned no vector for some text (providers fail open; an evaluation cannot)."""


def text_key(model: str, input_type: InputType, text: str) -> str:
    """sha256 over model, input type and text (the input type matters for Voyage)."""
    return hashlib.sha256(f"{model}\0{input_type}\0{text}".encode()).hexdigest()


def _file_name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model) + ".npz"


class EmbeddingCache:
    """Vectors of ``provider`` for texts, from disk when seen before, else embedded and saved."""

    def __init__(self, directory: str | Path, provider: EmbeddingProvider) -> None:
        self._dir = Path(directory)
        self._provider = provider
        self._path = self._dir / _file_name(provider.model)
        self._vectors: dict[str, np.ndarray] = {}
        if self._path.is_file():
            with np.load(self._path, allow_pickle=False) as data:
                keys = [str(k) for k in data["keys"]]
                vectors = data["vectors"]
            if vectors.ndim == 2 and vectors.shape[1] == provider.dimensions:
                self._vectors = dict(zip(keys, vectors, strict=True))
        self.hits = 0
        self.misses = 0

    @property
    def path(self) -> Path:
        return self._path

    def embed_corpus(
        self,
        documents: Sequence[str],
        queries: Sequence[str],
        on_embedded: Callable[[int, int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The findings' and the queries' vectors; ``on_embedded(done, total)`` counts the texts of both the
        cache did not hold (reported after each saved batch; never called when everything is cached)."""
        pending = len(self._missing(documents, "document"))
        total = pending + len(self._missing(queries, "query"))

        def offset(base: int) -> Callable[[int, int], None] | None:
            if on_embedded is None:
                return None
            report = on_embedded
            return lambda done, _: report(base + done, total)

        return self.embed(documents, "document", offset(0)), self.embed(queries, "query", offset(pending))

    def _missing(self, texts: Sequence[str], input_type: InputType) -> list[str]:
        keys = (text_key(self._provider.model, input_type, t) for t in texts)
        return list(dict.fromkeys(k for k in keys if k not in self._vectors))

    def embed(
        self,
        texts: Sequence[str],
        input_type: InputType,
        on_embedded: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """A ``(len(texts), dims)`` float32 array; raises :class:`EmbeddingFailedError` on a provider failure.

        ``on_embedded(done, total)`` is called after each saved batch of texts the cache did not hold."""
        model = self._provider.model
        keys = [text_key(model, input_type, t) for t in texts]
        missing = self._missing(texts, input_type)
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            by_key = {k: t for k, t in zip(keys, texts, strict=True)}
            for start in range(0, len(missing), SAVE_EVERY):
                chunk = missing[start : start + SAVE_EVERY]
                vectors = self._provider.generate_many([by_key[k] for k in chunk], input_type)
                failed = sum(1 for v in vectors if v is None)
                if failed:
                    raise EmbeddingFailedError(
                        f"{model}: {failed} of {len(chunk)} texts could not be embedded (see the warnings)"
                    )
                for key, vector in zip(chunk, vectors, strict=True):
                    assert vector is not None
                    self._vectors[key] = np.asarray(vector, dtype=np.float32)
                self._save()
                if on_embedded is not None:
                    on_embedded(min(start + SAVE_EVERY, len(missing)), len(missing))
        if not keys:
            return np.zeros((0, self._provider.dimensions), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def _save(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype=str)
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        fd, tmp = tempfile.mkstemp(dir=self._dir, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, keys=keys, vectors=vectors)
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
