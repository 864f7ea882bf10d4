"""Plain-scalar resolution with js-yaml 4's default schema (YAML 1.2 core + timestamp + merge).

The original parses `.kodiai.yml` with js-yaml 4, whose implicit typing differs from both YAML 1.1
(PyYAML: `yes`/`on` are booleans) and ruamel.yaml's own 1.2 resolver in small ways that change what a
config means: `1_000` is an integer, `017` is decimal 17, `-.5` is a string, `.NaN` is a float and
`.Nan` a string. This module reproduces those rules exactly, as pure functions on the scalar text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from kodiai.compat.js import js_number_to_string

_NULLS = frozenset({"~", "null", "Null", "NULL", ""})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})

_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))$"
)
_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_DATETIME = re.compile(
    r"^([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9]{2}))?))?$"
)
_DEC = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")
_BIN = frozenset("01")
#: JavaScript numbers are doubles: integers above 2**53 lose precision, so they are stored as floats.
_SAFE_INT = 2**53


@dataclass(frozen=True)
class YamlTimestamp:
    """A YAML timestamp (`2024-01-01`). js-yaml builds a JavaScript `Date`, which fails every string,
    number and boolean field; the text is kept so the value can still be shown."""

    text: str

    def __str__(self) -> str:
        return self.text


def _digits_ok(body: str, allowed: frozenset[str]) -> bool:
    has_digits = False
    for ch in body:
        if ch == "_":
            continue
        if ch not in allowed:
            return False
        has_digits = True
    return has_digits and not body.endswith("_")


def is_js_int(text: str) -> bool:
    """js-yaml 4 `resolveYamlInteger`: decimal, `0b`, `0x`, `0o`, optional sign, `_` separators."""
    if not text:
        return False
    i = 0
    if text[0] in "+-":
        i = 1
    if i >= len(text):
        return False
    if text[i] == "0":
        if i + 1 == len(text):
            return True
        prefix = text[i + 1]
        body = text[i + 2 :]
        if prefix == "b":
            return _digits_ok(body, _BIN)
        if prefix == "x":
            return _digits_ok(body, _HEX)
        if prefix == "o":
            return _digits_ok(body, _OCT)
        i += 1
    if text[i] == "_":
        return False
    return _digits_ok(text[i:], _DEC)


def _to_js_number(value: int) -> int | float:
    """An integer as JavaScript would hold it: exact up to 2**53, a (possibly infinite) double beyond."""
    if -_SAFE_INT <= value <= _SAFE_INT:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def construct_js_int(text: str) -> int | float:
    """js-yaml 4 `constructYamlInteger` (underscores removed, sign applied, `-0` is 0)."""
    value = text.replace("_", "")
    sign = 1
    if value[0] in "+-":
        sign = -1 if value[0] == "-" else 1
        value = value[1:]
    if value == "0":
        return 0
    if value[0] == "0" and len(value) > 1 and value[1] in "bxo":
        base = {"b": 2, "x": 16, "o": 8}[value[1]]
        return _to_js_number(sign * int(value[2:], base))
    digits = value.lstrip("0") or "0"
    if len(digits) > 400:  # beyond any double: Infinity, as parseInt would give
        return math.inf if sign > 0 else -math.inf
    return _to_js_number(sign * int(digits))


def construct_js_float(text: str) -> float:
    """js-yaml 4 `constructYamlFloat`: `.inf`, `.nan`, else `parseFloat` without underscores."""
    value = text.replace("_", "").lower()
    sign = -1.0 if value[0] == "-" else 1.0
    if value[0] in "+-":
        value = value[1:]
    if value == ".inf":
        return sign * math.inf
    if value == ".nan":
        return math.nan
    return sign * float(value)


def resolve_plain_scalar(text: str) -> Any:
    """The value js-yaml gives an untagged plain scalar."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if is_js_int(text):
        return construct_js_int(text)
    if _FLOAT.match(text) and not text.endswith("_"):
        return construct_js_float(text)
    if _DATE.match(text) or _DATETIME.match(text):
        return YamlTimestamp(text)
    return text


def is_merge_key(text: str) -> bool:
    """js-yaml resolves the plain scalar `<<` to the merge type (only meaningful as a mapping key)."""
    return text == "<<"


def js_string(value: Any) -> str:
    """`String(value)` for the values a YAML document can hold (used to turn mapping keys into strings)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number_to_string(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, bytes):
        return ",".join(str(b) for b in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
