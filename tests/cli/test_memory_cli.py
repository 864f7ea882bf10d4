"""`kodiai memory import|search|stats|purge-stale|retire` through typer's CliRunner on a real LanceDB
directory with the real local MiniLM embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.embeddings import LocalEmbeddingProvider
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.setup import memory_table_name
from kodiai.learning.types import LearningMemoryRecord

pytestmark = pytest.mark.slow

RECORDS = [
    {
        "repo": "acme/api",
        "findingId": 1,
        "reviewId": 1,
        "findingText": "Possible null dereference of user",
        "severity": "major",
        "category": "correctness",
        "filePath": "src/user.ts",
        "outcome": "accepted",
    },
    {
        "repo": "acme/api",
        "findingId": 2,
        "reviewId": 1,
        "findingText": "SQL injection in raw query builder",
        "severity": "critical",
        "category": "security",
        "filePath": "src/db.ts",
        "outcome": "accepted",
    },
    {
        "repo": "acme/api",
        "findingId": 3,
        "reviewId": 2,
        "findingText": "Unused import",
        "severity": "minor",
        "category": "style",
        "filePath": "src/util.ts",
        "outcome": "suppressed",
        "text": "unused import of lodash",
    },
    {
        "repo": "acme/web",
        "findingId": 4,
        "reviewId": 3,
        "findingText": "Null dereference in render",
        "severity": "major",
        "category": "correctness",
        "filePath": "web/app.ts",
        "outcome": "accepted",
    },
]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    return path


def base(uri: Path) -> list[str]:
    return ["--uri", str(uri), "--provider", "local"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real import, copied into each test that needs a filled store."""
    root = tmp_path_factory.mktemp("memory-template")
    data = root / "memories.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    uri = root / "m.lance"
    result = CliRunner().invoke(app, ["memory", "import", str(data), *base(uri)])
    assert result.exit_code == 0, result.output
    assert "Imported 4 memories (0 duplicates skipped, 0 failed to embed)" in result.stdout
    return uri


def imported(template: Path, uri: Path) -> None:
    shutil.copytree(template, uri)


def test_import_embeds_and_stores_with_the_provider_model(
    runner: CliRunner, data: Path, template: Path, tmp_path: Path
) -> None:
    uri = tmp_path / "m.lance"
    imported(template, uri)
    store = open_memory_store(str(uri), dimensions=384, table_name=memory_table_name(384))
    record = store.get_memory_record(1)
    assert record is not None
    assert (record.embedding_model, record.embedding_dim, record.owner, record.source_repo) == (
        "all-MiniLM-L6-v2",
        384,
        "acme",
        "acme/api",
    )
    # importing again skips every duplicate
    again = runner.invoke(app, ["memory", "import", str(data), *base(uri)])
    assert "Imported 0 memories (4 duplicates skipped" in again.output


def test_import_bad_line_aborts_with_nothing_written(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = json.dumps(RECORDS[0])
    bad_repo = json.dumps({**RECORDS[1], "repo": "acme/api' OR 1=1"})
    path.write_text(f"{good}\nnot json\n{bad_repo}\n", encoding="utf-8")
    uri = tmp_path / "m.lance"
    result = runner.invoke(app, ["memory", "import", str(path), *base(uri)])
    assert result.exit_code == 1
    assert "line 2" in result.output and "line 3" in result.output
    assert "nothing was imported" in result.output
    assert not uri.exists()


def test_search_prints_every_stage(runner: CliRunner, template: Path, tmp_path: Path) -> None:
    uri = tmp_path / "m.lance"
    imported(template, uri)
    result = runner.invoke(
        app,
        [
            "memory",
            "search",
            "--repo",
            "acme/api",
            "null pointer dereference of the user object",
            *base(uri),
            "--languages",
            "TypeScript",
            "--no-adaptive",
            "--threshold",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    for stage in (
        "1. Candidates from isolation (3)",
        "2. After language rerank",
        "3. Threshold: 2.0000",
        "adaptive off",
        "4. Final results (3)",
    ):
        assert stage in result.output
    assert "acme/web" not in result.output  # isolation: sharing is off
    as_json = runner.invoke(
        app, ["memory", "search", "--repo", "acme/api", "null dereference", *base(uri), "--json", "--sharing"]
    )
    out = json.loads(as_json.stdout)
    assert {c["record"]["repo"] for c in out["candidates"]} == {"acme/api", "acme/web"}
    assert len(out["confidence"]) == len(out["results"])
    # MiniLM's calibration profile selects the scale-free cut (issue 7); maxgap is the original's.
    assert out["threshold"]["method"].startswith("headgap:")
    original = runner.invoke(
        app,
        [
            "memory",
            "search",
            "--repo",
            "acme/api",
            "null dereference",
            *base(uri),
            "--json",
            "--cut-strategy",
            "maxgap",
        ],
    )
    assert json.loads(original.stdout)["threshold"]["method"] in ("percentile", "adaptive", "configured")


def test_search_rejects_an_unknown_cut_strategy(runner: CliRunner, template: Path, tmp_path: Path) -> None:
    uri = tmp_path / "m.lance"
    imported(template, uri)
    result = runner.invoke(
        app, ["memory", "search", "--repo", "acme/api", "x", *base(uri), "--cut-strategy", "nearest"]
    )
    assert result.exit_code == 1 and "unknown cut strategy 'nearest'" in result.output


def test_search_rejects_bad_repo(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["memory", "search", "--repo", "nope", "x", *base(tmp_path / "m.lance")])
    assert result.exit_code == 1 and "invalid repository name" in result.output


def test_stats(runner: CliRunner, template: Path, tmp_path: Path) -> None:
    uri = tmp_path / "m.lance"
    imported(template, uri)
    result = runner.invoke(app, ["memory", "stats", *base(uri), "--json"])
    stats = json.loads(result.stdout)
    assert (stats["total"], stats["stale"], stats["dimensions"]) == (4, 0, 384)
    assert stats["by_repo"] == {"acme/api": 3, "acme/web": 1}
    text = runner.invoke(app, ["memory", "stats", *base(uri)])
    assert "4 memories (0 stale), 384 dims" in text.output


def test_purge_stale_removes_other_models(runner: CliRunner, template: Path, tmp_path: Path) -> None:
    uri = tmp_path / "m.lance"
    imported(template, uri)
    store = open_memory_store(str(uri), dimensions=384, table_name=memory_table_name(384))
    old = LearningMemoryRecord.model_validate(
        {
            **RECORDS[0],
            "findingId": 99,
            "embeddingModel": "old-model",
            "embeddingDim": 384,
            "owner": "acme",
            "sourceRepo": "acme/api",
        }
    )
    vec = LocalEmbeddingProvider().generate("x", "document")
    assert vec is not None
    store.write_memory(old, vec)
    result = runner.invoke(app, ["memory", "purge-stale", *base(uri)])
    assert result.exit_code == 0
    assert "Marked 1 stale" in result.output and "purged 1 stale memories" in result.output
    assert open_memory_store(str(uri), dimensions=384, table_name=memory_table_name(384)).count() == 4


def test_retire_removes_one_memory(
    runner: CliRunner, template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no knowledge DB at the default path: the retirement is only noted
    monkeypatch.delenv("KNOWLEDGE_DB_PATH", raising=False)
    uri = tmp_path / "m.lance"
    imported(template, uri)
    result = runner.invoke(app, ["memory", "retire", "--repo", "acme/api", "--finding", "2", *base(uri)])
    assert result.exit_code == 0 and "Retired 1" in result.output
    store = open_memory_store(str(uri), dimensions=384, table_name=memory_table_name(384))
    assert store.count("acme/api") == 2
    probe = np.asarray(LocalEmbeddingProvider().generate("SQL injection in raw query builder", "query"))
    assert 2 not in {h.memory_id for h in store.retrieve_memories(probe, "acme/api", 5)}
    assert "the retirement is not recorded" in result.output
    missing = runner.invoke(app, ["memory", "retire", "--repo", "acme/api", "--finding", "2", *base(uri)])
    assert missing.exit_code == 1 and "no memory for finding 2" in missing.output


def test_retire_is_recorded_in_the_governance_log(runner: CliRunner, template: Path, tmp_path: Path) -> None:
    from kodiai.storage.knowledge import KnowledgeStore

    uri = tmp_path / "m.lance"
    imported(template, uri)
    db = tmp_path / "knowledge.db"
    KnowledgeStore(db).close()
    args = [
        "memory",
        "retire",
        "--repo",
        "acme/api",
        "--finding",
        "2",
        "--actor",
        "ops",
        "--knowledge-db",
        str(db),
    ]
    result = runner.invoke(app, [*args, *base(uri)])
    assert result.exit_code == 0, result.output
    store = KnowledgeStore(db)
    try:
        [entry] = store.list_memory_governance("acme/api")
        assert (entry.action, entry.actor, entry.finding_id, entry.removed) == ("forget", "cli:ops", 2, 1)
        assert store.retired_findings("acme/api") == {2}
    finally:
        store.close()
