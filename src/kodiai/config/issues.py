"""Turn pydantic validation errors into the original's issue strings ("maxComments: Too big: ...").

Leaf types already carry zod's messages (`js_types`). This module adds the path (joined with `.`,
relative to the section), maps pydantic's own container errors (not a list / not an object) to zod's
wording, and applies zod's union rule: when the branch a value took has an aborting issue (a type error),
zod reports a single "Invalid input" at the union's path instead of the branch's issues.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from kodiai.compat.zod_types import CONTINUING, INVALID_TYPE, INVALID_UNION, js_type_name
from kodiai.config.base import UNION_TAGS

_CONTAINER_TYPES = {
    "list_type": "array",
    "model_type": "object",
    "model_attributes_type": "object",
    "dict_type": "object",
}


def _kind_and_message(err: ErrorDetails) -> tuple[str, str]:
    kind = err["type"]
    if kind in _CONTAINER_TYPES:
        received = js_type_name(err.get("input"))
        return INVALID_TYPE, f"Invalid input: expected {_CONTAINER_TYPES[kind]}, received {received}"
    return kind, err["msg"]


def _split_union(loc: tuple[int | str, ...]) -> int | None:
    for i, part in enumerate(loc):
        if isinstance(part, str) and part in UNION_TAGS:
            return i
    return None


def issue_strings(exc: ValidationError, strip: int = 1) -> list[str]:
    """The issues of `exc` as "<path>: <message>" strings, the first `strip` path parts removed."""
    out: list[tuple[tuple[Any, ...], str]] = []
    union_groups: dict[tuple[Any, ...], list[tuple[str, str, tuple[Any, ...]]]] = {}
    order: list[tuple[str, tuple[Any, ...]]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        kind, message = _kind_and_message(err)
        cut = _split_union(loc)
        if cut is None:
            order.append(("plain", loc))
            out.append((loc, message))
            continue
        prefix = loc[:cut]
        if prefix not in union_groups:
            union_groups[prefix] = []
            order.append(("union", prefix))
        inner = tuple(p for p in loc[cut:] if not (isinstance(p, str) and p in UNION_TAGS))
        union_groups[prefix].append((kind, message, prefix + inner))
    plain = iter(out)
    result: list[tuple[tuple[Any, ...], str]] = []
    for what, key in order:
        if what == "plain":
            result.append(next(plain))
            continue
        group = union_groups[key]
        if any(kind not in CONTINUING for kind, _, _ in group):
            result.append((key, "Invalid input"))
        else:
            result.extend((loc, message) for _, message, loc in group)
    return [f"{'.'.join(str(p) for p in loc[strip:])}: {message}" for loc, message in result]


__all__ = ["INVALID_UNION", "issue_strings"]
