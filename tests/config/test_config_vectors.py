"""Every row of `parity-vectors/config.jsonl` against `kodiai.config.parse_repo_config`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kodiai.compat.js_yaml import load_yaml
from kodiai.config import RepoConfigError, parse_repo_config
from kodiai.config.guarded import GUARDS, Guard
from kodiai.config.loader import RepoConfigResult
from support.vectors import assert_matches, cases, check_rows

ROWS = cases("config.jsonl", "parse_repo_config")

#: Security over parity (docs/parity.md, "guarded `.kodiai.yml` settings"): the rows where the original's
#: section fallback made a guarded setting *more* permissive than written. In each, the guarded key takes
#: its safe value (`mention.allowedUsers` → nobody, `mention.enabled` / `review.autoApprove` → false) or,
#: when a sibling key broke the section, keeps its valid written restriction. Every other key of these rows,
#: and every key of the other 262 rows, still equals the original's output.
FAIL_CLOSED_ROWS = frozenset(
    {
        "cfg-special-8", "cfg-special-10", "cfg-special-12", "cfg-special-13", "cfg-38", "cfg-45",
        "cfg-60", "cfg-82", "cfg-84", "cfg-86", "cfg-96", "cfg-103", "cfg-111", "cfg-119", "cfg-121",
        "cfg-125", "cfg-134", "cfg-143", "cfg-155", "cfg-170", "cfg-171", "cfg-174", "cfg-177",
        "cfg-180", "cfg-189", "cfg-197", "cfg-212", "cfg-223", "cfg-224", "cfg-239", "cfg-241",
        "cfg-243", "cfg-246", "cfg-253", "cfg-254", "cfg-274", "cfg-283", "cfg-284",
    }
)  # fmt: skip


def test_vector_file_has_every_row() -> None:
    assert len(ROWS) == 300


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    if value is None:
        data.pop(path[-1], None)
    else:
        data[path[-1]] = value


def _explained(guard: Guard, got: Any, row: dict[str, Any], result: RepoConfigResult) -> bool:
    """The fail-closed rule, checked (not recomputed): the safe value of a guard named in its section's
    warning, or a restriction's written value in a section the original reset."""
    warning = next((w for w in result.warnings if w.section == guard.section), None)
    if warning is None:
        return False
    if guard.describe() in warning.failed_closed:
        return bool(got == guard.safe)
    written = _get(load_yaml(row["args"]["yaml"]), guard.target)
    return guard.keep_written and guard.section in row["expected"]["warningSections"] and got == written


def _expected_config(row: dict[str, Any], result: RepoConfigResult) -> dict[str, Any]:
    """The original's config, with the guarded keys of a `FAIL_CLOSED_ROWS` row replaced by ours once the
    difference is the fail-closed rule's."""
    expected: dict[str, Any] = copy.deepcopy(row["expected"]["config"])
    if row["id"] not in FAIL_CLOSED_ROWS:
        return expected
    ours = result.config.model_dump(by_alias=True, exclude_none=True, mode="json")
    changed = [g for g in GUARDS if _get(ours, g.target) != _get(expected, g.target)]
    assert changed, f"{row['id']} is listed as a fail-closed row but matches the original"
    for guard in changed:
        got = _get(ours, guard.target)
        assert _explained(guard, got, row, result), f"{row['id']}: {guard.name} = {got!r} is unexplained"
        _put(expected, guard.target, got)
    return expected


def test_parse_repo_config_vector() -> None:
    check_rows(ROWS, _check)


def _check(row: dict[str, Any]) -> None:
    expected = row["expected"]
    if expected.get("error"):
        with pytest.raises(RepoConfigError, match="YAML parse error"):
            parse_repo_config(row["args"]["yaml"])
        return
    result = parse_repo_config(row["args"]["yaml"])
    assert_matches(
        result.config.model_dump(by_alias=True, exclude_none=True, mode="json"), _expected_config(row, result)
    )
    assert [w.section for w in result.warnings] == expected["warningSections"]
    for warning in result.warnings:
        assert warning.issues, "every warning lists at least one issue"
