"""`kodiai memory import` (issue 17): each invalid line is reported with its line number and the fields at
fault, nothing is written then; the labelled-corpus format of the eval sets imports as accepted memories,
and a second import of the same corpus skips what is there. Real LanceDB store, real local embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog
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


RECORD = {
    "repo": "o/r",
    "findingId": 1,
    "reviewId": 1,
    "findingText": "SQL built from user input",
    "severity": "major",
    "category": "security",
    "filePath": "app/db.py",
    "outcome": "accepted",
}


def test_enumerated_fields_name_the_closest_allowed_value() -> None:
    bad = {**RECORD, "severity": "high", "category": "secrity", "outcome": "acepted"}
    with pytest.raises(ImportLineError) as caught:
        parse_import_line(json.dumps(bad), embedding_model="m", embedding_dim=384)
    assert str(caught.value) == (
        "'severity': \"high\" is not one of critical, major, medium, minor, unknown; did you mean 'major'?; "
        "'category': \"secrity\" is not one of security, correctness, performance, style, documentation; "
        "did you mean 'security'?; "
        "'outcome': \"acepted\" is not one of accepted, suppressed, thumbs_up, thumbs_down; "
        "did you mean 'accepted'?"
    )


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("severity", "Critical", "critical"),
        ("category", "bug", "correctness"),
        ("outcome", "thumbs-down", "thumbs_down"),
    ],
)
def test_case_and_synonyms_are_refused_with_a_hint(field: str, value: str, hint: str) -> None:
    with pytest.raises(ImportLineError, match=f"did you mean '{hint}'"):
        parse_import_line(json.dumps({**RECORD, field: value}), embedding_model="m", embedding_dim=384)


def test_a_corpus_line_with_an_unknown_category_is_refused() -> None:
    with pytest.raises(ImportLineError, match=r"'category': \"perfomance\" .* did you mean 'performance'"):
        parse_import_line(
            json.dumps({**CORPUS[0], "category": "perfomance"}), embedding_model="m", embedding_dim=384
        )


def test_an_exported_unknown_severity_imports_again() -> None:
    record, _ = parse_import_line(
        json.dumps({**RECORD, "severity": "unknown"}), embedding_model="m", embedding_dim=384
    )
    assert record.severity == "unknown"


def test_cli_lists_every_enum_error_by_line_and_imports_nothing(tmp_path: Path) -> None:
    lines = [RECORD, {**RECORD, "findingId": 2, "severity": "high"}]
    lines += [{**RECORD, "findingId": n, "outcome": "acepted"} for n in range(3, 28)]
    data = tmp_path / "m.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    uri = tmp_path / "store.lance"
    result = CliRunner().invoke(
        app, ["memory", "import", str(data), "--uri", str(uri), "--provider", "local"]
    )
    assert result.exit_code == 1
    assert "line 2: 'severity': \"high\" is not one of" in result.output
    assert "line 27: 'outcome': \"acepted\"" in result.output  # all 26 errors, not the first 20
    assert "26 invalid line(s)" in result.output and "nothing was imported" in result.output
    assert not uri.exists()


def test_help_shows_the_bracketed_default_text() -> None:
    result = CliRunner().invoke(app, ["memory", "import", "--help"], env={"COLUMNS": "200"})
    assert '"[severity] [category]"' in result.output and 'default: " "' not in result.output


def test_a_re_import_prints_no_debug_lines(tmp_path: Path) -> None:
    """Each duplicate used to print "[debug] Duplicate memory write skipped" at the default log level.
    The re-import starts from structlog's defaults, as a fresh `kodiai` process does (another test in this
    process may have configured logging); the configuration is put back afterwards."""
    data = tmp_path / "m.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    args = ["memory", "import", str(data), "--uri", str(tmp_path / "store.lance"), "--provider", "local"]
    assert CliRunner().invoke(app, args).exit_code == 0
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    structlog.reset_defaults()
    try:
        again = CliRunner().invoke(app, args, env={"LOG_LEVEL": None})
        left_configured = structlog.is_configured()
    finally:
        if was_configured:
            structlog.configure(**saved)
    assert again.exit_code == 0, again.output
    assert "Imported 0 memories (1 duplicates skipped" in again.output
    assert "Duplicate memory write skipped" not in again.output and "debug" not in again.output
    assert not left_configured  # the command put structlog's defaults back
