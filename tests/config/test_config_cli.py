"""`kodiai config validate|schema` through typer's CliRunner, the JSON Schema, and `.kodiai.yml.example`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.config import ConfigModel, RepoConfig, load_repo_config, parse_repo_config
from kodiai.config.schema import repo_config_json_schema

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / ".kodiai.yml.example"

runner = CliRunner()


def _yaml_load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def test_validate_directory_prints_resolved_yaml_and_warning_table(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text("model: my-model\nreview:\n  maxComments: 50\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 4, result.output  # a section reset to its defaults
    assert "model: my-model" in result.stdout
    assert "maxComments: 7" in result.stdout
    assert "review" in result.stdout and "Too big: expected number to be <=25" in result.stdout
    assert "1 section(s) invalid" in result.stdout


def test_validate_file_json_output(tmp_path: Path) -> None:
    cfg = tmp_path / "custom.yml"
    cfg.write_text("maxTurns: 999\nwrite:\n  enabled: true\n")
    result = runner.invoke(app, ["config", "validate", str(cfg), "--json"])
    assert result.exit_code == 4
    payload = json.loads(result.stdout)
    assert payload["found"] is True and payload["exit_status"] == 4 and payload["failed_closed"] == []
    assert payload["config"]["maxTurns"] == 25 and payload["config"]["write"]["enabled"] is True
    assert payload["warnings"] == [
        {"section": "maxTurns", "issues": [": Too big: expected number to be <=100"], "failed_closed": []}
    ]


def test_validate_clean_file_says_ok(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text("review:\n  mode: enhanced\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 0 and "OK: no warnings." in result.stdout
    assert "mode: enhanced" in result.stdout


def test_validate_directory_without_file_reports_defaults(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "validate", str(tmp_path), "--json"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["found"] is False and payload["warnings"] == []
    assert payload["config"] == RepoConfig().to_yaml_dict()


def test_validate_syntax_error_exits_1_and_names_the_line(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text("review:\n  enabled: [oops\n")
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "YAML parse error" in result.stderr and "line 3" in result.stderr
    result = runner.invoke(app, ["config", "validate", str(tmp_path), "--json"])
    assert result.exit_code == 1 and "YAML parse error" in json.loads(result.stdout)["error"]


def test_validate_missing_path_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "validate", str(tmp_path / "nope.yml")])
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_schema_command_prints_draft_2020_12_schema(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    assert props["maxTurns"] == {
        "default": 25,
        "description": "Agent max turns.",
        "maximum": 100,
        "minimum": 1,
        "type": "number",
    }
    assert "largePR" in props and "languageRules" in props
    out = tmp_path / "schema.json"
    assert runner.invoke(app, ["config", "schema", "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text()) == schema


def test_schema_validates_example_and_rejects_out_of_bounds_values() -> None:
    validator = jsonschema.Draft202012Validator(repo_config_json_schema())
    example = _yaml_load(EXAMPLE.read_text())
    assert list(validator.iter_errors(example)) == []
    bad = {"review": {"maxComments": 26}}
    errors = list(validator.iter_errors(bad))
    assert len(errors) == 1 and "26 is greater than the maximum of 25" in errors[0].message
    assert list(validator.iter_errors({"review": {"mode": "turbo"}}))
    assert list(validator.iter_errors({"languageRules": {"severityFloors": [{"pattern": "x"}]}}))
    assert list(validator.iter_errors({"review": {"suppressions": [""]}}))
    assert not list(validator.iter_errors({"review": {"suppressions": ["x", {"pattern": "y"}]}}))


@pytest.mark.parametrize(
    "doc",
    [
        {"maxTurns": 0},
        {"knowledge": {"retrieval": {"distanceThreshold": 2.5}}},
        {"telemetry": {"costWarningUsd": -1}},
        {"review": {"severity": {"minLevel": "MAJOR"}}},
        {"review": {"pathInstructions": [{"path": "x"}]}},
        {"feedback": {"autoSuppress": {"thresholds": {"minDistinctPRs": 51}}}},
    ],
)
def test_schema_and_loader_agree_on_invalid_documents(doc: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(repo_config_json_schema())
    assert list(validator.iter_errors(doc))
    assert parse_repo_config(json.dumps(doc)).warnings


def test_example_file_parses_with_zero_warnings_and_equals_defaults() -> None:
    result = load_repo_config_from(EXAMPLE)
    assert result.warnings == []
    assert result.config == RepoConfig()


def load_repo_config_from(path: Path) -> Any:
    return parse_repo_config(path.read_text(encoding="utf-8"))


def _aliases(model: type[ConfigModel], out: set[str]) -> set[str]:
    for name, info in model.model_fields.items():
        out.add(info.alias or name)
        for arg in _model_types(info.annotation):
            _aliases(arg, out)
    return out


def _model_types(annotation: Any) -> list[type[ConfigModel]]:
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return [annotation]
    found: list[type[ConfigModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_model_types(arg))
    for meta in getattr(annotation, "__metadata__", ()) or ():
        found.extend(_model_types(meta))
    return found


def test_example_file_documents_every_key() -> None:
    text = EXAMPLE.read_text()
    keys = _aliases(RepoConfig, set())
    assert len(keys) > 90
    missing = sorted(k for k in keys if not re.search(rf"(^|[\s\-{{]){re.escape(k)}:", text, re.M))
    assert missing == []


def test_example_is_also_what_the_loader_reads_from_a_workspace(tmp_path: Path) -> None:
    (tmp_path / ".kodiai.yml").write_text(EXAMPLE.read_text())
    assert load_repo_config(tmp_path).config == RepoConfig()


def _paths(model: type[ConfigModel], prefix: str, out: list[str]) -> list[str]:
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        nested = _model_types(info.annotation)
        is_list = "list[" in str(info.annotation)
        if nested and not is_list:
            _paths(nested[0], key + ".", out)
            continue
        out.append(key)
        for sub in nested:
            _paths(sub, key + "[].", out)
    return out


def test_docs_key_table_lists_every_key_path() -> None:
    text = (REPO_ROOT / "docs" / "configuration.md").read_text()
    paths = _paths(RepoConfig, "", [])
    assert "review.suppressions[].pattern" in paths and "largePR.riskWeights.pathRisk" in paths
    assert [p for p in paths if f"| `{p}` |" not in text] == []


def test_validate_shows_advisories_for_valid_but_weak_settings(tmp_path: Path) -> None:
    """ambiguitySignal with topK <= 3 is valid (no section warning) but is flagged at load (issue 3)."""
    (tmp_path / ".kodiai.yml").write_text(
        "knowledge:\n  retrieval:\n    topK: 2\n    ambiguitySignal: true\n"
    )
    result = runner.invoke(app, ["config", "validate", str(tmp_path)])
    assert result.exit_code == 0
    assert "Advisory:" in result.output and "ambiguitySignal" in result.output
    as_json = json.loads(runner.invoke(app, ["config", "validate", str(tmp_path), "--json"]).stdout)
    assert as_json["warnings"] == [] and len(as_json["advisories"]) == 1
