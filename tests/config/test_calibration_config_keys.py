"""`knowledge.retrieval.calibration.headLexicalBand|headLexicalWeight|headRecencyMargin`: optional keys
(unset = the embedder's profile), validated like their siblings, known to the unknown-key advisories and
to the JSON Schema; the original's parsing of every other key is unchanged (the parity vectors)."""

from __future__ import annotations

import jsonschema
import pytest

from kodiai.compat.js_yaml import load_yaml
from kodiai.config import RepoConfig, parse_repo_config
from kodiai.config.schema import repo_config_json_schema
from kodiai.config.unknown_keys import unknown_keys

NEW_KEYS = {"headLexicalBand": 0.4, "headLexicalWeight": 0.25, "headRecencyMargin": 0.2}


def calibration_yaml(**keys: object) -> str:
    body = "".join(f"      {k}: {v}\n" for k, v in keys.items())
    return f"knowledge:\n  retrieval:\n    calibration:\n{body}"


def test_the_new_keys_parse_under_their_camel_case_names() -> None:
    parsed = parse_repo_config(calibration_yaml(**NEW_KEYS))
    assert parsed.warnings == [] and parsed.advisories == []
    calibration = parsed.config.knowledge.retrieval.calibration
    assert calibration is not None
    assert (
        calibration.head_lexical_band,
        calibration.head_lexical_weight,
        calibration.head_recency_margin,
    ) == (
        0.4,
        0.25,
        0.2,
    )
    dumped = parsed.config.to_yaml_dict()["knowledge"]["retrieval"]["calibration"]
    assert dumped == NEW_KEYS


def test_unset_they_stay_out_of_the_parsed_config() -> None:
    config = parse_repo_config(calibration_yaml(headBand=0.4)).config
    assert config.to_yaml_dict()["knowledge"]["retrieval"]["calibration"] == {"headBand": 0.4}
    assert "calibration" not in RepoConfig().to_yaml_dict()["knowledge"]["retrieval"]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("headLexicalWeight", 1.5, "Too big: expected number to be <=1"),
        ("headLexicalWeight", -0.1, "Too small: expected number to be >=0"),
        ("headLexicalBand", 11, "Too big: expected number to be <=10"),
        ("headRecencyMargin", -1, "Too small: expected number to be >=0"),
        ("headRecencyMargin", '"0.1"', "Invalid input: expected number, received string"),
        ("headLexicalBand", "null", "Invalid input: expected number, received null"),
    ],
)
def test_invalid_values_reset_the_section_like_their_siblings(key: str, value: object, message: str) -> None:
    parsed = parse_repo_config(calibration_yaml(**{key: value}) + "  sharing:\n    enabled: true\n")
    assert parsed.config.knowledge.retrieval.calibration is None
    assert parsed.config.knowledge.sharing.enabled is False  # the whole section falls back
    [warning] = parsed.warnings
    assert warning.section == "knowledge"
    assert warning.issues == [f"retrieval.calibration.{key}: {message}"]


def test_the_unknown_key_advisory_knows_them_and_suggests_them() -> None:
    assert unknown_keys(load_yaml(calibration_yaml(**NEW_KEYS))) == []
    [typo] = unknown_keys(load_yaml(calibration_yaml(headLexicalBnd=0.3)))
    assert typo.path == "knowledge.retrieval.calibration.headLexicalBnd"
    assert typo.suggestion == "knowledge.retrieval.calibration.headLexicalBand"


def test_the_schema_describes_them_and_flags_bad_values() -> None:
    schema = repo_config_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(load_yaml(calibration_yaml(**NEW_KEYS))))
    assert list(validator.iter_errors(load_yaml(calibration_yaml(headLexicalWeight=2))))
    assert list(validator.iter_errors(load_yaml(calibration_yaml(headRecencyMargn=0.1))))
    text = str(schema)
    for key in NEW_KEYS:
        assert f"'{key}'" in text
    assert "pool-normalised" in text  # headBand / headMinRelativeGap describe the normalised score
