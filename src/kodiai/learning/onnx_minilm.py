"""all-MiniLM-L6-v2 on onnxruntime, without torch: the same vectors as sentence-transformers.

The transformer is built as an ONNX graph from the model's own ``config.json`` and ``model.safetensors``
(:mod:`kodiai.learning.bert_onnx`, about a second at start-up, in memory: nothing is exported or cached on
disk). Tokenisation (the model's ``tokenizer.json``, truncated at ``max_seq_length`` from
``sentence_bert_config.json``), mean pooling over the attention mask and L2 normalisation reproduce
sentence-transformers' pipeline; only models made of Transformer → mean Pooling (→ Normalize) are
accepted (:class:`UnsupportedModelError` otherwise). Loading needs onnxruntime, onnx, safetensors,
``tokenizers`` and numpy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kodiai.learning.bert_onnx import INPUT_NAMES, OUTPUT_NAME, build_bert_onnx

MAX_THREADS = 8
DEFAULT_BATCH_SIZE = 16
"""Small batches interleave the per-CPU sessions best (measured 16 > 32 > 64 > 128 on 2 cores)."""
_ALLOWED_MODULES = {"Transformer", "Pooling", "Normalize"}


class UnsupportedModelError(ValueError):
    """The model directory is not a Transformer + mean-pooling sentence-transformers model."""


def default_threads() -> int:
    """onnxruntime's intra-op threads: the CPUs this process may use, at most :data:`MAX_THREADS`."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    return max(1, min(available, MAX_THREADS))


@dataclass(frozen=True)
class _ModelSpec:
    max_seq_length: int
    hidden_size: int


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise UnsupportedModelError(f"{path} is not a JSON object")
    return data


def _module_kind(module: dict[str, Any]) -> str:
    """``Pooling`` for ``sentence_transformers.models.Pooling`` (any sentence-transformers module path)."""
    kind = str(module.get("type", ""))
    return kind.rsplit(".", 1)[-1] if kind.startswith("sentence_transformers.") else kind


def _read_spec(model_dir: Path) -> _ModelSpec:
    """Check the sentence-transformers layout is one this engine reproduces exactly; read its sizes."""
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        raise UnsupportedModelError(f"{modules_file} is missing")
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    kinds = [_module_kind(m) for m in modules]
    if not kinds or kinds[0] != "Transformer" or modules[0].get("path", ""):
        raise UnsupportedModelError(f"first module must be a root Transformer, got {kinds}")
    if not set(kinds) <= _ALLOWED_MODULES or kinds.count("Pooling") != 1:
        raise UnsupportedModelError(f"unsupported modules {kinds}")
    pooling_dir = modules[kinds.index("Pooling")].get("path", "")
    pooling = _read_json(model_dir / pooling_dir / "config.json")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True}
    if modes != {"pooling_mode_mean_tokens"} and pooling.get("pooling_mode") != "mean":
        raise UnsupportedModelError(f"only mean pooling is supported, got {sorted(modes)}")

    config = _read_json(model_dir / "config.json")
    hidden_size = int(config["hidden_size"])
    if int(pooling.get("word_embedding_dimension", hidden_size)) != hidden_size:
        raise UnsupportedModelError("pooling dimension differs from the transformer's hidden size")
    st_config_file = model_dir / "sentence_bert_config.json"
    st_config = _read_json(st_config_file) if st_config_file.is_file() else {}
    if st_config.get("do_lower_case"):
        raise UnsupportedModelError("do_lower_case is not supported")
    max_seq_length = st_config.get("max_seq_length") or config.get("max_position_embeddings")
    if not max_seq_length:
        raise UnsupportedModelError("no max_seq_length")
    return _ModelSpec(max_seq_length=int(max_seq_length), hidden_size=hidden_size)


def _load_tokenizer(model_dir: Path, max_seq_length: int) -> tuple[Any, int]:
    """The fast tokenizer, truncating at ``max_seq_length`` and not padding (batches are padded here)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    padding = tokenizer.padding
    pad_id = padding["pad_id"] if padding else tokenizer.token_to_id("[PAD]")
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_seq_length)
    return tokenizer, int(pad_id or 0)


def _pad(encodings: Sequence[Any], pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-pad a batch of encodings to its longest row: ids, attention mask, token type ids (int64)."""
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n] = encoding.ids
        mask[row, :n] = encoding.attention_mask
        types[row, :n] = encoding.type_ids
    return ids, mask, types


class OnnxSentenceEncoder:
    """A sentence-transformers mean-pooling model run by onnxruntime; builds its graph at init.

    ``encode`` is thread-safe. It runs one single-threaded session per CPU (``threads``) side by side
    on separate batches: on small hosts that beats one session whose threads split each small matrix
    product (measured 2 x 1 thread ~8 % over 1 x 2 threads on 2 cores); every row's vector is the same
    whichever batch it lands in, since padding is masked out.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        import onnxruntime as ort

        self._ort = ort
        model_dir = Path(model_path)
        spec = _read_spec(model_dir)
        self.dimensions = spec.hidden_size
        self._batch_size = max(1, batch_size)
        self._threads = threads or default_threads()
        self._tokenizer, self._pad_id = _load_tokenizer(model_dir, spec.max_seq_length)
        graph = build_bert_onnx(model_dir)
        self._sessions = [self._session(graph) for _ in range(self._threads)]
        session = self._sessions[0]
        self._feeds = [i.name for i in session.get_inputs()]
        self._pool = (
            ThreadPoolExecutor(self._threads, thread_name_prefix="kodiai-onnx") if self._threads > 1 else None
        )

    def _session(self, source: bytes) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = self._ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}
        outputs = session.get_outputs()
        if not {"input_ids", "attention_mask"} <= inputs <= set(INPUT_NAMES):
            raise ValueError(f"unexpected ONNX inputs {sorted(inputs)}")
        if not outputs or outputs[0].name != OUTPUT_NAME or outputs[0].shape[-1] != self.dimensions:
            raise ValueError("unexpected ONNX output")
        return session

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text, in the order given."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        # Longest first by characters (as sentence-transformers does), so each batch pads to similar
        # lengths; a call smaller than one batch per session is split so every session has a share.
        # Each batch is tokenised on its worker, overlapping the other session's inference.
        items = list(texts)
        order = np.argsort([-len(t) for t in items], kind="stable")
        size = max(1, min(self._batch_size, -(-len(order) // len(self._sessions))))
        batches = [order[start : start + size] for start in range(0, len(order), size)]

        def run(job: tuple[int, np.ndarray]) -> None:
            slot, rows = job
            encodings = self._tokenizer.encode_batch([items[i] for i in rows])
            ids, mask, types = _pad(encodings, self._pad_id)
            arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            session = self._sessions[slot % len(self._sessions)]
            hidden = session.run([OUTPUT_NAME], {name: arrays[name] for name in self._feeds})[0]
            weights = mask.astype(np.float32)[:, :, None]
            summed = (hidden * weights).sum(axis=1)
            out[rows] = summed / np.clip(weights.sum(axis=1), 1e-9, None)

        jobs = list(enumerate(batches))
        if self._pool is None or len(jobs) == 1:
            for job in jobs:
                run(job)
        else:
            list(self._pool.map(run, jobs))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (out / norms).astype(np.float32)
