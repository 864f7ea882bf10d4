"""`kodiai backup create` / `restore` over the real stores, then the next review (issue 24).

Back up while the stores are open, wipe the data directory, restore, and run a review through the real
review handler over the fake GitHub: its retrieval step finds the memories written before the backup and
puts them in the prompt; the knowledge and telemetry rows and the job journal's pending delivery survive.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.github.permissions import SHARED_CACHE
from kodiai.jobs.journal import Intake, JobJournal
from kodiai.learning.types import LearningMemoryRecord
from support.fake_github import FakeGitHub
from support.fake_github_fixtures import running_pr_server
from support.fake_github_pr import PrState
from support.review_harness import INSTALLATION, OWNER, REPO, ReviewHarness

MAXGAP = "knowledge:\n  retrieval:\n    cutStrategy: maxgap\n"
OLD_MEMORIES = {1: "Unchecked null return in parser", 2: "Missing await on flush", 3: "Leaked file handle"}


class AxisEmbedder:
    """Queries embed to e0; memories get chosen vectors, so which ones are retrieved is exact."""

    model = "axis-test"
    dimensions = 8

    def generate(self, text: str, input_type: str) -> np.ndarray | None:
        vec = np.zeros(self.dimensions, dtype=np.float32)
        vec[0 if input_type == "query" else 7] = 1.0
        return vec

    def generate_many(self, texts: list[str], input_type: str) -> list[np.ndarray | None]:
        return [self.generate(t, input_type) for t in texts]


def at_distance(distance: float, axis: int) -> np.ndarray:
    cos = 1 - distance**2 / 2
    vec = np.zeros(8, dtype=np.float32)
    vec[0], vec[axis] = cos, math.sqrt(1 - cos**2)
    return vec


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeGitHub, PrState]]:
    with running_pr_server((OWNER, REPO, INSTALLATION)) as server:
        SHARED_CACHE.clear()
        yield server
        SHARED_CACHE.clear()


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def store_options(data: Path) -> list[str]:
    return [
        "--env-file",
        str(data.parent / "none.env"),
        "--telemetry",
        str(data / "telemetry.db"),
        "--knowledge",
        str(data / "knowledge.db"),
        "--jobs",
        str(data / "jobs.db"),
        "--memory",
        str(data / "memory.lance"),
    ]


def count(db: Path, sql: str) -> Any:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


async def test_restored_memories_reach_the_next_review(
    tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]
) -> None:
    fake, state = fake_server
    data, backup = tmp_path / "data", tmp_path / "backup-1"
    h = ReviewHarness(data, fake, state, embedder=AxisEmbedder())
    try:
        assert h.memory_store is not None
        for axis, text in OLD_MEMORIES.items():
            record = LearningMemoryRecord(
                repo=f"{OWNER}/{REPO}",
                owner=OWNER,
                finding_id=axis,
                review_id=1,
                source_repo=f"{OWNER}/{REPO}",
                finding_text=text,
                severity="major",
                category="correctness",
                file_path="src/index.ts",
                outcome="accepted",
                embedding_model=AxisEmbedder.model,
                embedding_dim=AxisEmbedder.dimensions,
            )
            h.memory_store.write_memory(record, at_distance(0.2 + axis / 100, axis))
        await h.deliver(h.open_pr(101, config=MAXGAP), delivery="before-backup")
        journal = JobJournal.open(data / "jobs.db")
        body = b'{"action":"opened","number":7}'
        journal._accept_now(
            Intake("pending-1", "issues", "opened", 7, body),
            now=datetime.now(UTC),
            journal=True,
            started=False,
        )
        journal.close()
        # The stores are still open (a running server): the backup is taken beside them.
        code, out, err = cli("backup", "create", str(backup), "--json", *store_options(data))
        assert code == 0, err
        manifest = json.loads(out)
        [memory_table] = manifest["memory"]["tables"].values()
        assert memory_table["rows"] == 3 and memory_table["models"] == {"axis-test": 3}
        assert manifest["databases"]["knowledge"]["tables"]["reviews"] == 1
    finally:
        h.close()

    shutil.rmtree(data)
    code, out, err = cli("backup", "restore", str(backup), *store_options(data))
    assert code == 0, err
    assert "restored memory" in out and "restored jobs" in out

    h = ReviewHarness(data, fake, state, embedder=AxisEmbedder())
    try:
        await h.deliver(h.open_pr(102, config=MAXGAP), delivery="after-restore")
        prompt = h.prompts[-1]
        for text in OLD_MEMORIES.values():
            assert text in prompt
        results = h.rows(
            "telemetry.db", "SELECT delivery_id, result_count FROM retrieval_quality ORDER BY id"
        )
        assert results == [("before-backup", 3), ("after-restore", 3)]
        assert count(data / "knowledge.db", "SELECT COUNT(*) FROM reviews WHERE pr_number = 101") == 1
    finally:
        h.close()
    journal = JobJournal.open(data / "jobs.db")  # same identity: no "not the journal this server last used"
    try:
        assert [e.delivery_id for e in journal.unfinished()] == ["pending-1"]  # replayed at the next start
        assert journal.seen("pending-1") is True
    finally:
        journal.close()


def test_restore_refuses_a_data_dir_that_holds_data_unless_forced(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "telemetry.db")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    code, _, err = cli("backup", "create", str(tmp_path / "b"), *store_options(data))
    assert code == 0, err
    code, _, err = cli("backup", "restore", str(tmp_path / "b"), *store_options(data))
    assert code == 1 and "refusing to overwrite" in err and "telemetry.db" in err
    code, _, err = cli("backup", "restore", str(tmp_path / "b"), "--force", *store_options(data))
    assert code == 0, err
    [aside] = data.glob("telemetry.db.pre-restore-*")
    assert (
        count(aside, "SELECT COUNT(*) FROM t") == 1 == count(data / "telemetry.db", "SELECT COUNT(*) FROM t")
    )
    # --only restores some stores (a damaged journal alone); a store the backup lacks is an error.
    code, _, err = cli("backup", "restore", str(tmp_path / "b"), "--only", "jobs", *store_options(data))
    assert code == 1 and "the backup holds no jobs (it holds telemetry)" in err
    # A damaged backup is refused before anything is touched.
    (tmp_path / "b" / "telemetry.db").write_bytes(b"x" * 100)
    code, _, err = cli("backup", "restore", str(tmp_path / "b"), "--force", *store_options(data))
    assert code == 1 and "does not match its checksum" in err
    code, _, err = cli("backup", "verify", str(tmp_path / "b"))
    assert code == 1 and "does not match its checksum" in err
