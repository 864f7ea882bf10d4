"""functions.jsonl rows of the text helpers: every row of sanitize_content and sanitize_outgoing_mentions."""

from __future__ import annotations

import pytest

from kodiai.text.sanitizer import sanitize_content, sanitize_outgoing_mentions
from support.vectors import cases, ids

CONTENT = cases("functions.jsonl", "sanitize_content")
MENTIONS = cases("functions.jsonl", "sanitize_outgoing_mentions")


def test_row_counts() -> None:
    assert (len(CONTENT), len(MENTIONS)) == (200, 100)


@pytest.mark.parametrize("row", CONTENT, ids=ids(CONTENT))
def test_sanitize_content_vectors(row: dict) -> None:
    assert sanitize_content(row["args"]["content"]) == row["expected"]


@pytest.mark.parametrize("row", MENTIONS, ids=ids(MENTIONS))
def test_sanitize_outgoing_mentions_vectors(row: dict) -> None:
    assert sanitize_outgoing_mentions(row["args"]["body"], row["args"]["handles"]) == row["expected"]
