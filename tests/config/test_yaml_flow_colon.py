"""A plain scalar that starts with ``:`` inside a flow mapping (``{model: :0}``) is a value, as YAML 1.2 and
js-yaml read it; ruamel's own dumper writes such documents, and its scanner read the ``:`` as a second value
indicator once the parser had taken the previous token (found by tests/config/test_config_fuzz.py)."""

from __future__ import annotations

import pytest

from kodiai.compat.js_yaml import load_yaml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model: {model: :0}\n", {"model": {"model": ":0"}}),
        ("a:\n- {b: :y, c: 1}\n", {"a": [{"b": ":y", "c": 1}]}),
        ('{"a":1, b: c:d}\n', {"a": 1, "b": "c:d"}),
    ],
)
def test_colon_led_plain_scalar_in_a_flow_mapping(text: str, expected: object) -> None:
    assert load_yaml(text) == expected
