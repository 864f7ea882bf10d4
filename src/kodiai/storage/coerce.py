"""Accept a store's own record model, another pydantic model with the same field names, or a mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

RecordLike = BaseModel | Mapping[str, Any]


def as_record(model: type[M], entry: RecordLike) -> M:
    """``entry`` validated as ``model`` (raises ``pydantic.ValidationError`` when a required field is missing)."""
    if isinstance(entry, model):
        return entry
    data = entry.model_dump() if isinstance(entry, BaseModel) else dict(entry)
    return model.model_validate(data)
