"""Load the original's parity vectors from ``../shared/parity-vectors`` and compare results with them."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
VECTORS = SHARED / "parity-vectors"
LOCAL_VECTORS = Path(__file__).resolve().parents[1] / "parity" / "vectors"

_WORDS = re.compile(r"(?<=[a-z0-9])(PRs|PR|WIP)(?=[A-Z]|$)")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """camelCase → snake_case, treating ``PRs``, ``PR`` and ``WIP`` as single words."""
    name = _WORDS.sub(lambda m: "_" + m.group(1).lower(), name)
    return _CAMEL.sub(lambda m: "_" + m.group(1), name).lower()


def snake_keys(value: Any, keep: frozenset[str] | set[str] = frozenset(), _path: str = "") -> Any:
    """Convert every object key to snake_case, except the keys of the data-keyed maps named in ``keep``.

    ``keep`` holds dotted snake_case paths from the root (``""`` is the root itself, list indices are not
    part of a path). The keys of a kept map stay as they are; its values are still converted.
    """
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if _path in keep:
                key, child = k, f"{_path}.*"
            else:
                key = snake(k)
                child = f"{_path}.{key}" if _path else key
            out[key] = snake_keys(v, keep, child)
        return out
    if isinstance(value, list):
        return [snake_keys(v, keep, _path) for v in value]
    return value


def cases(file: str, fn: str | None = None) -> list[dict[str, Any]]:
    """Every row of ``file`` (optionally only those of ``fn``)."""
    rows = []
    with (VECTORS / file).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if fn is None or row["fn"] == fn:
                    rows.append(row)
    return rows


def local_cases(file: str) -> list[dict[str, Any]]:
    """Every row of the project's own vector file ``tests/parity/vectors/<file>`` (same format as ``cases``)."""
    with (LOCAL_VECTORS / file).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [f"{r['fn']}:{r['id']}" for r in rows]


def functions(rows: list[dict[str, Any]]) -> list[str]:
    """The functions ``rows`` cover, in first-row order (a test per function: ``check_rows`` its rows)."""
    return list(dict.fromkeys(r["fn"] for r in rows))


def rows_of(rows: list[dict[str, Any]], fn: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["fn"] == fn]


def check_rows(rows: list[dict[str, Any]], check: Callable[[dict[str, Any]], None], shown: int = 20) -> None:
    """Run ``check`` on every row and fail once, naming each failing row (``fn:id``) and why.

    A test per function rather than per row: each of the ~9,000 one-row tests cost ~6 ms of pytest and
    xdist bookkeeping (setup, report, the controller's scheduling), more than most checks themselves.
    Every row is still checked, a failing row does not hide the next, and the message names each."""
    assert rows, "no rows"
    failures = []
    for row in rows:
        try:
            check(row)
        except (Exception, pytest.fail.Exception) as exc:  # an assertion, pytest.raises' DID NOT RAISE or
            # an error of the function: each is the row's failure
            failures.append(f"{row['fn']}:{row['id']}: {type(exc).__name__}: {exc}")
    listed = "\n".join(failures[:shown]) + (
        f"\n... and {len(failures) - shown} more" if len(failures) > shown else ""
    )
    assert not failures, f"{len(failures)} of {len(rows)} rows fail:\n{listed}"


def dump(value: Any) -> Any:
    """Turn a result into plain JSON-like data (models, dataclasses, sets → sorted lists)."""
    if isinstance(value, BaseModel):
        return dump(value.model_dump())
    if is_dataclass(value) and not isinstance(value, type):
        return dump(asdict(value))
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(dump(v) for v in value)
    return value


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def mismatch(actual: Any, expected: Any, rel: float = 1e-9, path: str = "$") -> str | None:
    """Return a description of the first difference, or None when equal (floats within ``rel``)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected object, got {actual!r}"
        if set(actual) != set(expected):
            return f"{path}: keys differ: got {sorted(actual)} expected {sorted(expected)}"
        for k in expected:
            d = mismatch(actual[k], expected[k], rel, f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(expected, list):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"{path}: expected list of {len(expected)}, got {actual!r}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            d = mismatch(a, e, rel, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if actual is expected else f"{path}: got {actual!r} expected {expected!r}"
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if isinstance(expected, float) or isinstance(actual, float):
            if math.isclose(actual, expected, rel_tol=rel, abs_tol=0.0) or actual == expected:
                return None
            return f"{path}: got {actual!r} expected {expected!r} (rel {rel})"
        return None if actual == expected else f"{path}: got {actual!r} expected {expected!r}"
    return None if actual == expected else f"{path}: got {actual!r} expected {expected!r}"


def float_for_int(actual: Any, expected: Any, path: str = "$") -> str | None:
    """README §1.6: integers match exactly, so a JS integer must not come back as a Python float."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            if key in actual and (hit := float_for_int(actual[key], expected[key], f"{path}.{key}")):
                return hit
    elif isinstance(expected, list) and isinstance(actual, list):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if hit := float_for_int(a, e, f"{path}[{i}]"):
                return hit
    elif isinstance(expected, int) and not isinstance(expected, bool) and isinstance(actual, float):
        return f"{path}: {actual!r} is a float where JS printed the integer {expected}"
    return None


def assert_matches(actual: Any, expected: Any, rel: float = 1e-9, drop_none: bool = True) -> None:
    a, e = dump(actual), expected
    if drop_none:
        a, e = _drop_none(a), _drop_none(e)
    d = mismatch(a, e, rel)
    assert d is None, d


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
