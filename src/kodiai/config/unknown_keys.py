"""Keys in a `.kodiai.yml` that no setting reads, with the closest known key (an advisory only).

Parsing ignores unknown keys, as the original does, so a typo (`reveiw:`, `maxComment:`) silently keeps the
default. `kodiai config validate` reports them; the parsed config is unchanged.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from kodiai.config.base import ConfigModel
from kodiai.config.models import RepoConfig


class UnknownKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    """Dotted path of the key (``mention.foo``, ``review.pathInstructions[0].pathz``)."""
    suggestion: str | None = None
    """The closest key that section knows, when one is close enough."""

    def message(self) -> str:
        hint = f": did you mean `{self.suggestion}`?" if self.suggestion else ": no setting reads it"
        return f"unknown key `{self.path}`{hint}"


def _models(annotation: Any) -> Iterator[tuple[type[ConfigModel], bool]]:
    """The config models an annotation can hold, each with whether it sits inside a list."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from _models(get_args(annotation)[0])
    elif origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            yield from _models(arg)
    elif origin in (list, tuple):
        for arg in get_args(annotation):
            yield from ((model, True) for model, _ in _models(arg))
    elif isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        yield annotation, False


def _walk(model: type[ConfigModel], document: dict[Any, Any], prefix: str) -> Iterator[UnknownKey]:
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    known = set(fields) | set(model.model_fields)
    for key, value in document.items():
        path = f"{prefix}{key}"
        info = (fields.get(key) or model.model_fields.get(key)) if isinstance(key, str) else None
        if key not in known or info is None:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            yield UnknownKey(path=path, suggestion=f"{prefix}{close[0]}" if close else None)
            continue
        for nested, in_list in _models(info.annotation):
            if in_list and isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, dict):
                        yield from _walk(nested, item, f"{path}[{index}].")
                break
            if not in_list and isinstance(value, dict):
                yield from _walk(nested, value, f"{path}.")
                break


def unknown_keys(document: object) -> list[UnknownKey]:
    """Every key of a parsed `.kodiai.yml` document that no setting reads (a non-mapping has none)."""
    if not isinstance(document, dict):
        return []
    return list(_walk(RepoConfig, document, ""))
