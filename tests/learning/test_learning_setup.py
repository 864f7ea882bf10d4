"""Start-up glue: the table per vector size, stale-marking on a model change, and the config keys
`knowledge.retrieval.confidenceLabels` / `ambiguitySignal`."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import structlog
from learning_helpers import make_record, unit

from kodiai.config import log_config_warnings, parse_repo_config
from kodiai.learning.embeddings import InputType, NoopEmbeddingProvider
from kodiai.learning.setup import finding_memory_text, memory_table_name, open_store_for_provider


class SeededProvider:
    """A deterministic 16-dim embedder (hash-seeded unit vectors) standing in for a real model."""

    dimensions = 16

    def __init__(self, model: str) -> None:
        self.model = model

    def generate(self, text: str, input_type: InputType) -> np.ndarray | None:
        return unit(np.random.default_rng(zlib.crc32(text.encode())), 16)

    def generate_many(self, texts: Sequence[str], input_type: InputType) -> list[np.ndarray | None]:
        return [self.generate(t, input_type) for t in texts]


def test_table_per_vector_size() -> None:
    assert memory_table_name(1024) == "learning_memories"
    assert memory_table_name(384) == "learning_memories_d384"


def test_model_change_marks_old_memories_stale_at_start_up(tmp_path: Path) -> None:
    uri = str(tmp_path / "m.lance")
    old = open_store_for_provider(uri, SeededProvider("model-a"))
    assert old is not None
    rng = np.random.default_rng(0)
    old.write_memory(make_record(finding_id=1, model="model-a", dim=16), unit(rng, 16))
    # same model again: nothing becomes stale
    same = open_store_for_provider(uri, SeededProvider("model-a"))
    assert same is not None and same.stats().stale == 0
    new = open_store_for_provider(uri, SeededProvider("model-b"))
    assert new is not None and new.stats().stale == 1
    assert new.retrieve_memories(unit(rng, 16), "acme/api", 5) == []


def test_noop_provider_has_no_store(tmp_path: Path) -> None:
    assert open_store_for_provider(str(tmp_path / "m.lance"), NoopEmbeddingProvider()) is None


def test_memory_text_three_lines() -> None:
    """R1 step 50: `[severity] [category]`, the title, `File: path`."""
    assert finding_memory_text("major", "security", "SQL injection", "src/db.ts") == (
        "[major] [security]\nSQL injection\nFile: src/db.ts"
    )


def test_new_retrieval_keys_optional_and_warn_with_small_top_k() -> None:
    default = parse_repo_config("").config
    assert default.knowledge.retrieval.confidence_labels is None
    assert default.knowledge.retrieval.ambiguity_signal is None
    dumped = default.model_dump(by_alias=True, exclude_none=True)["knowledge"]["retrieval"]
    assert "confidenceLabels" not in dumped and "ambiguitySignal" not in dumped
    parsed = parse_repo_config("knowledge:\n  retrieval:\n    topK: 3\n    ambiguitySignal: true\n")
    assert parsed.config.knowledge.retrieval.ambiguity_signal is True
    assert parsed.warnings == []  # valid: an advisory, not a section fallback
    with structlog.testing.capture_logs() as logs:
        log_config_warnings(parsed, structlog.get_logger())
    assert [(e["event"], e["log_level"]) for e in logs] == [("Config advisory", "warning")]
    assert "ambiguitySignal" in logs[0]["advice"] and "topK 3" in logs[0]["advice"]
    quiet = parse_repo_config("knowledge:\n  retrieval:\n    topK: 8\n    ambiguitySignal: true\n")
    assert quiet.advisories == []
