"""P1.2 steps 6–11 in the composition root: stores opened once, learned memory fail-open."""

from __future__ import annotations

from pathlib import Path

import structlog
from pydantic import SecretStr

from kodiai.server.stores import open_stores
from kodiai.settings import Settings


def settings(tmp_path: Path, **kw: object) -> Settings:
    values: dict[str, object] = {
        "telemetry_db_path": str(tmp_path / "t.db"),
        "knowledge_db_path": str(tmp_path / "k.db"),
        "learning_memory_uri": str(tmp_path / "memory.lance"),
        "embedding_provider": "none",
    }
    values.update(kw)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_1_2_stores_opened_and_migrated(tmp_path: Path) -> None:
    """Steps 6–7: telemetry and knowledge opened (migrated), knowledge path logged with its source."""
    with structlog.testing.capture_logs() as logs:
        stores = open_stores(settings(tmp_path))
    try:
        assert (tmp_path / "t.db").exists() and (tmp_path / "k.db").exists()
        assert stores.memory is None and stores.isolation is None  # provider "none": no memory
        resolved = [e for e in logs if e["event"] == "Knowledge store path resolved"]
        assert resolved and resolved[0]["knowledgeDbPath"] == str((tmp_path / "k.db").resolve())
    finally:
        stores.close()


def test_1_2_08_learning_memory_with_voyage_dimensions(tmp_path: Path) -> None:
    """Steps 8–10: a provider with dimensions → a LanceDB store and the isolation layer; provider logged."""
    with structlog.testing.capture_logs() as logs:
        stores = open_stores(
            settings(tmp_path, embedding_provider="voyage", voyage_api_key=SecretStr("pa-test"))
        )
    try:
        assert stores.memory is not None and stores.isolation is not None
        assert stores.embeddings.dimensions == 1024
        assert any(e["event"] == "Embedding provider initialized" and e["dimensions"] == 1024 for e in logs)
    finally:
        stores.close()


def test_1_2_08_learning_memory_failure_is_fail_open(tmp_path: Path) -> None:
    """Step 8: a memory store that cannot open → warning, learning disabled, start-up continues."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the LanceDB directory should be")
    with structlog.testing.capture_logs() as logs:
        stores = open_stores(
            settings(
                tmp_path,
                embedding_provider="voyage",
                voyage_api_key=SecretStr("pa-test"),
                learning_memory_uri=str(blocker / "memory.lance"),
            )
        )
    try:
        assert stores.memory is None and stores.isolation is None
        warn = [
            e
            for e in logs
            if e["event"] == "Learning memory store failed to initialize (fail-open, learning disabled)"
        ]
        assert warn and "pa-test" not in str(warn[0])
    finally:
        stores.close()
