"""Embedding providers (R2.27): the local MiniLM model for real, Voyage's real client against a fake
Voyage HTTP server on loopback, the no-op provider, and the provider choice."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
import structlog

from kodiai.learning.embeddings import (
    LocalEmbeddingProvider,
    NoopEmbeddingProvider,
    VoyageEmbeddingProvider,
    build_embedding_provider,
)
from kodiai.log import bind_delivery


class FakeVoyage:
    """A loopback HTTP server speaking Voyage's /v1/embeddings; scripted statuses, recorded requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: list[int] = []  # statuses to answer before succeeding
        self.delay = 0.0
        self.dims = 1024
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if fake.delay:
                    time.sleep(fake.delay)
                status = fake.script.pop(0) if fake.script else 200
                if status != 200:
                    payload = {"detail": "scripted failure"}
                else:
                    rng = np.random.default_rng(len(fake.requests))
                    payload = {
                        "object": "list",
                        "data": [
                            {
                                "object": "embedding",
                                "embedding": (rng.standard_normal(fake.dims) * 3).tolist(),
                                "index": i,
                            }
                            for i, _ in enumerate(body["input"])
                        ],
                        "model": body["model"],
                        "usage": {"total_tokens": 10},
                    }
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def voyage() -> Iterator[FakeVoyage]:
    fake = FakeVoyage()
    yield fake
    fake.close()


def provider(fake: FakeVoyage, **kw: Any) -> VoyageEmbeddingProvider:
    return VoyageEmbeddingProvider("pa-test-key-000000000000000000000", base_url=fake.base_url, **kw)


def test_voyage_request_shape_and_normalised_vectors(voyage: FakeVoyage) -> None:
    """R2.27: model voyage-code-3, input_type, 1024-dim output; vectors come back unit-length float32."""
    p = provider(voyage)
    vec = p.generate("null check missing", "query")
    assert vec is not None and vec.dtype == np.float32 and vec.shape == (1024,)
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)
    sent = voyage.requests[0]
    assert sent["input"] == ["null check missing"]
    assert sent["model"] == "voyage-code-3"
    assert sent["input_type"] == "query"
    assert sent["output_dimension"] == 1024
    assert voyage.headers[0]["Authorization"] == "Bearer pa-test-key-000000000000000000000"
    assert (p.model, p.dimensions) == ("voyage-code-3", 1024)


def test_voyage_document_batch(voyage: FakeVoyage) -> None:
    out = provider(voyage).generate_many(["a", "b", "c"], "document")
    assert len(out) == 3 and all(v is not None for v in out)
    assert voyage.requests[0]["input_type"] == "document" and len(voyage.requests) == 1


def test_voyage_client_error_is_fail_open_with_warning_and_delivery_id(voyage: FakeVoyage) -> None:
    voyage.script = [400]
    with structlog.testing.capture_logs() as logs, bind_delivery("delivery-42"):
        assert provider(voyage).generate("x", "query") is None
    warning = next(e for e in logs if e["log_level"] == "warning")
    assert "fail-open" in warning["event"]
    assert warning["status"] == 400
    assert "pa-test-key" not in json.dumps(logs, default=str)
    assert len(voyage.requests) == 1  # a 400 is not retried


def test_voyage_retries_then_succeeds(voyage: FakeVoyage) -> None:
    """2 retries: two 503s then success gives a vector after three requests."""
    voyage.script = [503, 503]
    assert provider(voyage).generate("x", "query") is not None
    assert len(voyage.requests) == 3


def test_voyage_gives_up_after_two_retries(voyage: FakeVoyage) -> None:
    voyage.script = [503, 503, 503, 503]
    assert provider(voyage).generate("x", "query") is None
    assert len(voyage.requests) == 3


def test_voyage_timeout_is_fail_open(voyage: FakeVoyage) -> None:
    voyage.delay = 1.0
    started = time.perf_counter()
    assert provider(voyage, timeout=0.2, retries=0).generate("x", "query") is None
    assert time.perf_counter() - started < 1.0


def test_voyage_wrong_size_response_is_fail_open(voyage: FakeVoyage) -> None:
    voyage.dims = 512
    assert provider(voyage).generate("x", "query") is None


def test_voyage_unreachable_is_fail_open() -> None:
    p = VoyageEmbeddingProvider("pa-key", base_url="http://127.0.0.1:9/v1", retries=0, timeout=1)
    assert p.generate("x", "document") is None


def test_noop_provider() -> None:
    p = NoopEmbeddingProvider()
    assert (p.model, p.dimensions, p.generate("x", "query"), p.generate_many(["a"], "document")) == (
        "none",
        0,
        None,
        [None],
    )


def test_provider_choice() -> None:
    assert isinstance(build_embedding_provider(None, voyage_api_key="pa-x"), VoyageEmbeddingProvider)
    assert isinstance(build_embedding_provider("auto", voyage_api_key="  "), LocalEmbeddingProvider)
    assert isinstance(build_embedding_provider(None), LocalEmbeddingProvider)
    assert isinstance(build_embedding_provider("local", voyage_api_key="pa-x"), LocalEmbeddingProvider)
    assert isinstance(build_embedding_provider("none", voyage_api_key="pa-x"), NoopEmbeddingProvider)
    assert isinstance(build_embedding_provider("voyage"), NoopEmbeddingProvider)  # no key: warned, no-op
    with pytest.raises(ValueError, match="unknown embedding provider"):
        build_embedding_provider("openai")


@pytest.mark.slow
def test_local_minilm_for_real() -> None:
    """The installed all-MiniLM-L6-v2: 384 dims, unit vectors, related texts closer than unrelated ones."""
    p = LocalEmbeddingProvider()
    a, b, c = p.generate_many(
        ["possible null pointer dereference", "missing null check before use", "update the README badges"],
        "document",
    )
    assert a is not None and b is not None and c is not None
    assert a.shape == (384,) and a.dtype == np.float32
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(a - b) < np.linalg.norm(a - c)
    single = p.generate("possible null pointer dereference", "query")
    assert single is not None and np.allclose(single, a, atol=1e-5)


def test_local_model_failure_is_fail_open(tmp_path: Any) -> None:
    p = LocalEmbeddingProvider(model_path=str(tmp_path / "no-model-here"))
    assert p.generate("x", "query") is None
