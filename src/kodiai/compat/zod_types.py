"""Strict leaf types for the `.kodiai.yml` models, validated the way the original's zod 4 schema is.

`Annotated[float, Js(ge=1, le=100)]`, `Annotated[bool, Js()]`, `Annotated[Severity, Js()]` (a `Literal`)
or `Annotated[str | None, Js(min_length=1)]`: no coercion (`"10"` is not a number, `yes` is not a bool),
bool is not a number, NaN/Infinity are rejected, numbers need not be integers, bounds are inclusive,
enums are case-sensitive. Each failure is a `PydanticCustomError` whose message is zod's English message
("Too big: expected number to be <=25"), so `issues.py` only has to add the path.

`UNDEFINED` stands for JavaScript's `undefined`: required fields default to it and validate their
default, which yields zod's "received undefined" message for a missing key.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from kodiai.compat.js import js_number_to_string
from kodiai.compat.yaml_scalars import YamlTimestamp

INVALID_TYPE = "zod_invalid_type"
INVALID_VALUE = "zod_invalid_value"
INVALID_UNION = "zod_invalid_union"
TOO_SMALL = "zod_too_small"
TOO_BIG = "zod_too_big"
#: Issue kinds after which zod keeps validating (checks); all others abort, which matters for unions.
CONTINUING = frozenset({TOO_SMALL, TOO_BIG})
_JSON_KEY = "kodiai_json_schema"


class _Undefined:
    """JavaScript `undefined`: the value of a key that is absent."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()


def js_type_name(value: Any) -> str:
    """The name zod 4.3's English messages give a received value (`util.parsedType` + its dictionary)."""
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "NaN" if isinstance(value, float) and math.isnan(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, YamlTimestamp):
        return "Date"
    if isinstance(value, bytes):
        return "Uint8Array"
    return "object"


def invalid_type(expected: str, value: Any) -> PydanticCustomError:
    return PydanticCustomError(
        INVALID_TYPE,
        "Invalid input: expected {expected}, received {received}",
        {"expected": expected, "received": js_type_name(value)},
    )


def _join_values(values: tuple[str, ...]) -> str:
    return "|".join(f'"{v}"' for v in values)


def _is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any double: not a JavaScript number
        return False


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _base_type(source: Any) -> Any:
    """Strip `None` from `X | None`."""
    if get_origin(source) in (Union, types.UnionType):
        args = [a for a in get_args(source) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return source


@dataclass(frozen=True)
class Js:
    """Pydantic metadata: validate the annotated leaf type with zod's rules and messages."""

    ge: float | None = None
    le: float | None = None
    min_length: int | None = None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        base = _base_type(source)
        fn: Callable[[Any], Any]
        if base is str:
            fn = self._string
        elif base is bool:
            fn = self._boolean
        elif base in (float, int):
            fn = self._number
        elif get_origin(base) is Literal:
            fn = self._enum(tuple(get_args(base)))
        else:  # pragma: no cover - a programming error in the models
            raise TypeError(f"Js() does not support {source!r}")
        return core_schema.no_info_plain_validator_function(
            fn, metadata={_JSON_KEY: self.json_schema(source)}
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        metadata = schema.get("metadata") or {}
        return dict(metadata.get(_JSON_KEY, {}))

    # validators -------------------------------------------------------------------------------

    def _string(self, value: Any) -> str:
        if not isinstance(value, str):
            raise invalid_type("string", value)
        if self.min_length is not None and _utf16_len(value) < self.min_length:
            raise PydanticCustomError(
                TOO_SMALL,
                "Too small: expected string to have >={minimum} characters",
                {"minimum": self.min_length},
            )
        return value

    @staticmethod
    def _boolean(value: Any) -> bool:
        if not isinstance(value, bool):
            raise invalid_type("boolean", value)
        return value

    def _number(self, value: Any) -> float:
        if not _is_number(value):
            raise invalid_type("number", value)
        if self.ge is not None and value < self.ge:
            raise PydanticCustomError(
                TOO_SMALL,
                "Too small: expected number to be >={minimum}",
                {"minimum": js_number_to_string(self.ge)},
            )
        if self.le is not None and value > self.le:
            raise PydanticCustomError(
                TOO_BIG,
                "Too big: expected number to be <={maximum}",
                {"maximum": js_number_to_string(self.le)},
            )
        return float(value) if isinstance(value, float) else value

    @staticmethod
    def _enum(values: tuple[str, ...]) -> Any:
        allowed = frozenset(values)

        def check(value: Any) -> str:
            if isinstance(value, str) and value in allowed:
                return value
            raise PydanticCustomError(
                INVALID_VALUE, "Invalid option: expected one of {options}", {"options": _join_values(values)}
            )

        return check

    def json_schema(self, source: Any) -> dict[str, Any]:
        """The JSON Schema of the annotated type (draft 2020-12)."""
        base = _base_type(source)
        if base is str:
            out: dict[str, Any] = {"type": "string"}
            if self.min_length is not None:
                out["minLength"] = self.min_length
            return out
        if base is bool:
            return {"type": "boolean"}
        if base in (float, int):
            out = {"type": "number"}
            if self.ge is not None:
                out["minimum"] = self.ge
            if self.le is not None:
                out["maximum"] = self.le
            return out
        return {"type": "string", "enum": list(get_args(base))}
