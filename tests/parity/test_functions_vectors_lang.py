"""functions.jsonl: classify_file_language, every row."""

from __future__ import annotations

from kodiai.review.diff_analysis import classify_file_language
from support.vectors import cases, check_rows

ROWS = cases("functions.jsonl", "classify_file_language")


def test_row_count() -> None:
    assert len(ROWS) == 300


def test_classify_file_language() -> None:
    def check(row: dict) -> None:
        assert classify_file_language(row["args"]["path"]) == row["expected"]

    check_rows(ROWS, check)
