"""P5.1 loading rules: js-yaml 4 typing, syntax errors, and hostile input (bombs, depth, tags, size)."""

from __future__ import annotations

import math
import time

import pytest

from kodiai.compat.js_yaml import MAX_DEPTH, MAX_DOCUMENT_CHARS, load_yaml
from kodiai.compat.yaml_scalars import YamlTimestamp, resolve_plain_scalar
from kodiai.config import RepoConfigError, parse_repo_config


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", "yes"),
        ("on", "on"),
        ("off", "off"),
        ("True", True),
        ("FALSE", False),
        ("tRue", "tRue"),
        ("~", None),
        ("Null", None),
        ("", None),
        ("0o17", 15),
        ("017", 17),
        ("0x1F", 31),
        ("-0x10", -16),
        ("0b101", 5),
        ("1_000", 1000),
        ("_1", "_1"),
        ("1_", "1_"),
        ("+5", 5),
        ("-0", 0),
        ("1e1", 10.0),
        (".5", 0.5),
        ("-.5", "-.5"),
        ("1.", 1.0),
        ("0X10", "0X10"),
        ("0o", "0o"),
        ("9007199254740993", 9007199254740992.0),
    ],
)
def test_js_yaml_plain_scalar_typing(text: str, expected: object) -> None:
    """P5.1: YAML 1.2 core schema as js-yaml 4 reads it (yes/on are strings, `_` separators, 0o octal)."""
    value = resolve_plain_scalar(text)
    assert value == expected and type(value) is type(expected)


def test_special_floats_and_timestamps() -> None:
    assert math.isinf(resolve_plain_scalar(".inf")) and resolve_plain_scalar("-.Inf") < 0
    assert math.isnan(resolve_plain_scalar(".NaN"))
    assert resolve_plain_scalar(".Nan") == ".Nan"
    assert resolve_plain_scalar("2024-01-01") == YamlTimestamp("2024-01-01")
    assert isinstance(resolve_plain_scalar("2024-1-2 10:00:00 +01:00"), YamlTimestamp)


def test_quoted_scalars_stay_strings() -> None:
    assert load_yaml("a: '10'\nb: \"true\"\nc: |\n  12\n") == {"a": "10", "b": "true", "c": "12\n"}


def test_5_1_unquoted_date_fails_string_field_and_quoted_date_passes() -> None:
    r = parse_repo_config("model: 2024-01-01\n")
    assert [w.section for w in r.warnings] == ["model"]
    assert r.warnings[0].issues == [": Invalid input: expected string, received Date"]
    assert parse_repo_config("model: '2024-01-01'\n").config.model == "2024-01-01"


def test_5_1_nan_and_infinity_rejected_no_integer_check() -> None:
    r = parse_repo_config("maxTurns: .nan\ntimeoutSeconds: .inf\nreview:\n  maxComments: 7.5\n")
    assert [w.section for w in r.warnings] == ["maxTurns", "timeoutSeconds"]
    assert r.warnings[0].issues == [": Invalid input: expected number, received NaN"]
    # zod 4.3.6 renders Infinity as "received number" (colinhacks/zod#5697).
    assert r.warnings[1].issues == [": Invalid input: expected number, received number"]
    assert r.config.review.max_comments == 7.5


def test_5_1_no_coercion_bool_is_not_a_number_and_string_is_not_a_number() -> None:
    r = parse_repo_config("maxTurns: true\nreview:\n  maxComments: '10'\n")
    assert r.warnings[0].issues == [": Invalid input: expected number, received boolean"]
    assert r.warnings[1].issues == ["maxComments: Invalid input: expected number, received string"]


def test_5_1_enums_are_case_sensitive() -> None:
    r = parse_repo_config("review:\n  severity:\n    minLevel: MAJOR\n")
    assert r.warnings[0].issues == [
        'severity.minLevel: Invalid option: expected one of "critical"|"major"|"medium"|"minor"'
    ]


def test_5_1_empty_string_model_accepted_and_empty_section_is_null() -> None:
    assert parse_repo_config("model: ''\n").config.model == ""
    r = parse_repo_config("review:\n")
    assert r.warnings[0].section == "review"
    assert r.warnings[0].issues == [": Invalid input: expected object, received null"]


def test_5_1_spec_issue_examples() -> None:
    """P5.1 #4: the four issue strings the spec quotes."""
    r = parse_repo_config(
        "maxTurns: abc\nreview:\n  maxComments: 99\n  suppressions: ['']\n  profile: loose\n"
    )
    assert r.warnings[0].issues == [": Invalid input: expected number, received string"]
    assert r.warnings[1].issues == [
        "maxComments: Too big: expected number to be <=25",
        "suppressions.0: Too small: expected string to have >=1 characters",
        'profile: Invalid option: expected one of "strict"|"balanced"|"minimal"',
    ]


def test_union_issues_follow_zods_rule() -> None:
    """A union branch with a type error collapses to "Invalid input"; a branch with only checks keeps them."""
    r = parse_repo_config(
        "review:\n  suppressions: [5, {pattern: ''}, {pattern: 5}]\n"
        "  pathInstructions:\n    - path: [1]\n      instructions: x\n"
    )
    assert r.warnings[0].issues == [
        "suppressions.0: Invalid input",
        "suppressions.1.pattern: Too small: expected string to have >=1 characters",
        "suppressions.2: Invalid input",
        "pathInstructions.0.path: Invalid input",
    ]


def test_5_1_top_level_array_is_an_object_quirk() -> None:
    r = parse_repo_config("- model: x\n")
    assert r.warnings == [] and r.config.model == "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize("text", ["", "# only a comment\n", "null\n", "~\n", "42\n", "'text'\n", "true\n"])
def test_5_1_non_object_documents_give_root_warning(text: str) -> None:
    r = parse_repo_config(text)
    assert [(w.section, w.issues) for w in r.warnings] == [
        ("root", ["Config is not an object, using all defaults"])
    ]


def test_date_as_section_is_an_empty_object_like_zod() -> None:
    r = parse_repo_config("telemetry: 2024-01-01\n")
    assert r.warnings == [] and r.config.telemetry.enabled is True


def test_merge_keys_and_anchors() -> None:
    text = "base: &b {enabled: false, maxComments: 3}\nreview:\n  <<: *b\n  maxComments: 4\n"
    r = parse_repo_config(text)
    assert r.config.review.enabled is False and r.config.review.max_comments == 4


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("model: [unclosed\n", "line 2"),
        ("review:\n  enabled: true\n\tbad: 1\n", "line 3"),
        ("model: a\nmodel: b\n", "duplicated mapping key (line 2"),
        ("a: 1\n---\nb: 2\n", "single document"),
        ("a: !!python/object:os.system x\n", "unknown tag"),
        ("a: !custom x\n", "unknown tag"),
        ("a: !!int abc\n", "cannot resolve"),
        ("a: *nowhere\n", "unidentified alias"),
        ("a: &x [*x]\n", "recursive alias"),
        ("a: \x00\n", "YAML parse error"),
        ("<<: 5\n", "cannot merge mappings"),
    ],
)
def test_5_1_syntax_errors_raise_repo_config_error_naming_the_line(text: str, fragment: str) -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    message = str(info.value)
    assert message.startswith("Invalid .kodiai.yml: YAML parse error: ")
    assert fragment in message


def test_syntax_error_reports_line_and_column_attributes() -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config("review:\n  enabled: true\n  maxComments: [1,\n")
    assert info.value.line == 4


def test_billion_laughs_is_rejected_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    lines.append("review:\n  skipPaths: *a11")
    start = time.perf_counter()
    with pytest.raises(RepoConfigError, match="alias bomb"):
        parse_repo_config("\n".join(lines) + "\n")
    assert time.perf_counter() - start < 5


def test_small_alias_fanout_is_fine() -> None:
    text = "paths: &p ['a/**', 'b/**']\nreview:\n  skipPaths: *p\nwrite:\n  denyPaths: *p\n"
    r = parse_repo_config(text)
    assert r.config.review.skip_paths == ["a/**", "b/**"] == r.config.write.deny_paths


def test_deep_nesting_is_rejected_without_recursion_error() -> None:
    with pytest.raises(RepoConfigError, match="nested more than"):
        parse_repo_config("x: " + "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50) + "\n")
    with pytest.raises(RepoConfigError):
        parse_repo_config("[" * 200_000)


def test_huge_document_is_rejected_before_parsing() -> None:
    with pytest.raises(RepoConfigError, match="larger than"):
        parse_repo_config("a: " + "x" * (MAX_DOCUMENT_CHARS + 1))


def test_non_string_keys_are_stringified_like_javascript() -> None:
    assert load_yaml("1: a\ntrue: b\n~: c\n[x, y]: d\n1.5: e\n") == {
        "1": "a",
        "true": "b",
        "null": "c",
        "x,y": "d",
        "1.5": "e",
    }
    with pytest.raises(RepoConfigError, match="duplicated"):
        parse_repo_config("1: a\n'1': b\n")


def test_explicit_safe_tags_are_honoured() -> None:
    assert load_yaml("a: !!str 10\nb: !!float 1\nc: !!binary aGVsbG8=\nd: !!set {x, y}\n") == {
        "a": "10",
        "b": 1,
        "c": b"hello",
        "d": {"x": None, "y": None},
    }
    assert parse_repo_config("model: !!str 123\n").config.model == "123"


def test_byte_order_mark_is_ignored() -> None:
    assert parse_repo_config("\ufeffmodel: bom\n").config.model == "bom"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model:\tx\n", {"model": "x"}),
        ("model: x\t\n", {"model": "x"}),
        ("model: x\t# comment\n", {"model": "x"}),
        ("a:\n  - \tb\n", {"a": ["b"]}),
        ("a: b\tc\n", {"a": "b\tc"}),
        ("a: b\n\t\nc: d\n", {"a": "b", "c": "d"}),
        ("a: [1,\t2]\n", {"a": [1, 2]}),
    ],
)
def test_tabs_as_inline_white_space_like_js_yaml(text: str, expected: object) -> None:
    """YAML 1.2 / js-yaml accept tabs as separation inside a line (ruamel alone rejects them)."""
    assert load_yaml(text) == expected


@pytest.mark.parametrize("text", ["\tmodel: x\n", "a:\n\t- b\n", "review:\n  enabled: true\n\tbad: 1\n"])
def test_tabs_in_indentation_stay_errors(text: str) -> None:
    with pytest.raises(RepoConfigError, match="YAML parse error"):
        parse_repo_config(text)


def test_bytes_input_and_invalid_utf8_are_decoded_with_replacement() -> None:
    assert parse_repo_config(b"model: caf\xc3\xa9\n").config.model == "café"
    assert parse_repo_config(b"model: bad\xff\n").config.model == "bad\ufffd"


def test_5_1_5_warnings_are_logged_with_section_and_issues() -> None:
    """P5.1 #5: each warning is logged at warn level as "Config section invalid, using defaults"."""
    from structlog.testing import capture_logs

    from kodiai.config import log_config_warnings
    from kodiai.log import get_logger

    result = parse_repo_config("maxTurns: 0\nreview:\n  mode: x\n")
    with capture_logs() as logs:
        log_config_warnings(result, get_logger("kodiai.test"))
    assert [(e["event"], e["log_level"], e["section"]) for e in logs] == [
        ("Config section invalid, using defaults", "warning", "maxTurns"),
        ("Config section invalid, using defaults", "warning", "review"),
    ]
    assert logs[1]["issues"] == ['mode: Invalid option: expected one of "standard"|"enhanced"']


def test_models_built_in_code_reject_ints_beyond_any_double() -> None:
    from pydantic import ValidationError

    from kodiai.config import TelemetryConfig

    with pytest.raises(ValidationError, match="expected number"):
        TelemetryConfig(cost_warning_usd=10**400)
    assert TelemetryConfig(costWarningUsd=2).cost_warning_usd == 2
