"""`kodiai config validate` advisories (issue 17): unknown keys with the closest known key, a non-mapping
document is an error, warnings before the resolved config, ``--strict``; and the JSON Schema marks unknown
keys so editors flag them. Parsing itself is unchanged: the typo keeps its default."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.compat.js_yaml import load_yaml
from kodiai.config import parse_repo_config
from kodiai.config.schema import repo_config_json_schema
from kodiai.config.unknown_keys import unknown_keys

runner = CliRunner()
TYPOS = "reveiw:\n  enabled: false\nreview:\n  maxComment: 10\nmention:\n  foo: 1\n"


def test_unknown_keys_name_the_closest_known_key() -> None:
    found = {u.path: u.suggestion for u in unknown_keys(load_yaml(TYPOS))}
    assert found == {"reveiw": "review", "review.maxComment": "review.maxComments", "mention.foo": None}


def test_unknown_keys_inside_lists_of_settings() -> None:
    doc = load_yaml("review:\n  pathInstructions:\n    - path: src/**\n      instructionz: be strict\n")
    [key] = unknown_keys(doc)
    assert key.path == "review.pathInstructions[0].instructionz"
    assert key.suggestion == "review.pathInstructions[0].instructions"


def test_a_valid_file_has_no_unknown_keys() -> None:
    doc = load_yaml(
        "review:\n  maxComments: 5\n  severity:\n    minLevel: major\nknowledge:\n  retrieval:\n    topK: 3\n"
    )
    assert unknown_keys(doc) == []


def test_typos_warn_first_and_parsing_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text(TYPOS)
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "unknown key `reveiw`: did you mean `review`?" in out
    assert "unknown key `review.maxComment`: did you mean `review.maxComments`?" in out
    assert "unknown key `mention.foo`: no setting reads it" in out
    assert out.index("unknown key `reveiw`") < out.index("maxComments: 7")  # warnings before the config
    assert "OK: no warnings" not in out and "3 warning(s)" in out
    parsed = parse_repo_config(TYPOS).config
    assert parsed.review.max_comments == 7 and parsed.review.enabled is True


def test_strict_exits_non_zero_on_any_warning(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text(TYPOS)
    assert runner.invoke(app, ["config", "validate", "--strict", str(tmp_path)]).exit_code == 1
    (tmp_path / ".kodiai.yml").write_text("review:\n  maxComments: 5\n")
    clean = runner.invoke(app, ["config", "validate", "--strict", str(tmp_path)])
    assert clean.exit_code == 0 and "OK: no warnings." in clean.stdout


def test_a_list_document_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text("- review\n- mention\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "must be a mapping of settings" in result.stderr and "not a list" in result.stderr
    assert result.stderr.startswith("error: ") and "[red]" not in result.stderr


def test_errors_with_brackets_print_as_written(tmp_path: Path) -> None:
    """YAML errors quote the offending text, brackets included: printed as is, never read as markup."""
    (tmp_path / ".kodiai.yml").write_text("review: [unclosed\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "[red]" not in result.stderr
    missing = runner.invoke(app, ["config", "validate", str(tmp_path / "[x]" / ".kodiai.yml")])
    assert missing.exit_code == 2 and "[x]" in missing.stderr


def test_json_lists_unknown_keys(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text(TYPOS)
    payload = json.loads(runner.invoke(app, ["config", "validate", "--json", str(tmp_path)]).stdout)
    assert [u["path"] for u in payload["unknown_keys"]] == ["reveiw", "review.maxComment", "mention.foo"]


def test_schema_marks_unknown_keys_as_errors() -> None:
    schema = repo_config_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = [e.message for e in validator.iter_errors(load_yaml(TYPOS))]
    assert any("reveiw" in m for m in errors) and any("maxComment" in m for m in errors)
    assert not list(validator.iter_errors(load_yaml("review:\n  maxComments: 5\n")))
