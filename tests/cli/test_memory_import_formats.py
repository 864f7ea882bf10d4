"""`kodiai memory import` (issue 17): each invalid line is reported with its line number and the fields at
fault, nothing is written then; the labelled-corpus format of the eval sets imports as accepted memories,
and a second import of the same corpus skips what is there. Real LanceDB store, real local embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.memory_import import ImportLineError, corpus_finding_id, parse_import_line
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.setup import memory_table_name

CORPUS = [
    {
        "id": "core-2ea9867398",
        "repo": "vuejs/core",
        "owner": "vuejs",
        "finding_text": "TransformAssetUrls.base should not affect known module requests",
        "file_path": "packages/compiler-sfc/src/templateTransformAssetUrl.ts",
        "language": "TypeScript",
        "severity": None,
        "category": "correctness",
        "created_at": "2021-01-04T15:10:51-05:00",
        "source": {"commit": "2ea9867398", "pr": None},
    },
    {
        "id": "core-4d9b0a1",
        "repo": "vuejs/core",
        "owner": "vuejs",
        "finding_text": "v-model on custom elements loses its modifiers",
        "file_path": "packages/runtime-dom/src/directives/vModel.ts",
        "severity": "major",
        "category": "correctness",
        "created_at": "2021-02-01T10:00:00Z",
    },
]


def test_record_errors_name_every_field() -> None:
    with pytest.raises(ImportLineError) as caught:
        parse_import_line('{"repo": "a/b", "findingId": "x"}', embedding_model="m", embedding_dim=384)
    message = str(caught.value)
    for field in (
        "'findingId': Input should be a valid integer",
        "'findingText': Field required",
        "'outcome'",
    ):
        assert field in message


def test_corpus_lines_become_accepted_memories_with_stable_ids() -> None:
    record, text = parse_import_line(json.dumps(CORPUS[0]), embedding_model="m", embedding_dim=384)
    assert (record.repo, record.outcome, record.finding_id) == (
        "vuejs/core",
        "accepted",
        corpus_finding_id("core-2ea9867398"),
    )
    assert record.finding_id is not None and 0 < record.finding_id < 2**63
    assert (
        text
        == "[correctness]\nTransformAssetUrls.base should not affect known module requests\nFile: packages/compiler-sfc/src/templateTransformAssetUrl.ts"
    )
    assert record.created_at == "2021-01-04T15:10:51-05:00"


def test_cli_reports_each_bad_line_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "m.jsonl"
    data.write_text(
        json.dumps(CORPUS[0]) + "\n" + '{"repo": "not a repo", "findingId": 1}\n' + "[1, 2]\n",
        encoding="utf-8",
    )
    uri = tmp_path / "store.lance"
    result = CliRunner().invoke(
        app, ["memory", "import", str(data), "--uri", str(uri), "--provider", "local"]
    )
    assert result.exit_code == 1
    assert "line 2: 'reviewId': Field required" in result.output
    assert "line 3: expected a JSON object" in result.output
    assert "2 invalid line(s)" in result.output and "nothing was imported" in result.output
    assert not uri.exists()


def test_cli_imports_the_corpus_format_once(tmp_path: Path) -> None:
    data = tmp_path / "corpus.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in CORPUS) + "\n", encoding="utf-8")
    uri = tmp_path / "store.lance"
    args = ["memory", "import", str(data), "--uri", str(uri), "--provider", "local"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "Imported 2 memories (0 duplicates skipped" in first.output
    again = CliRunner().invoke(app, args)
    assert "Imported 0 memories (2 duplicates skipped" in again.output
    store = open_memory_store(str(uri), dimensions=384, table_name=memory_table_name(384))
    assert {r.finding_text for r in store.list_records("vuejs/core")} == {c["finding_text"] for c in CORPUS}


def test_help_documents_both_formats() -> None:
    result = CliRunner().invoke(app, ["memory", "import", "--help"])
    assert result.exit_code == 0
    assert "findingId" in result.output and "labelled-corpus" in result.output
