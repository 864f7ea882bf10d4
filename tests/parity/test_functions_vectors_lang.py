"""functions.jsonl: classify_file_language, every row."""

from __future__ import annotations

import pytest

from kodiai.review.diff_analysis import classify_file_language
from support.vectors import cases, ids

ROWS = cases("functions.jsonl", "classify_file_language")


def test_row_count() -> None:
    assert len(ROWS) == 300


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_classify_file_language(row: dict) -> None:
    assert classify_file_language(row["args"]["path"]) == row["expected"]
