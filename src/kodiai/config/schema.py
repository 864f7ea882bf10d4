"""JSON Schema (draft 2020-12) of `.kodiai.yml`, for editors (e.g. the YAML language server).

Generated from the pydantic models with the camelCase keys, descriptions, defaults and inclusive bounds.
Optional keys are not nullable (YAML `null` fails every typed field at runtime), required keys of list
items (`pattern`, `path`, `instructions`, `minSeverity`, `language`) are listed as required, and unknown
keys stay allowed because the loader drops them silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, NoDefault
from pydantic_core import core_schema

from kodiai.config.base import required
from kodiai.config.models import RepoConfig

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _ConfigSchemaGenerator(GenerateJsonSchema):
    """Pydantic's generator with the adjustments above."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if factory is not None:
            if factory is required:
                return NoDefault
            value = factory()  # type: ignore[call-arg]
            if isinstance(value, BaseModel):
                return value.model_dump(by_alias=True, exclude_none=True, mode="json")
            return value
        default = schema.get("default", NoDefault)
        return NoDefault if default is None else default

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        inner = field["schema"]
        if inner["type"] == "default" and inner.get("default_factory") is required:
            return True
        return super().field_is_required(field, total)

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def repo_config_json_schema() -> dict[str, Any]:
    """The JSON Schema of `.kodiai.yml`."""
    body = RepoConfig.model_json_schema(by_alias=True, schema_generator=_ConfigSchemaGenerator)
    body.pop("title", None)
    _close_objects(body)
    return {
        "$schema": DIALECT,
        "title": ".kodiai.yml",
        **body,
        "description": "Kodiai per-repository configuration (.kodiai.yml). Kodiai ignores unknown keys; this "
        "schema marks them as errors so an editor catches a typo that would silently keep a default.",
    }


def _close_objects(node: Any) -> None:
    """``additionalProperties: false`` on every settings object (free-form maps keep theirs)."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close_objects(value)
    elif isinstance(node, list):
        for item in node:
            _close_objects(item)
