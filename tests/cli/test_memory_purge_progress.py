"""``kodiai memory purge-stale`` on a store of a few thousand rows: progress on stderr (which step runs and
for how long), the result on stdout, stale rows gone, the current model's rows kept."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.embeddings import LOCAL_MODEL
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.setup import memory_table_name
from kodiai.learning.types import LearningMemoryRecord

ROWS = 3000


def _records(model: str, start: int, count: int) -> list[LearningMemoryRecord]:
    return [
        LearningMemoryRecord.model_validate(
            {
                "repo": "acme/api",
                "owner": "acme",
                "sourceRepo": "acme/api",
                "findingId": start + i,
                "reviewId": 1,
                "findingText": f"finding {start + i}",
                "severity": "minor",
                "category": "style",
                "filePath": "src/a.py",
                "outcome": "accepted",
                "embeddingModel": model,
                "embeddingDim": 384,
            }
        )
        for i in range(count)
    ]


def test_purge_stale_shows_progress_and_purges(tmp_path: Path) -> None:
    uri = str(tmp_path / "m.lance")
    store = open_memory_store(uri, dimensions=384, table_name=memory_table_name(384))
    rng = np.random.default_rng(7)
    for model, start in (("old-model", 0), (LOCAL_MODEL, ROWS)):
        vectors = rng.normal(size=(ROWS, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.write_memories(_records(model, start, ROWS), vectors)
    store.close()

    started = time.perf_counter()
    result = CliRunner().invoke(app, ["memory", "purge-stale", "--uri", uri, "--provider", "local"])
    print(f"purge-stale of {ROWS} of {2 * ROWS} rows: {time.perf_counter() - started:.2f}s")
    assert result.exit_code == 0, result.output
    assert f"Marked {ROWS} stale" in result.stdout and f"purged {ROWS} stale memories" in result.stdout
    assert "Purged stale memories" in result.stderr and "3/3" in result.stderr
    assert open_memory_store(uri, dimensions=384, table_name=memory_table_name(384)).count() == ROWS
