"""`kodiai memory search` runs the lexical channel as a review does and says which channels answered
(real LanceDB directory, the real local MiniLM, typer's CliRunner)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app

pytestmark = pytest.mark.slow  # loads the local embedding model

RECORDS = [
    ("Possible null dereference of user", "src/user.ts"),
    ("SQL injection in raw query builder", "src/db.ts"),
    ("Unused import of lodash", "src/util.ts"),
    ("Race when closing the pool", "lib/pool_reuse.go"),
]
QUERY = "Fix null dereference\nLanguages: Go\nlib/pool_reuse.go"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real import (no full-text index yet: the first search builds it), copied by each test."""
    root = tmp_path_factory.mktemp("memory-lexical")
    lines = [
        {
            "repo": "acme/api",
            "findingId": i,
            "reviewId": 1,
            "findingText": text,
            "severity": "major",
            "category": "correctness",
            "filePath": path,
            "outcome": "accepted",
        }
        for i, (text, path) in enumerate(RECORDS, start=1)
    ]
    data = root / "memories.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    uri = root / "m.lance"
    result = CliRunner().invoke(
        app, ["memory", "import", str(data), "--uri", str(uri), "--provider", "local"]
    )
    assert result.exit_code == 0, result.output
    return uri


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Path:
    uri = tmp_path / "m.lance"
    shutil.copytree(template, uri)
    return uri


def search(uri: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        app,
        ["memory", "search", "--repo", "acme/api", QUERY, "--uri", str(uri), "--provider", "local", *extra],
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_search_runs_the_lexical_channel_and_names_it(store: Path) -> None:
    out = search(store)
    assert "Channels: vector+lexical" in out and "BM25" in out
    assert "(method headgap:" in out
    payload = json.loads(search(store, "--json"))
    assert payload["quality"]["channels"] == "vector+lexical"
    scores = {int(k): v for k, v in payload["lexical"].items()}
    assert max(scores, key=lambda k: scores[k]) == 4  # the memory on the query's file path


def test_no_lexical_and_maxgap_answer_by_vector_alone(store: Path) -> None:
    assert "Channels: vector (the lexical channel is off or the cut does not use it)" in search(
        store, "--no-lexical"
    )
    payload = json.loads(search(store, "--json", "--cut-strategy", "maxgap"))
    assert payload["quality"]["channels"] == "vector" and payload["lexical"] is None


def test_a_broken_full_text_index_is_reported_and_the_vector_channel_answers(store: Path) -> None:
    """A regular file where LanceDB keeps its indexes: building the full-text index fails for real."""
    [table] = store.glob("*.lance")
    assert not (table / "_indices").exists()
    (table / "_indices").write_text("not a directory")
    out = search(store)
    assert "Channels: vector (the lexical channel failed" in out
    assert "4. Final results" in out and "Final results (0)" not in out
