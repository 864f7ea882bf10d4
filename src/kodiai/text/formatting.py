"""Markdown helpers for posted replies (behaviour R2.20, behaviour E3.19)."""

from __future__ import annotations

from kodiai.compat.js import js_trim_start, utf16_len


def wrap_in_details(body: str, summary_text: str | None = None) -> str:
    """Fold ``body`` into a ``<details>`` block unless it already starts with one.

    "Already wrapped" means the body, after JS ``trimStart`` (so a leading U+FEFF counts as whitespace, a
    leading U+0085 does not), starts with exactly ``<details>``. The default summary counts the body's
    length in UTF-16 code units, as ``String.length`` does. An empty ``summary_text`` is used as given;
    only ``None`` selects the default.
    """
    if js_trim_start(body).startswith("<details>"):
        return body
    summary = summary_text if summary_text is not None else f"Kodiai response ({utf16_len(body)} characters)"
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"
