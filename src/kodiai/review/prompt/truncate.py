"""Deterministic truncation helpers used by the review prompt (behaviour R2.32)."""

from __future__ import annotations

from kodiai.compat.js import js_trim_end, utf16_len, utf16_slice

TRUNCATED_MARKER = "...[truncated]"
BUDGET_MARKER = "...(truncated)"


def truncate_deterministic(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_chars`` UTF-16 units, drop trailing whitespace, then add a truncation line.

    Returns ``(text, was_truncated)``; text at or under the limit is returned unchanged.
    """
    if utf16_len(text) <= max_chars:
        return text, False
    return f"{js_trim_end(utf16_slice(text, 0, max_chars))}\n{TRUNCATED_MARKER}", True


def truncate_to_char_budget(text: str, max_chars: int) -> str:
    """Cut ``text`` at the last newline before ``max_chars`` and add ``...(truncated)``.

    When there is no newline inside the budget the text is cut hard at ``max_chars``.
    """
    if utf16_len(text) <= max_chars:
        return text
    head = utf16_slice(text, 0, max_chars)
    cut = head.rfind("\n")
    if cut > 0:
        head = head[:cut]
    return f"{head}\n{BUDGET_MARKER}"
