"""Every row of `parity-vectors/config.jsonl` against `kodiai.config.parse_repo_config`."""

from __future__ import annotations

from typing import Any

import pytest

from kodiai.config import RepoConfigError, parse_repo_config
from support.vectors import assert_matches, cases, ids

ROWS = cases("config.jsonl", "parse_repo_config")


def test_vector_file_has_every_row() -> None:
    assert len(ROWS) == 300


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_parse_repo_config_vector(row: dict[str, Any]) -> None:
    expected = row["expected"]
    if expected.get("error"):
        with pytest.raises(RepoConfigError, match="YAML parse error"):
            parse_repo_config(row["args"]["yaml"])
        return
    result = parse_repo_config(row["args"]["yaml"])
    assert_matches(
        result.config.model_dump(by_alias=True, exclude_none=True, mode="json"), expected["config"]
    )
    assert [w.section for w in result.warnings] == expected["warningSections"]
    for warning in result.warnings:
        assert warning.issues, "every warning lists at least one issue"
