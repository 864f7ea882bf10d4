"""The base class and shared value types of the `.kodiai.yml` models."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, model_validator
from pydantic.alias_generators import to_camel

from kodiai.compat.yaml_scalars import YamlTimestamp
from kodiai.compat.zod_types import INVALID_UNION, UNDEFINED, Js

Severity = Literal["critical", "major", "medium", "minor"]
FocusArea = Literal["security", "correctness", "performance", "style", "documentation"]
ReviewMode = Literal["standard", "enhanced"]
ReviewProfile = Literal["strict", "balanced", "minimal"]

Str = Annotated[str, Js()]
NonEmptyStr = Annotated[str, Js(min_length=1)]
OptStr = Annotated[str | None, Js()]
Bool = Annotated[bool, Js()]
SeverityValue = Annotated[Severity, Js()]
FocusAreaValue = Annotated[FocusArea, Js()]

#: Marks in an error location that name the branch a union took (`issues.py` removes them).
UNION_STRING = "§string"
UNION_OBJECT = "§object"
UNION_ARRAY = "§array"
UNION_TAGS = frozenset({UNION_STRING, UNION_OBJECT, UNION_ARRAY})


def string_or(other_tag: str) -> Any:
    """A callable discriminator for `str | <object or array>` unions (zod `z.union`)."""
    wanted = dict if other_tag == UNION_OBJECT else list

    def pick(value: Any) -> str | None:
        if isinstance(value, str):
            return UNION_STRING
        if isinstance(value, wanted) or (wanted is dict and isinstance(value, BaseModel)):
            return other_tag
        return None

    return Discriminator(pick, custom_error_type=INVALID_UNION, custom_error_message="Invalid input")


def required() -> Any:
    """Default for a required key: validating `UNDEFINED` gives zod's "received undefined" issue."""
    return UNDEFINED


class ConfigModel(BaseModel):
    """Strict, alias-aware model: camelCase keys in YAML, snake_case in Python, unknown keys dropped."""

    model_config = ConfigDict(
        strict=True,
        populate_by_name=True,
        alias_generator=to_camel,
        extra="ignore",
        validate_default=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _js_object(cls, data: Any) -> Any:
        # zod's z.object accepts any non-array object: a Date or a Uint8Array has none of the keys,
        # so it validates as an empty object (all defaults).
        if isinstance(data, (YamlTimestamp, bytes)):
            return {}
        return data


__all__ = [
    "UNION_ARRAY",
    "UNION_OBJECT",
    "UNION_STRING",
    "UNION_TAGS",
    "Bool",
    "ConfigModel",
    "FocusArea",
    "FocusAreaValue",
    "NonEmptyStr",
    "OptStr",
    "ReviewMode",
    "ReviewProfile",
    "Severity",
    "SeverityValue",
    "Str",
    "Tag",
    "required",
    "string_or",
]
