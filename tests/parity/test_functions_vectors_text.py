"""functions.jsonl rows of the text helpers: every row of sanitize_content and sanitize_outgoing_mentions."""

from __future__ import annotations

from kodiai.text.sanitizer import sanitize_content, sanitize_outgoing_mentions
from support.vectors import cases, check_rows

CONTENT = cases("functions.jsonl", "sanitize_content")
MENTIONS = cases("functions.jsonl", "sanitize_outgoing_mentions")


def test_row_counts() -> None:
    assert (len(CONTENT), len(MENTIONS)) == (200, 100)


def test_sanitize_content_vectors() -> None:
    def check(row: dict) -> None:
        assert sanitize_content(row["args"]["content"]) == row["expected"]

    check_rows(CONTENT, check)


def test_sanitize_outgoing_mentions_vectors() -> None:
    def check(row: dict) -> None:
        assert sanitize_outgoing_mentions(row["args"]["body"], row["args"]["handles"]) == row["expected"]

    check_rows(MENTIONS, check)
